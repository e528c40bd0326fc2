//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/examples/backupworker"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// slowPath is a TCP proxy on 127.0.0.1 in front of a server that holds
// back, from the moment a client sends a request line starting with
// marker, everything that client sends on that connection until release
// is called: a congested path that delivers a request after its sender
// froze. held is closed when it holds a whole request, answered when the
// server's first bytes after the release come back.
type slowPath struct {
	ln       net.Listener
	upstream string
	marker   []byte

	once, wholeOnce, answeredOnce sync.Once
	held                          chan struct{}
	released                      chan struct{}
	answered                      chan struct{}
	wg                            sync.WaitGroup
}

func startSlowPath(t *testing.T, upstream, marker string) *slowPath {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowPath{ln: ln, upstream: upstream, marker: []byte(marker),
		held: make(chan struct{}), released: make(chan struct{}), answered: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		p.release()
		ln.Close()
		p.wg.Wait()
	})
	return p
}

// whole reports whether req holds a whole HTTP request with a
// Content-Length body: what the sender has sent before it waits for the
// answer.
func whole(req []byte) bool {
	head, body, ok := bytes.Cut(req, []byte("\r\n\r\n"))
	if !ok {
		return false
	}
	for _, line := range strings.Split(string(head), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return err == nil && len(body) >= n
		}
	}
	return false
}

func (p *slowPath) release() {
	select {
	case <-p.released:
	default:
		close(p.released)
	}
}

