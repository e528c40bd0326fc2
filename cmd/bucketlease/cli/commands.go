package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/demo"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// env is what a command may touch of the process, so that tests can run
// commands in-process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// self is this program, which hold runs as its watchdog; "" means
	// os.Executable.
	self string
}

// A command is one subcommand: its flags and what it does.
type command struct {
	name    string
	args    string // the synopsis after the name
	summary string // one line for the command list
	help    string // the full description with examples
	// setup declares the command's flags on fs and returns the function
	// that runs it with the arguments.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command with its arguments; parse them with parseArgs or
// oneURL on the FlagSet given to setup.
type runFunc func(ctx context.Context, e *env, args []string) error

// newFlagSet returns the command's FlagSet with its flags declared, and the
// function that runs it.
func (c *command) newFlagSet(out io.Writer) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseArgs returns the flag package's error, for stderr or --json
	fs.Usage = func() {}     // -h is handled by parseArgs; errors say what is wrong
	return fs, c.setup(fs)
}

// commands returns the subcommands in the order help lists them.
func commands() []*command {
	return []*command{demoCommand, holdCommand, putCommand, getCommand, verifyCommand, showCommand, listCommand, probeCommand, breakCommand, pruneCommand, versionCommand}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	err := dispatch(ctx, e, args)
	code, show := exitcode.Of(err)
	if show {
		fmt.Fprintf(e.stderr, "bucketlease: %s\n", term.Safe(err.Error()))
	}
	return code
}

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, mainHelp())
		return exitcode.With(exitcode.Usage, nil)
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(e, rest)
	case "--version", "-version":
		name = "version"
	}
	c := findCommand(name)
	if c == nil {
		return exitcode.Usagef("unknown command %q; the commands are %s", name, strings.Join(commandNames(), ", "))
	}
	fs, runner := c.newFlagSet(e.stderr)
	err := runner(ctx, e, rest)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, commandHelp(c, fs))
		return nil
	}
	return err
}

func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// runHelp prints the main help, or one command's.
func runHelp(e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stdout, mainHelp())
		return nil
	}
	c := findCommand(args[0])
	if c == nil {
		return exitcode.Usagef("no help for %q; the commands are %s", args[0], strings.Join(commandNames(), ", "))
	}
	fs, _ := c.newFlagSet(e.stderr)
	fmt.Fprint(e.stdout, commandHelp(c, fs))
	return nil
}

// commandHelp renders a command's help with the flags declared on fs.
func commandHelp(c *command, fs *flag.FlagSet) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Usage: %s\n\n%s\n", strings.TrimSpace("bucketlease "+c.name+" "+c.args), strings.TrimSpace(c.help))
	if flags := flagsHelp(fs); flags != "" {
		sb.WriteString("\nFlags:\n")
		sb.WriteString(flags)
	}
	sb.WriteString("\nRun \"bucketlease help\" for URL schemes, credentials and exit codes.\n")
	return sb.String()
}

// flagAliases are short flags listed with their long form: one entry,
// "-v, --verbose".
var flagAliases = map[string]string{"v": "verbose", "E": "conflict-exit"}

// flagsHelp lists fs's flags as the usage lines and docs spell them: two
// dashes ("--ttl D"), one entry for a short flag and its long form.
func flagsHelp(fs *flag.FlagSet) string {
	short := map[string]string{}
	for s, l := range flagAliases {
		if fs.Lookup(s) != nil && fs.Lookup(l) != nil {
			short[l] = s
		}
	}
	var sb strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		if l, ok := flagAliases[f.Name]; ok && short[l] == f.Name {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		sb.WriteString("  ")
		if s, ok := short[f.Name]; ok {
			sb.WriteString("-" + s + ", ")
		}
		sb.WriteString("--" + f.Name)
		if name != "" {
			sb.WriteString(" " + valueName(name))
		}
		sb.WriteString("\n        " + usage)
		switch f.DefValue {
		case "", "0", "0s", "false":
		default:
			fmt.Fprintf(&sb, " (default %s)", f.DefValue)
		}
		sb.WriteString("\n")
	})
	return sb.String()
}

// valueName is the placeholder of a flag's value in the help: D for a
// duration, N for a number, S for a string.
func valueName(typ string) string {
	switch typ {
	case "duration":
		return "D"
	case "int", "uint", "int64", "uint64", "float":
		return "N"
	default:
		return "S"
	}
}

