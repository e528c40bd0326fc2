package drivertest

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/internal/location"
)

// URLCases are URLs for RunURLs to open with bucket.Open, for a driver's
// own scheme. Opening must not contact the service.
type URLCases struct {
	// Valid URLs must open.
	Valid []string
	// Invalid maps URLs that must be refused to a phrase the error must
	// contain: the refusal has to say what is wrong.
	Invalid map[string]string
	// Secrets must appear in no error in any form the URL carried them.
	Secrets []string
}

// RunURLs checks that every valid URL opens, every invalid one is refused
// with an error saying why, and no error shows a secret.
func RunURLs(t *testing.T, c URLCases) {
	t.Helper()
	for _, p := range CheckURLs(c) {
		t.Error(p)
	}
}

// CheckURLs runs RunURLs's checks and returns the problems found.
func CheckURLs(c URLCases) []string {
	ctx := context.Background()
	open := location.Open
	var problems []string
	for _, u := range c.Valid {
		if _, _, err := open(ctx, u); err != nil {
			problems = append(problems, fmt.Sprintf("Open(%q): %v", location.Redact(u), err))
		}
	}
	for u, want := range c.Invalid {
		_, _, err := open(ctx, u)
		if err == nil {
			problems = append(problems, fmt.Sprintf("Open(%q) succeeded; want a refusal saying %q", location.Redact(u), want))
			continue
		}
		if !strings.Contains(err.Error(), want) {
			problems = append(problems, fmt.Sprintf("Open(%q) = %v; want it to say %q", location.Redact(u), err, want))
		}
		for _, s := range c.Secrets {
			switch {
			case strings.Contains(err.Error(), s):
				problems = append(problems, fmt.Sprintf("Open(%q) printed the secret: %s", location.Redact(u),
					strings.ReplaceAll(err.Error(), s, "<the secret>")))
			case containsAnyDecoding(err.Error(), s):
				problems = append(problems, fmt.Sprintf("Open(%q) printed the secret percent-encoded (the message is not shown)",
					location.Redact(u)))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// containsAnyDecoding reports whether s appears in msg or in msg after any
// number of percent-decodings.
func containsAnyDecoding(msg, s string) bool {
	for range 8 {
		if strings.Contains(msg, s) {
			return true
		}
		d, err := url.QueryUnescape(msg)
		if err != nil || d == msg {
			d, err = url.PathUnescape(msg)
			if err != nil || d == msg {
				return false
			}
		}
		msg = d
	}
	return strings.Contains(msg, s)
}
