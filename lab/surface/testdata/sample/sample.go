package sample

import (
	stdctx "context"
	"io"
)

// Exported: 3 constants, 1 variable.
const (
	One = 1
	Two = 2
	six = 6
	Ten = 10
)

var Default, hidden = &Lease{}, 0

// Lease has 4 exported fields: Name, Options, its Depth and Reader
// (embedded); 6 exported methods (Context and RegisterAll below).
type Lease struct {
	Name    string
	key     string
	Options struct {
		Depth int
		width int
	}
	io.Reader
	*inner
}

type inner struct{ Hidden int }

func (l *Lease) Key() string        { return l.key }
func (l Lease) Value() string       { return l.Name }
func (l *Lease) Renew() error       { return nil }
func (l *Lease) Release() error     { return nil }
func (l *Lease) stop()              {}
func (i *inner) NotCounted() string { return "" }

// Store is an interface of 2 declared methods and one embedded interface.
type Store interface {
	io.Closer
	Get(key string) ([]byte, error)
	Put(key string, b []byte) error
	private()
}

type (
	// Key and Alias are types; key is not.
	Key   string
	Alias = Key
	key   int
)

// WithData is a context data channel.
func WithData(ctx stdctx.Context, v any) stdctx.Context { return ctx }

// Scope is not: it returns a CancelFunc.
func Scope(ctx stdctx.Context) (stdctx.Context, stdctx.CancelFunc) {
	return stdctx.WithCancel(ctx)
}

// Context is one, as a method.
func (l *Lease) Context(ctx stdctx.Context) stdctx.Context { return ctx }

// withData is not exported.
func withData(ctx stdctx.Context) stdctx.Context { return ctx }

// Register and RegisterLocator are Register functions; Lease.RegisterAll
// is a method.
func Register(name string)        {}
func RegisterLocator(name string) {}
func (l *Lease) RegisterAll()     {}
