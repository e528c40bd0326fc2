package driver

import (
	"context"
	"net/url"
	"testing"
)

// nilOpen opens nothing, successfully, at the URL's path.
func nilOpen(_ context.Context, u *url.URL) (Bucket, string, error) { return nil, u.Path, nil }

func TestRegisterTwicePanics(t *testing.T) {
	var r registry
	r.register("x", Scheme{Open: nilOpen})
	defer func() {
		if recover() == nil {
			t.Fatal("a second Register of one scheme did not panic")
		}
	}()
	r.register("X", Scheme{Open: nilOpen, Locate: func(*url.URL) (string, string, string, error) { return "", "", "", nil }})
}

func TestRegisterRefusesANilOpen(t *testing.T) {
	var r registry
	defer func() {
		if recover() == nil {
			t.Fatal("Register without Open did not panic")
		}
	}()
	r.register("x", Scheme{Locate: func(*url.URL) (string, string, string, error) { return "", "", "", nil }})
}
