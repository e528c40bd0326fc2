package driver

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// four is a Bucket with none of the optional interfaces.
type four struct{ name string }

func (four) Get(context.Context, string) (io.ReadCloser, Version, error) { return nil, "", ErrNotExist }
func (f four) Put(context.Context, string, []byte, Condition) (Version, error) {
	return Version(f.name), nil
}
func (four) Delete(context.Context, string, Condition) error { return nil }
func (four) Capabilities() Capabilities                      { return Capabilities{Exclusion: Conditional} }

// every is a Bucket with every optional interface, each method saying
// whose it is.
type every struct {
	four
	got *[]string
}

func (e every) PutStream(context.Context, string, io.Reader, Condition, *StreamOptions) (Version, error) {
	*e.got = append(*e.got, e.name+".PutStream")
	return "", nil
}

func (e every) List(context.Context, string) iter.Seq2[Object, error] {
	*e.got = append(*e.got, e.name+".List")
	return func(func(Object, error) bool) {}
}

func (e every) ListPending(context.Context, string) iter.Seq2[Pending, error] {
	*e.got = append(*e.got, e.name+".ListPending")
	return func(func(Pending, error) bool) {}
}

func (e every) Close() error {
	*e.got = append(*e.got, e.name+".Close")
	return nil
}

var allOptional = []string{"Streamer", "Lister", "PendingLister", "io.Closer"}

// TestWrapEveryCombination: for every set of optional interfaces an inner
// bucket may have, Wrap's result has exactly that set (and io.Closer), with
// the outer's method where it has one and the inner's otherwise, and the
// outer's four methods.
func TestWrapEveryCombination(t *testing.T) {
	var got []string
	check := func(inner Bucket, want []string) {
		t.Helper()
		for _, outer := range []Bucket{four{"outer"}, every{four{"outer"}, &got}} {
			w := Wrap(outer, inner)
			if have := Optional(w); !slices.Equal(have, want) {
				t.Fatalf("Wrap(%T, a bucket with %v) has %v", outer, Optional(inner), have)
			}
			if v, _ := w.Put(context.Background(), "k", nil, Condition{}); v != "outer" {
				t.Fatalf("Wrap's Put is %s's", v)
			}
			if w.(interface{ Unwrap() Bucket }).Unwrap() != inner {
				t.Fatal("Unwrap does not return the inner bucket")
			}
			got = got[:0]
			callAll(w)
			whose := "inner."
			if _, ok := outer.(every); ok {
				whose = "outer."
			}
			// One call per optional method inner has, and a Close
			// unless neither has one.
			calls := len(Optional(inner))
			if _, ok := outer.(every); ok && !is[io.Closer](inner) {
				calls++
			}
			for _, call := range got {
				if !strings.HasPrefix(call, whose) {
					t.Errorf("Wrap(%T, a bucket with %v): %s called, want %s's", outer, Optional(inner), call, whose)
				}
			}
			if len(got) != calls {
				t.Errorf("Wrap(%T, a bucket with %v): called %v", outer, Optional(inner), got)
			}
		}
	}
	// A bucket with none: the result's Close does nothing.
	check(four{"inner"}, []string{"io.Closer"})
	for mask := range 1 << 3 {
		in := every{four{"inner"}, &got}
		var s Streamer
		var l Lister
		var p PendingLister
		var want []string
		for i, name := range allOptional[:3] {
			if mask&(1<<i) == 0 {
				continue
			}
			want = append(want, name)
			switch name {
			case "Streamer":
				s = in
			case "Lister":
				l = in
			case "PendingLister":
				p = in
			}
		}
		want = append(want, "io.Closer")
		inner := compose(&wrapped{Bucket: four{"inner"}, close: in.Close}, s, l, p)
		if have := Optional(inner); !slices.Equal(have, want) {
			t.Fatalf("compose of %v has %v", want, have)
		}
		check(inner, want)
	}
}

// callAll calls each optional method b has once.
func callAll(b Bucket) {
	ctx := context.Background()
	if s, ok := b.(Streamer); ok {
		_, _ = s.PutStream(ctx, "k", nil, Condition{}, nil)
	}
	if l, ok := b.(Lister); ok {
		l.List(ctx, "")
	}
	if p, ok := b.(PendingLister); ok {
		p.ListPending(ctx, "")
	}
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
}

// TestOptionalNamesEveryOptionalInterface: every interface this package
// documents as "the optional interface of a Bucket" is one Optional (and
// so Wrap) knows, so that a new one is not silently dropped by wrappers.
func TestOptionalNamesEveryOptionalInterface(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := gd.Doc.Text() + ts.Doc.Text()
				if _, isIface := ts.Type.(*ast.InterfaceType); !isIface || ts.Name.Name == "Bucket" {
					continue
				}
				switch {
				case strings.Contains(doc, "not an optional interface of a Bucket"):
					continue // a driver's own seam, such as UploadSteps
				case !strings.Contains(doc, "optional interface of a Bucket"):
					t.Errorf("interface %s: say in its documentation whether it is the optional interface of a Bucket", ts.Name.Name)
				}
				declared = append(declared, ts.Name.Name)
			}
		}
	}
	known := strings.Join(allOptional, " ")
	for _, name := range declared {
		if !slices.Contains(allOptional, name) {
			t.Errorf("optional interface %s is not among %s: add it to Optional and to Wrap's compose", name, known)
		}
	}
	var e every
	if have := Optional(e); !slices.Equal(have, allOptional) {
		t.Errorf("Optional of a bucket with every interface = %v, want %v", have, allOptional)
	}
}
