package term

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Safe returns s with every rune that does not print as itself
// escaped as Go would quote it (\x1b, \u202e, \xff for a byte that is not
// UTF-8), newlines and tabs aside. What the service hands back (a key in a
// listing, a LEASE record's instance id, an error quoting either) is
// written by whoever can write to the bucket: printed raw, an escape
// sequence in it would act on the operator's terminal, and a bidi control
// would make a key read as another.
func Safe(s string) string {
	if printsAsItself(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// printsAsItself reports whether Safe leaves s as it is.
func printsAsItself(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune)
}

// unsafeRune reports whether r does not print as itself on a terminal.
func unsafeRune(r rune) bool { return r != '\n' && r != '\t' && !unicode.IsPrint(r) }

// ShellQuote quotes s for a POSIX shell, leaving it as it is when it
// needs no quotes, so that a command line the tool suggests can be pasted.
func ShellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			safe = false
			break
		}
	}
	switch {
	case safe:
		return s
	case strings.ContainsAny(s, "\n\t") || !printsAsItself(s):
		// ANSI-C quoting (bash, zsh, ksh): nothing in s reaches the
		// terminal raw, and the line still pastes as one word.
		q := strconv.Quote(s)
		return "$'" + strings.ReplaceAll(q[1:len(q)-1], "'", `\'`) + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Wrap breaks s (whose own indentation, and spacing, is kept) into lines of at most
// width columns at spaces, starting each line after the first with indent;
// a word longer than a line (a key, a URL) is cut where the line ends.
func Wrap(s string, width int, indent string) string {
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	var lines []string
	line := lead
	empty := true // line holds no word yet
	// Split, not Fields: an empty word keeps a double space.
	for _, word := range strings.Split(strings.TrimLeft(s, " "), " ") {
		if word == "" && empty {
			continue
		}
		for {
			sep := " "
			if empty {
				sep = ""
			}
			if utf8.RuneCountInString(line)+len(sep)+utf8.RuneCountInString(word) <= width {
				line += sep + word
				empty = false
				break
			}
			if !empty {
				lines = append(lines, line)
				line, empty = indent, true
				continue
			}
			// A word alone longer than the line: cut it.
			room := max(width-utf8.RuneCountInString(line), 1)
			r := []rune(word)
			lines = append(lines, line+string(r[:room]))
			line, word = indent, string(r[room:])
		}
	}
	return strings.Join(append(lines, line), "\n")
}

// OneLine joins s's lines and runs of spaces into one line.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
