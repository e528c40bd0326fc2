package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Sized is a function or a file and its length in lines.
type Sized struct {
	Name  string `json:"name"`
	Lines int    `json:"lines"`
}

// Package is what surface measures of one package's non-test files.
type Package struct {
	Path string `json:"path"` // import path
	Dir  string `json:"dir"`  // relative to the module's root, slash-separated
	Name string `json:"name"`

	// Exports counts exported types, functions, methods of exported
	// types, methods of exported interfaces, exported fields of exported
	// structs, constants and variables; ByKind splits it.
	Exports int            `json:"exports"`
	ByKind  map[string]int `json:"by_kind"`
	// Methods counts, per exported type, its exported methods (pointer and
	// value receivers) or, for an interface, the methods it declares.
	Methods map[string]int `json:"methods"`
	// Contexts names the exported functions and methods that carry data
	// in a context (contextChannel); Registers, the exported top-level
	// functions named Register….
	Contexts  []string `json:"contexts"`
	Registers []string `json:"registers"`

	DocLines   int `json:"doc_lines"`    // lines of package comments, every file's
	GoDocLines int `json:"go_doc_lines"` // lines `go doc -all` prints

	Files       int     `json:"files"`
	Lines       int     `json:"lines"` // as wc -l counts them
	Code        int     `json:"code"`  // lines holding a token that is not a comment
	Funcs       int     `json:"funcs"`
	Longest     Sized   `json:"longest_func"`
	FuncsOver   int     `json:"funcs_over"`
	Over        []Sized `json:"funcs_over_list,omitempty"`
	LongestFile Sized   `json:"longest_file"`
	FilesOver   int     `json:"files_over"`

	seen map[string]bool // exported identifiers counted, by kind and name
}

// export counts the identifier of kind named name, unless a file for
// another system declared it already, and reports whether it was new.
func (p *Package) export(kind, name string) bool {
	if p.seen[kind+" "+name] {
		return false
	}
	p.seen[kind+" "+name] = true
	p.ByKind[kind]++
	return true
}

// Kinds of exported identifier, as Package.ByKind names them.
const (
	kindType   = "types"
	kindFunc   = "funcs"
	kindMethod = "methods"
	kindIface  = "interface methods"
	kindField  = "fields"
	kindConst  = "consts"
	kindVar    = "vars"
)

// Limits are the lengths beyond which a function or a file is counted as
// over.
type Limits struct {
	FuncLines int
	FileLines int
}

// measure reads the non-test .go files of dir, whatever their build
// constraints, as the package at path.
func measure(dir, path string, lim Limits) (*Package, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	p := &Package{Path: path, ByKind: map[string]int{}, Methods: map[string]int{}, seen: map[string]bool{}}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.Name = f.Name.Name
		p.measureFile(fset, f, src, filepath.Base(name), lim)
	}
	for _, n := range p.ByKind {
		p.Exports += n
	}
	sort.Strings(p.Contexts)
	sort.Strings(p.Registers)
	return p, nil
}

func (p *Package) measureFile(fset *token.FileSet, f *ast.File, src []byte, base string, lim Limits) {
	lines := bytes.Count(src, []byte("\n"))
	p.Files++
	p.Lines += lines
	p.Code += codeLines(src)
	if lines > p.LongestFile.Lines {
		p.LongestFile = Sized{base, lines}
	}
	if lines > lim.FileLines {
		p.FilesOver++
	}
	if f.Doc != nil {
		p.DocLines += span(fset, f.Doc)
	}
	ctxName := importName(f, "context")
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			p.funcDecl(fset, d, ctxName, lim)
		case *ast.GenDecl:
			p.genDecl(d)
		}
	}
}

// span is the number of lines n covers.
func span(fset *token.FileSet, n ast.Node) int {
	return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
}

// codeLines counts the lines on which a token other than a comment starts
// or continues (a raw string over several lines counts each).
func codeLines(src []byte) int {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0) // comments skipped
	seen := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line's end, not written
		}
		line := file.Line(pos)
		seen[line] = true
		for i := range strings.Count(lit, "\n") {
			seen[line+i+1] = true
		}
	}
	return len(seen)
}

