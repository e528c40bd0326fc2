package report

import "testing"

// TestHolderNameEscapes: a holder's id is printed escaped, whatever the
// lease lets through.
func TestHolderNameEscapes(t *testing.T) {
	if got, want := HolderName("x\x1b]0;pwned\ay\u202etxt.exe"), `x\x1b]0;pwned\ay\u202etxt.exe`; got != want {
		t.Errorf("HolderName = %q, want %q", got, want)
	}
}
