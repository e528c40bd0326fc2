package wrapcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// drivers are the Buckets of the module that wrap nothing: the drivers
// themselves, proven by drivertest.
var drivers = []string{
	"driver/azure.Bucket", "driver/file.Bucket", "driver/gcs.Bucket", "driver/mem.Bucket",
	"driver/minio.Bucket", "driver/s3.Bucket",
}

// exempt are the wrappers that hide optional abilities on purpose, with
// why: each intercepts every request, so that an ability forwarded past it
// would bypass what it does, and what uses it needs the four methods only.
var exempt = map[string]string{
	"cmd/bucketlease/cli.network": "the demo's simulated network, which it cuts: a forwarded ability would reach the bucket through the cut",
	"drivertest.armedBucket":      "drops the reply of one Put on the wire; only a lease's acquire and renewals use it",
	// drivertest's fault injectors act on the four methods: a stream or a
	// listing forwarded past one would reach the bucket without its fault.
	"drivertest/faulty.Bucket":              "ignores or lies about a Put's condition",
	"drivertest/faulty.Failing":             "fails the requests it is told to",
	"drivertest/faulty.Counting":            "counts the four methods' requests; a forwarded ability would go uncounted",
	"drivertest/faulty.LostReply":           "loses the reply of a Put it lets through",
	"drivertest/faulty.NoConditionalDelete": "drops a Delete's condition",
	"drivertest/faulty.RateLimit":           "refuses writes to one key closer than its interval",
}

// TestEveryWrapperIsChecked enumerates the Bucket implementations in the
// module's shipped code (outside internal/, examples/, lab/ and package driver,
// whose Wrap has tests of its own): every type with a Capabilities method
// returning driver.Capabilities or embedding driver.Bucket. Each must be a
// driver listed above or a wrapper whose package calls Check with its
// name, or an exempt one, so that a new wrapper cannot hide an optional
// ability unnoticed.
func TestEveryWrapperIsChecked(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{} // "pkgdir.Type" -> package directory
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal" || rel == "examples" || rel == "lab" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(rel) == "driver" {
			return nil
		}
		for _, name := range bucketTypes(t, path) {
			found[filepath.Dir(rel)+"."+name] = filepath.Dir(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"driver/besteffort.bucket", "lease.fencedBucket", "cmd/bucketlease/cli.deadlineBucket"} {
		if _, ok := found[want]; !ok {
			t.Errorf("the enumeration did not find %s: it is broken, or the wrapper moved", want)
		}
	}
	for typ, dir := range found {
		if slices.Contains(drivers, typ) || exempt[typ] != "" {
			continue
		}
		name := typ[strings.LastIndex(typ, ".")+1:]
		if !checkedIn(t, dir, name) {
			t.Errorf("%s wraps or implements a driver.Bucket, and no test of its package calls wrapcheck.Check(t, %q, …): "+
				"build it with driver.Wrap and add that test (or, for a new driver, list it in drivers)", typ, name)
		}
	}
}

// bucketTypes returns the types of the file at path that implement
// driver.Bucket by a Capabilities method or by embedding it.
func bucketTypes(t *testing.T, path string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && d.Name.Name == "Capabilities" && d.Type.Results != nil &&
				len(d.Type.Results.List) == 1 && isDriverType(d.Type.Results.List[0].Type, "Capabilities") {
				names = append(names, recvName(d.Recv.List[0].Type))
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					if len(field.Names) == 0 && isDriverType(field.Type, "Bucket") {
						names = append(names, ts.Name.Name)
					}
				}
			}
		}
	}
	return names
}

func isDriverType(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "driver" && sel.Sel.Name == name
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

// checkedIn reports whether a test file in dir calls Check for name.
func checkedIn(t *testing.T, dir, name string) bool {
	tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tests {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "wrapcheck.Check(t, \""+name+"\"") {
			return true
		}
	}
	return false
}
