package sample

import "context"

type dataKey struct{}

// Stash is a context data channel: it stores a value in a context.
func Stash(ctx context.Context, v any) { _ = context.WithValue(ctx, dataKey{}, v) }

// Report is one: it reads a value from the context it is given.
func Report(ctx context.Context, v any) {
	if f, ok := ctx.Value(dataKey{}).(func(any)); ok {
		f(v)
	}
}

// Done is not: it reads no value from its context.
func Done(ctx context.Context) bool { return ctx.Err() != nil }