func (p *slowPath) serve(c net.Conn) {
	defer c.Close()
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer s.Close()
	var mu sync.Mutex
	var held []byte
	holding, delivered := false, make(chan struct{})
	go func() { // the server's answers, passed on; the first after the release is noted
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				select {
				case <-delivered:
					p.answeredOnce.Do(func() { close(p.answered) })
				default:
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			mu.Lock()
			if !holding && bytes.Contains(buf[:n], p.marker) {
				p.once.Do(func() {
					holding = true
					go func() {
						<-p.released
						mu.Lock()
						defer mu.Unlock()
						_, _ = s.Write(held)
						held, holding = nil, false
						close(delivered)
					}()
				})
			}
			if holding {
				held = append(held, buf[:n]...)
				if whole(held) {
					p.wholeOnce.Do(func() { close(p.held) })
				}
				mu.Unlock()
			} else {
				mu.Unlock()
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			mu.Lock()
			h := holding
			mu.Unlock()
			if h { // the sender gave up; the path still delivers what it carries
				<-delivered
				select {
				case <-p.answered:
				case <-time.After(10 * time.Second):
				}
			}
			return
		}
	}
}

// TestSIGSTOPpedPutWritesLateMinIO: the late write the lease promises to tell apart,
// made by a real process on real MinIO. Days 1 and 2 of the example
// worker (examples/backupworker) are backed up in time. Then bucketlease
// put takes the lease to write day 3's manifest; its PUT leaves it, the
// path holds it, and the process is frozen (SIGSTOP). Its lease goes
// stale, host-b takes the prefix over, and only then does the path deliver
// the PUT: day 3's manifest lands late, stamped with put's epoch. put is
// woken (SIGCONT). bucketlease list --late names that manifest, and only
// it; the example's restore, run by host-b, restores day 2, and its
// retention removes the late manifest.
//
// The control: MinIO lists no metadata, so a reader that judged by the
// listing alone (the example worker before it judged by Status.Late) would
// have found the manifest in time and kept it as the newest.
func TestSIGSTOPpedPutWritesLateMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucketName := srv.NewBucket(t)
	ctx := context.Background()
	b := minioBucket(t, srv, bucketName)
	const ttl = 3 * time.Second
	acquire := func(id string, wait time.Duration) *lease.Lease {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			l, err := lease.Acquire(ctx, bucket.New(b, "db1"), leaseseam.With(&lease.Options{TTL: ttl, InstanceID: id, Logger: slog.New(slog.DiscardHandler)}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
			if err == nil {
				return l
			}
			if !errors.Is(err, lease.ErrHeld) || time.Now().After(deadline) {
				t.Fatalf("%s: %v", id, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	a := acquire("host-a", 0)
	for day := 1; day <= 2; day++ {
		if err := backupworker.BackupOnce(ctx, a.Bucket(), day, []io.Reader{strings.NewReader("base"), strings.NewReader("day " + string(rune('0'+day)))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	key := "manifests/00000003.json"
	path := startSlowPath(t, srv.Addr, "PUT /"+bucketName+"/db1/"+key)
	day3, _ := json.Marshal(backupworker.Manifest{Seq: 3, Chunks: []string{"chunks/late"}})
	put := exec.Command(binary, "put", "minio://"+path.ln.Addr().String()+"/"+bucketName+"/db1?tls=false", key,
		"--ttl", ttl.String(), "--instance-id", "host-p")
	put.Env = append(cleanEnv(), minioEnv(t, srv)...)
	put.Stdin = bytes.NewReader(day3)
	var putOut, putErr bytes.Buffer
	put.Stdout, put.Stderr = &putOut, &putErr
	if err := put.Start(); err != nil {
		t.Fatal(err)
	}
	defer put.Process.Kill()
	select {
	case <-path.held:
	case <-time.After(30 * time.Second):
		put.Process.Kill()
		put.Wait()
		t.Fatalf("put's PUT of %s never came: %s", key, putErr.String())
	}
	if err := put.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	next := acquire("host-b", 30*time.Second) // put's lease goes stale: TTL and a second of MinIO's dates
	defer next.Release(ctx)
	keepCtx, stopKeep := context.WithCancel(ctx)
	kept := make(chan error, 1)
	go func() { kept <- next.Keep(keepCtx) }()
	defer func() { stopKeep(); <-kept }()
	time.Sleep(2 * time.Second) // past host-b's beginning, on MinIO's clock of whole seconds
	path.release()
	select {
	case <-path.answered:
	case <-time.After(30 * time.Second):
		put.Process.Signal(syscall.SIGCONT)
		put.Wait()
		t.Fatalf("MinIO never answered the late PUT; put said: %s%s", putOut.String(), putErr.String())
	}
	if err := put.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	_ = put.Wait()
	// put's request was answered after its fence: it says stored, and
	// perhaps late (exit 11), never a plain success, nor "nothing was
	// written" (woken, it may learn of its fence before it reads the
	// answer waiting for it; it then reads the key back).
	if code := put.ProcessState.ExitCode(); code != exitcode.StoredLate || strings.TrimSpace(putOut.String()) == "" || !strings.Contains(putErr.String(), "late") {
		t.Errorf("put, woken after its late write landed: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, the version on stdout and why on stderr",
			code, putOut.String(), putErr.String(), exitcode.StoredLate)
	}
	t.Logf("put, woken:\n%s", putErr.String())

	rc, at, err := b.Get(ctx, "db1/"+key, driver.GetOptions{Metadata: true})
	if err != nil {
		t.Fatalf("the late write did not land: %v", err)
	}
	rc.Close()
	md := at.Metadata
	st, ok := admin.StampOf(md)
	if !ok || st.Epoch >= next.Epoch() || st.Instance != "host-p" {
		t.Fatalf("the late manifest carries %v (stamp %+v, %v); want put's, host-p, of an epoch under host-b's %d", md, st, ok, next.Epoch())
	}

	out, errOut, code := runCLI(t, minioEnv(t, srv), "list", "minio://"+srv.Addr+"/"+bucketName+"/db1?tls=false", "--late")
	noSecret(t, srv, out, errOut)
	if code != exitcode.Late || !strings.Contains(out, key) || !strings.Contains(out, "host-p") || strings.Count(strings.TrimSpace(out), "\n") > 1 {
		t.Fatalf("list --late: exit %d\n%s%s\nwant %s by host-p alone, exit %d", code, out, errOut, key, exitcode.Late)
	}
	t.Logf("list --late:\n%s", out)

	status, err := admin.Inspect(ctx, bucket.New(b, "db1"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The control: by the listing alone, the late manifest looks in time.
	for o, err := range next.Bucket().Driver().List(ctx, "manifests/") {
		if err != nil {
			t.Fatal(err)
		}
		if _, stamped := admin.StampOf(o.Metadata); o.Key == key && stamped {
			t.Logf("MinIO listed %s with its stamp: the control (a judge by the listing alone) does not apply", key)
		} else if o.Key == key {
			t.Logf("control: MinIO lists %s without metadata, so a judge by the listing alone finds it in time", key)
		}
	}
	got, err := backupworker.RestoreLatest(ctx, next.Bucket(), status)
	if err != nil || got.Seq != 2 {
		t.Fatalf("restore: %+v, %v; want day 2, the newest restore point written in time", got, err)
	}
	if err := backupworker.Retain(ctx, next.Bucket(), status, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "db1/"+key, driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Errorf("retention kept the late %s: %v", key, err)
	}
	for _, k := range []string{"db1/manifests/00000001.json", "db1/manifests/00000002.json"} {
		if _, _, err := b.Get(ctx, k, driver.GetOptions{}); err != nil {
			t.Errorf("retention removed %s, written in time: %v", k, err)
		}
	}
}
