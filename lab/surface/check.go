package main

import (
	"fmt"
	"io"
	"strings"
)

// A target is one measure and its limit; a package it names that was not
// measured fails it.
type target struct {
	what    string
	got     int
	max     int
	missing string // a package named but not measured
	detail  string
	skip    string // why the target is not judged
}

func (t target) met() bool { return t.skip != "" || t.missing == "" && t.got <= t.max }

// targets lists what -check judges; a target on a package list that is empty
// is skipped.
func targets(r *Report, o Options) []target {
	byDir := map[string]*Package{}
	for _, p := range r.Packages {
		byDir[p.Dir] = p
	}
	var ts []target
	exports := func(what string, dirs []string, max int) {
		if len(dirs) == 0 {
			ts = append(ts, target{what: what + " exports", max: max, skip: "no package named"})
			return
		}
		t := target{what: what + " exports (" + strings.Join(dirs, ", ") + ")", max: max}
		for _, d := range dirs {
			if p := byDir[d]; p != nil {
				t.got += p.Exports
			} else {
				t.missing = d
			}
		}
		ts = append(ts, t)
	}
	exports("the user's", o.User, maxUserExports)
	exports("the driver author's", o.Author, maxAuthorExports)
	exports("lease", []string{o.Lease}, maxLeaseExports)

	lm := target{what: "*" + leaseType + " methods", max: maxLeaseMethods}
	if p := byDir[o.Lease]; p != nil {
		lm.got = p.Methods[leaseType]
	} else {
		lm.missing = o.Lease
	}
	ts = append(ts,
		lm,
		target{what: "context data channels", got: len(r.Contexts), max: maxContexts, detail: strings.Join(r.Contexts, ", ")},
		target{what: "Register functions", got: len(r.Registers), max: maxRegisters, detail: strings.Join(r.Registers, ", ")},
		docTarget(r))

	cl := target{what: o.CLI + " lines", max: maxCLILines}
	cf := target{what: o.CLI + " files", max: maxCLIFiles}
	if p := byDir[o.CLI]; p != nil {
		cl.got, cf.got = p.Lines, p.Files
	} else {
		cl.missing, cf.missing = o.CLI, o.CLI
	}
	return append(ts, cl, cf,
		target{what: fmt.Sprintf("functions over %d lines", o.Limits.FuncLines), got: r.Totals.FuncsOver, detail: overFuncs(r)},
		target{what: fmt.Sprintf("files over %d lines", o.Limits.FileLines), got: r.Totals.FilesOver},
		target{what: "shipped lines", got: r.Totals.Lines, max: shippedBaseline})
}

// docTarget is the longest package comment's, which every other is at most.
func docTarget(r *Report) target {
	t := target{what: "longest package comment", max: maxDocLines}
	var over []string
	for _, p := range r.Packages {
		if p.DocLines > t.got {
			t.got = p.DocLines
		}
		if p.DocLines > maxDocLines {
			over = append(over, fmt.Sprintf("%s %d", p.Dir, p.DocLines))
		}
	}
	t.detail = strings.Join(over, ", ")
	return t
}

func overFuncs(r *Report) string {
	var over []string
	for _, p := range r.Packages {
		for _, f := range p.Over {
			over = append(over, fmt.Sprintf("%s.%s %d", p.Dir, f.Name, f.Lines))
		}
	}
	return strings.Join(over, ", ")
}

// judge prints every target, met or not, and returns how many are not met.
func judge(r *Report, o Options, w io.Writer) int {
	unmet := 0
	for _, t := range targets(r, o) {
		verdict := "ok"
		if t.skip != "" {
			fmt.Fprintf(w, "%-7s  %s (at most %d): %s\n", "skipped", t.what, t.max, t.skip)
			continue
		}
		if !t.met() {
			verdict = "NOT MET"
			unmet++
		}
		switch {
		case t.missing != "":
			fmt.Fprintf(w, "%-7s  %s: package %s not measured\n", verdict, t.what, t.missing)
		case t.detail != "" && !t.met():
			fmt.Fprintf(w, "%-7s  %s: %d, at most %d: %s\n", verdict, t.what, t.got, t.max, t.detail)
		default:
			fmt.Fprintf(w, "%-7s  %s: %d, at most %d\n", verdict, t.what, t.got, t.max)
		}
	}
	return unmet
}
