package location

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

// nilOpen opens nothing, successfully, at the URL's path.
func nilOpen(_ context.Context, u *url.URL) (driver.Bucket, string, error) { return nil, u.Path, nil }

func TestUnknownSchemeListsKnown(t *testing.T) {
	r := map[string]driver.Scheme{}
	r["alpha"] = driver.Scheme{Open: nilOpen}
	r["beta"] = driver.Scheme{Open: nilOpen}
	_, _, err := open(context.Background(), "gamma://b/p", r)
	if !errors.Is(err, ErrUnknownScheme) {
		t.Fatalf("err = %v, want ErrUnknownScheme", err)
	}
	if !strings.Contains(err.Error(), "alpha, beta") {
		t.Errorf("error %q does not list the registered schemes", err)
	}
}

// TestLocateNamesOnePlace: with a Locate, two spellings of one place have
// one Key and another place another; without one, the Key is the generic
// one and the prefix is the one Open returns.
func TestLocateNamesOnePlace(t *testing.T) {
	r := map[string]driver.Scheme{}
	r["loc"] = driver.Scheme{Open: nilOpen, Locate: func(u *url.URL) (string, string, string, error) {
		return u.Host, u.Path, u.Query().Get("endpoint"), nil
	}}
	r["gen"] = driver.Scheme{Open: func(context.Context, *url.URL) (driver.Bucket, string, error) { return nil, "/q/", nil }}
	key := func(raw string) string {
		t.Helper()
		l, err := parse(raw, r)
		if err != nil {
			t.Fatal(err)
		}
		return l.Key()
	}
	if a, b := key("loc://b/p/?region=x"), key("LOC://b/p"); a != b {
		t.Errorf("two spellings of one place: %s and %s", a, b)
	}
	if a, b := key("loc://b/p?endpoint=HTTP://H:80/"), key("loc://b/p/?endpoint=http://h"); a != b {
		t.Errorf("two spellings of one endpoint: %s and %s", a, b)
	}
	if a, b := key("loc://b/p"), key("loc://b/q"); a == b {
		t.Errorf("two places share the key %s", a)
	}
	if a, b := key("gen://b/p?x=1"), key("gen://b/p?x=2"); a == b {
		t.Errorf("the generic Location joined two places: %s", a)
	}
	l, err := parse("gen://b/p", r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Open(context.Background()); err != nil || l.Prefix != "q" {
		t.Errorf("Open: %v; prefix %q, want the driver's %q", err, l.Prefix, "q")
	}
}

// TestOpenRefusesAPrefixLocateDisagreesWith: Open and Locate naming two
// prefixes is a driver bug, refused.
func TestOpenRefusesAPrefixLocateDisagreesWith(t *testing.T) {
	r := map[string]driver.Scheme{}
	r["bad"] = driver.Scheme{Open: nilOpen, Locate: func(u *url.URL) (string, string, string, error) {
		return u.Host, "elsewhere", "", nil
	}}
	if _, _, err := open(context.Background(), "bad://b/p", r); err == nil || !strings.Contains(err.Error(), "a driver bug") {
		t.Fatalf("err = %v, want a driver bug", err)
	}
	if _, err := (&Location{Scheme: "bad"}).Open(context.Background()); err == nil {
		t.Fatal("a Location Parse did not make opened")
	}
}
