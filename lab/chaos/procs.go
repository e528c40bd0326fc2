//go:build linux

package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The worker processes: starting, signalling, restarting and stopping them.

type proc struct {
	name string
	id   string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) signal(s syscall.Signal) {
	if p != nil && p.alive() {
		_ = p.cmd.Process.Signal(s)
	}
}

// wait waits up to d for the process to exit, then kills it and waits.
func (p *proc) wait(d time.Duration) {
	if p == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
}

type slot struct {
	i      int
	proxy  *Proxy
	id     string
	gen    int // instance ids given out
	inc    int // processes started
	skew   time.Duration
	offset time.Duration // the wall clock wrong from the start (WorkerConfig.ClockOffset)
	cur    *proc
	paused bool
	down   bool
	busy   bool // a fault is active; new actions skip the slot
	token  int  // bumped by every action and heal; follow-ups check it
	cli    bool // runs bucketlease hold
}

// workerEnv is the harness's environment without any credentials or
// emulator settings, plus the backend's for the proxy at addr.
func (r *runner) workerEnv(addr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AWS_"), strings.HasPrefix(k, "AZURE_"), strings.HasPrefix(k, "MINIO_"),
			strings.HasPrefix(k, "GOOGLE_"), strings.HasPrefix(k, "BUCKETLEASE_"), strings.HasPrefix(k, "MUSHROOMDB_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, r.be.workerEnv(addr)...)
}

func (r *runner) spawn(name, id string, px *Proxy, skew, offset time.Duration) (*proc, error) {
	addr := ""
	if px != nil {
		addr = px.Addr()
	}
	logPath := filepath.Join(r.cfg.Dir, name+".jsonl")
	args := []string{"-proc", name, "-id", id, "-ttl", r.cfg.TTL.String(), "-skew", skew.String(), "-log", logPath,
		"-max-run", (r.cfg.Duration + 10*r.cfg.TTL + 2*time.Minute).String()}
	if offset != 0 {
		args = append(args, "-clock-offset", offset.String())
	}
	for i := range r.cfg.Leases {
		args = append(args, "-url", r.be.workerURL(addr, i))
	}
	switch r.cfg.Control {
	case ControlSkewBeyond:
		args = append(args, "-no-service-time") // else the lease refuses the skewed clock (ErrClock)
	case ControlFenceDisabled:
		args = append(args, "-no-fence")
	case ControlLieRefusal:
		args = append(args, "-lie-refusal")
	case ControlStreamUnfenced:
		args = append(args, "-stream-unfenced")
	}
	if r.cfg.Control != "" && r.cfg.Control != ControlStreamUnfenced {
		args = append(args, "-calm-streams")
	}
	return r.startProc(name, id, logPath, addr, exec.Command(r.cfg.WorkerBin, args...))
}

// startProc starts cmd with the worker environment for the proxy at addr and
// its output in DIR/name.out.
func (r *runner) startProc(name, id, logPath, addr string, cmd *exec.Cmd) (*proc, error) {
	cmd.Env = r.workerEnv(addr)
	outPath := filepath.Join(r.cfg.Dir, name+".out")
	r.outs = append(r.outs, outPath)
	out, err := os.Create(outPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	p := &proc{name: name, id: id, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); out.Close(); close(p.done) }()
	r.procs++
	r.logs = append(r.logs, logPath)
	return p, nil
}

// supervise restarts, with the same id, a process that exited on its own
// (bucketlease hold exits when the lease ends under its command), as a
// service manager would.
func (r *runner) supervise() {
	for _, s := range r.slots {
		if !s.busy && !s.down && s.cur != nil && !s.cur.alive() {
			name := s.cur.name
			r.restart(s, false)
			r.note(Action{Kind: "supervise", Slot: s.i}, "%s had exited; started %s", name, s.cur.name)
		}
	}
}

// spawnCLI starts bucketlease hold --wait on p0 with chaosworker -child as
// its command.
func (r *runner) spawnCLI(name, id string, px *Proxy) (*proc, error) {
	addr := ""
	if px != nil {
		addr = px.Addr()
	}
	logPath := filepath.Join(r.cfg.Dir, name+".jsonl")
	u := r.be.workerURL(addr, 0)
	args := []string{"hold", u, "--wait", "--ttl", r.cfg.TTL.String(), "--instance-id", id, "--grace", (r.cfg.TTL / 10).String(),
		"--json", "--events", filepath.Join(r.cfg.Dir, name+".events"), "--",
		r.cfg.WorkerBin, "-child", "-proc", name, "-ttl", r.cfg.TTL.String(), "-log", logPath, "-url", u,
		"-max-run", (r.cfg.Duration + 10*r.cfg.TTL + 2*time.Minute).String()}
	return r.startProc(name, id, logPath, addr, exec.Command(r.cfg.CLIBin, args...))
}

func (r *runner) startSlot(s *slot) error {
	s.inc++
	name := fmt.Sprintf("w%d.%d", s.i, s.inc)
	var p *proc
	var err error
	if s.cli {
		p, err = r.spawnCLI(name, s.id, s.proxy)
	} else {
		p, err = r.spawn(name, s.id, s.proxy, s.skew, s.offset)
	}
	if err != nil {
		return err
	}
	s.cur, s.down, s.paused = p, false, false
	return nil
}

// restart starts the slot again once its process has exited, with a new
// instance id if newID.
func (r *runner) restart(s *slot, newID bool) {
	if s.cur != nil {
		s.cur.signal(syscall.SIGCONT)
		s.cur.wait(3*r.cfg.TTL + 5*time.Second)
	}
	if newID {
		s.gen++
		s.id = fmt.Sprintf("w%d-g%d-%x", s.i, s.gen, r.cfg.Seed&0xffff)
	}
	if err := r.startSlot(s); err != nil {
		r.note(Action{Kind: "restart", Slot: s.i}, "failed: %v", err)
	}
}

// stopAll terminates every process (they release) and waits for them.
func (r *runner) stopAll() {
	r.closed = true
	var all []*proc
	for _, s := range r.slots {
		if s.cur != nil {
			all = append(all, s.cur)
		}
	}
	all = append(all, r.dups...)
	for _, p := range all {
		p.signal(syscall.SIGCONT)
		p.signal(syscall.SIGTERM)
	}
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.wait(3*r.cfg.TTL + 10*time.Second) }()
	}
	wg.Wait()
}

// shutdown kills whatever still runs and closes the proxies.
func (r *runner) shutdown() {
	for _, s := range r.slots {
		if s.cur != nil && s.cur.alive() {
			s.cur.signal(syscall.SIGCONT)
			s.cur.signal(syscall.SIGKILL)
			<-s.cur.done
		}
	}
	for _, d := range r.dups {
		if d.alive() {
			d.signal(syscall.SIGCONT)
			d.signal(syscall.SIGKILL)
			<-d.done
		}
	}
	for _, px := range r.allPx {
		_ = px.Close()
	}
}
