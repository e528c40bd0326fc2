package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMovesAndCommentsAreTheSameCode: a function moved to another file,
// with its comments changed, is the same code; a changed statement is not.
func TestMovesAndCommentsAreTheSameCode(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, a, map[string]string{"x.go": "package p\n\nimport \"fmt\"\n\n// F says hi.\nfunc F() { fmt.Println(\"hi\") }\n\nfunc G() int { return 1 }\n"})
	write(t, b, map[string]string{
		"x.go":      "package p\n\n// G is one.\nfunc G() int { return 1 }\n",
		"y.go":      "package p\n\nimport \"fmt\"\n\n// F greets.\nfunc F() { fmt.Println(\"hi\") }\n",
		"y_test.go": "package p\n\nfunc H() {}\n",
	})
	write(t, c, map[string]string{"x.go": "package p\n\nimport \"fmt\"\n\nfunc F() { fmt.Println(\"hi\") }\n\nfunc G() int { return 2 }\n"})
	da, err := declarations(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := declarations(b)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := declarations(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(da, db) {
		t.Errorf("a move and new comments changed the code:\n%q\n%q", da, db)
	}
	if slices.Equal(da, dc) {
		t.Errorf("a changed statement left the code the same: %q", dc)
	}
}