// importName is the name f refers to the package at path by, or "" if f
// does not import it.
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p != path {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

func (p *Package) funcDecl(fset *token.FileSet, d *ast.FuncDecl, ctxName string, lim Limits) {
	name := d.Name.Name
	exported := false
	if d.Recv != nil && len(d.Recv.List) == 1 {
		recv := typeName(d.Recv.List[0].Type)
		name = recv + "." + name
		if ast.IsExported(d.Name.Name) && ast.IsExported(recv) && p.export(kindMethod, name) {
			exported = true
			p.Methods[recv]++
		}
	} else if ast.IsExported(name) && p.export(kindFunc, name) {
		exported = true
		if strings.HasPrefix(name, "Register") {
			p.Registers = append(p.Registers, name)
		}
	}
	if exported && ctxName != "" && contextChannel(d, ctxName) {
		p.Contexts = append(p.Contexts, name)
	}
	n := span(fset, d) // from the func keyword to the closing brace
	p.Funcs++
	if n > p.Longest.Lines {
		p.Longest = Sized{name, n}
	}
	if n > lim.FuncLines {
		p.FuncsOver++
		p.Over = append(p.Over, Sized{name, n})
	}
}

// typeName is the name of the type a receiver is declared on: T for T, *T,
// T[K] and *T[K].
func typeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		case *ast.SelectorExpr:
			return t.Sel.Name
		default:
			return ""
		}
	}
}

// hasType reports whether fields holds a context.name, context being
// spelled ctxName.
func hasType(fields *ast.FieldList, ctxName, name string) bool {
	if fields == nil {
		return false
	}
	for _, f := range fields.List {
		if isSel(f.Type, ctxName, name) {
			return true
		}
	}
	return false
}

func (p *Package) genDecl(d *ast.GenDecl) {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if ast.IsExported(s.Name.Name) && p.export(kindType, s.Name.Name) {
				p.typeSpec(s)
			}
		case *ast.ValueSpec:
			kind := kindVar
			if d.Tok == token.CONST {
				kind = kindConst
			}
			for _, n := range s.Names {
				if ast.IsExported(n.Name) {
					p.export(kind, n.Name)
				}
			}
		}
	}
}

// typeSpec counts an exported struct's exported fields, and the methods an
// exported interface declares (not those it embeds).
func (p *Package) typeSpec(s *ast.TypeSpec) {
	switch t := s.Type.(type) {
	case *ast.StructType:
		p.fields(s.Name.Name, t)
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			for _, n := range m.Names { // an embedded interface has none
				if ast.IsExported(n.Name) && p.export(kindIface, s.Name.Name+"."+n.Name) {
					p.Methods[s.Name.Name]++
				}
			}
		}
	}
}

// fields counts st's exported fields, an embedded field by its type's name,
// and those of the struct types written out in them; in is the name of the
// type (or field) st is.
func (p *Package) fields(in string, st *ast.StructType) {
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			if name := typeName(f.Type); ast.IsExported(name) {
				p.export(kindField, in+"."+name)
			}
			continue
		}
		for _, name := range f.Names {
			if !ast.IsExported(name.Name) {
				continue
			}
			p.export(kindField, in+"."+name.Name)
			if inner, ok := f.Type.(*ast.StructType); ok {
				p.fields(in+"."+name.Name, inner)
			}
		}
	}
}

// contextChannel reports whether d carries request or response data in a
// context, context being spelled ctxName: it takes a context.Context and
// returns one without a context.CancelFunc (a With… of a channel, where a
// scope of cancellation returns its CancelFunc), or its body stores a
// value in a context (context.WithValue) or reads one from a context it
// was given (the Value method of a context.Context parameter: the other
// end of such a channel).
func contextChannel(d *ast.FuncDecl, ctxName string) bool {
	if hasType(d.Type.Params, ctxName, "Context") &&
		hasType(d.Type.Results, ctxName, "Context") && !hasType(d.Type.Results, ctxName, "CancelFunc") {
		return true
	}
	if d.Body == nil {
		return false
	}
	params := map[string]bool{}
	for _, f := range d.Type.Params.List {
		if isSel(f.Type, ctxName, "Context") {
			for _, n := range f.Names {
				params[n.Name] = true
			}
		}
	}
	found := false
	ast.Inspect(d.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if found || !ok {
			return !found
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok {
			found = (x.Name == ctxName && sel.Sel.Name == "WithValue") ||
				(params[x.Name] && sel.Sel.Name == "Value" && len(call.Args) == 1)
		}
		return !found
	})
	return found
}

// isSel reports whether e is pkg.name.
func isSel(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}
