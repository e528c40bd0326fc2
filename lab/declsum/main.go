// Command declsum prints every top-level declaration of a Go package's
// non-test files, without comments and imports, sorted: two trees whose
// output is the same hold the same code, however it is spread over files
// and whatever their comments say (a change of layout, such as a body
// split over lines, counts as a change). The simulator's long campaign runs on
// one lease; a piece of it counts for a later commit only if
//
//	go run ./lab/declsum ./lease
//
// prints the same for both (docs/simulation.md).
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: declsum DIR")
		os.Exit(2)
	}
	decls, err := declarations(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "declsum:", err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(decls, "\n"))
}

// declarations returns the package's top-level declarations in dir,
// printed without comments, sorted.
func declarations(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var decls []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution) // no comments
		if err != nil {
			return nil, err
		}
		for _, d := range af.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
				continue
			}
			var b bytes.Buffer
			if err := printer.Fprint(&b, fset, d); err != nil {
				return nil, err
			}
			decls = append(decls, b.String())
		}
	}
	if len(decls) == 0 {
		return nil, fmt.Errorf("no Go declarations in %s", dir)
	}
	sort.Strings(decls)
	return decls, nil
}