func mainHelp() string {
	var sb strings.Builder
	sb.WriteString(`bucketlease: the advisory single-writer lease ({prefix}/LEASE) on an object-store prefix.

Usage: bucketlease COMMAND [ARGS] [FLAGS]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(&sb, "  %-7s %s\n", c.name, c.summary)
	}
	sb.WriteString(`  help    "bucketlease help COMMAND" (or "bucketlease COMMAND -h") shows a command's flags and examples

Start with "bucketlease demo": it shows in a second what the lease does.

`)
	sb.WriteString(urlHelp())
	sb.WriteString("\n")
	sb.WriteString(exitCodesHelp)
	return sb.String()
}

// parseArgs parses the flags in args wherever they stand among the
// positional arguments (Go's flag package stops at the first positional
// one), and returns the positional arguments and the words after "--".
func parseArgs(fs *flag.FlagSet, args []string) (positional, after []string, err error) {
	if i := slices.Index(args, "--"); i >= 0 {
		args, after = args[:i], args[i+1:]
	}
	for range len(args) + 1 { // each round consumes at least one argument
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, err
			}
			return nil, nil, exitcode.With(exitcode.Usage, fmt.Errorf("%w; see \"bucketlease help %s\"", err, fs.Name()))
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	return positional, after, nil
}

// wantsJSON reports whether args ask for --json (or -json, --json=true)
// before any "--": for a usage error met before the flag package got to
// it, the command still answers in JSON.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		if !hasValue {
			return true
		}
		b, err := strconv.ParseBool(value)
		return err == nil && b
	}
	return false
}

// parseNoCommand is parseArgs for a command that runs no command of its
// own: words after "--" are a usage error.
func parseNoCommand(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, after, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(after) > 0 {
		return nil, exitcode.Usagef("%s takes no command after --; only hold and put run one", fs.Name())
	}
	return pos, nil
}

// oneLocation parses args, checks that they hold exactly one URL, and
// parses that URL: once, for everything the command does after.
func oneLocation(fs *flag.FlagSet, args []string) (*location.Location, error) {
	pos, err := parseNoCommand(fs, args)
	if err != nil {
		return nil, err
	}
	switch len(pos) {
	case 0:
		return nil, exitcode.Usagef("%s needs a URL, such as file:///var/backups/db1 or s3://bucket/prefix", fs.Name())
	case 1:
		return location.Parse(pos[0])
	default:
		return nil, exitcode.Usagef("%s takes one URL, got %d arguments", fs.Name(), len(pos))
	}
}

// durationValue is a duration flag whose parse error says what to write:
// "--ttl 30" gets "add a unit" rather than the flag package's "parse
// error".
type durationValue struct{ d *time.Duration }

// timeoutFlag declares the --timeout flag of a command that talks to the
// service: a duration that must be positive, refused as a usage error
// (exit 2) otherwise.
func timeoutFlag(fs *flag.FlagSet, value time.Duration, usage string) *time.Duration {
	d := value
	fs.Var(positiveDuration{durationValue{&d}}, "timeout", usage)
	return &d
}

// positiveDuration is a durationValue that refuses zero and negative
// durations.
type positiveDuration struct{ durationValue }

func (v positiveDuration) Set(s string) error {
	var d time.Duration
	if err := (durationValue{&d}).Set(s); err != nil {
		return err
	}
	if d <= 0 {
		return errors.New("it must be positive, such as 30s or 2m")
	}
	*v.d = d
	return nil
}

// durationVar declares a duration flag with a helpful parse error.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("%q has no unit: write %ss for seconds (or m, h, ms: 30s, 2m, 1h)", s, s)
		}
		return fmt.Errorf("%q is not a duration: write a number and a unit, such as 30s, 2m or 1h", s)
	}
	*v.d = d
	return nil
}

// errorJSON is what show, break and probe print with --json when they
// fail or refuse: one object on stdout, so that a script reading it can
// tell every outcome apart without the exit code or stderr (which still
// has the message, for people).
type errorJSON struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

// classedErr is an error with the class --json reports for it, for a
// refusal whose cause no sentinel names.
type classedErr struct {
	class string
	err   error
}

func (e *classedErr) Error() string { return e.err.Error() }
func (e *classedErr) Unwrap() error { return e.err }

// withClass marks err with its class for --json.
func withClass(class string, err error) error { return &classedErr{class: class, err: err} }

// errorClass is the class of err: usage, held, precondition, permission,
// not-found, invalid-key, timeout, probe-failed, or error for anything
// else (the network, the service, a URL the driver refused).
func errorClass(err error) string {
	var ce *classedErr
	code, _ := exitcode.Of(err)
	switch {
	case errors.As(err, &ce):
		return ce.class
	case code == exitcode.Usage:
		return "usage"
	case code == exitcode.ProbeFailed:
		return "probe-failed"
	case errors.Is(err, driver.ErrPrecondition):
		return "precondition"
	case errors.Is(err, driver.ErrPermission):
		return "permission"
	case errors.Is(err, driver.ErrBucketNotExist), errors.Is(err, driver.ErrNotExist), errors.Is(err, fs.ErrNotExist):
		return "not-found"
	case errors.Is(err, driver.ErrInvalidKey):
		return "invalid-key"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "error"
	}
}

// jsonFailure writes err as show's, break's, probe's or list's --json error object
// on w, and returns err for the exit code and stderr. A nil err, or help,
// writes nothing.
func jsonFailure(w io.Writer, command string, err error) error {
	code, show := exitcode.Of(err)
	if err == nil || !show {
		return err
	}
	_ = report.WriteJSON(w, errorJSON{Command: command, Exit: code, Class: errorClass(err), Message: err.Error()})
	return err
}

// The commands whose --json covers their failures and refusals too (hold
// reports its own, as its exit event).
func init() {
	for _, c := range []*command{showCommand, breakCommand, probeCommand, listCommand, pruneCommand} {
		setup := c.setup
		c.setup = func(fs *flag.FlagSet) runFunc {
			run := setup(fs)
			return func(ctx context.Context, e *env, args []string) error {
				out := &countingWriter{w: e.stdout}
				ce := *e
				ce.stdout = out
				err := run(ctx, &ce, args)
				// A command that printed its own object (probe's report
				// of checks that failed) is not given a second one.
				// A usage error may have stopped the flag package before
				// it got to --json: look at the command line itself.
				code, _ := exitcode.Of(err)
				if f := fs.Lookup("json"); f != nil && (f.Value.String() == "true" || code == exitcode.Usage && wantsJSON(args)) && out.n == 0 {
					return jsonFailure(e.stdout, fs.Name(), err)
				}
				return err
			}
		}
	}
}

// waitSeconds is hold's -w SECS, as flock's: wait at most SECS seconds (a
// number, fractions allowed, no unit) for the lease; it sets --wait and
// --wait-timeout.
type waitSeconds struct {
	wait    *bool
	timeout *time.Duration
}

func (w waitSeconds) String() string {
	if w.timeout == nil || *w.timeout == 0 {
		return ""
	}
	return strconv.FormatFloat(w.timeout.Seconds(), 'f', -1, 64)
}

func (w waitSeconds) Set(s string) error {
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs <= 0 || secs > 1e9 || secs != secs {
		return fmt.Errorf("%q: -w takes a number of seconds greater than 0, as flock -w (for a duration with a unit, use --wait --wait-timeout)", s)
	}
	*w.wait, *w.timeout = true, time.Duration(secs*float64(time.Second))
	return nil
}

// countingWriter counts what is written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

var demoCommand = &command{
	name:    "demo",
	args:    "",
	summary: "show what the lease does: two instances, a refusal, a fence, a takeover (in memory, instant)",
	help: `Plays a scripted story on an in-memory bucket, in one process, with a fake
clock per instance so that it takes no time and needs no service or
credentials: two instances start together and one wins; the other is refused
and told who holds the lease; the holder is cut off from the bucket, fences
itself before its lease can be taken, and the second takes over; the old
holder, back on the network, learns that it lost the lease.

Every line is real: the lease library runs unchanged, only time is simulated.

Example:
  go run github.com/mushroomdb/bucketlease/cmd/bucketlease@latest demo`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			pos, after, err := parseArgs(fs, args)
			if err != nil {
				return err
			}
			if len(pos)+len(after) > 0 {
				return exitcode.Usagef("demo takes no arguments")
			}
			return demo.Run(ctx, e.stdout)
		}
	},
}
