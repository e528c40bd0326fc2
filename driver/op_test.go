package driver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

func TestCheckKey(t *testing.T) {
	for _, ok := range []string{"LEASE", "db1/LEASE", "a/b/c.tar.gz", "ünïcode/k", "a..b", ".hidden/x", "odd/replacement-\ufffd"} {
		if err := driver.CheckKey(ok); err != nil {
			t.Errorf("CheckKey(%q): %v", ok, err)
		}
	}
	for k, why := range map[string]string{
		"":                        "empty",
		"/lead/k":                 "empty segment",
		"db1//LEASE":              "empty segment",
		"db1/":                    "empty segment",
		"a/./b":                   `"." segment`,
		"a/../b":                  `".." segment`,
		`bs\k`:                    "backslash",
		"a\nb":                    "control character",
		"\xff":                    "UTF-8",
		"odd/nonchar-\ufffe":      "U+FFFE or U+FFFF",
		"odd/nonchar-\uffff":      "U+FFFE or U+FFFF",
		strings.Repeat("k", 1025): "1025 bytes",
	} {
		err := driver.CheckKey(k)
		if !errors.Is(err, driver.ErrInvalidKey) || !strings.Contains(err.Error(), why) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidKey saying %q", k, err, why)
		}
	}
}

// TestBegin: the mechanical rules, each settled before any request.
func TestBegin(t *testing.T) {
	ctx := context.Background()
	caps := driver.Capabilities{Exclusion: driver.Conditional}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		ctx  context.Context
		op   string
		key  string
		cond driver.Condition
		want error
	}{
		{dead, "get", "k", driver.Condition{}, context.Canceled},
		{ctx, "put", "/k", driver.IfAbsent(), driver.ErrInvalidKey},
		{ctx, "delete", "k", driver.IfAbsent(), driver.ErrUnsupported},
		{ctx, "delete", "k", driver.IfMatch(`"abc"`), driver.ErrUnsupported},
		{ctx, "put", "k", driver.IfMatch("*"), driver.ErrPrecondition},
		{ctx, "put", "k", driver.IfMatch(""), driver.ErrPrecondition},
	}
	for _, c := range cases {
		var op *driver.Op
		var err error
		switch c.op {
		case "get":
			op, err = driver.BeginGet(c.ctx, "test", c.key)
		case "put":
			op, err = driver.BeginPut(c.ctx, caps, "test", c.key, driver.PutOptions{If: c.cond})
		default:
			op, err = driver.BeginDelete(c.ctx, caps, "test", c.key, c.cond)
		}
		var oe *driver.OpError
		if !errors.Is(err, c.want) || !errors.As(err, &oe) || oe.Driver != "test" || oe.Key != c.key || op == nil {
			t.Errorf("Begin(%s %q %s) = %v, want %v in an OpError", c.op, c.key, c.cond, err, c.want)
		}
	}
	if _, err := driver.BeginPut(ctx, caps, "test", "k", driver.PutOptions{If: driver.IfMatch(`"abc"`)}); err != nil {
		t.Errorf("a valid put: %v", err)
	}
	withDelete := driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
	if _, err := driver.BeginDelete(ctx, withDelete, "test", "k", driver.IfMatch(`"abc"`)); err != nil {
		t.Errorf("a conditional delete where declared: %v", err)
	}
}

// TestFailAfterRetry: a refusal after two requests went out through
// Op.Context to the service is ErrOutcomeUnknown, after one it is
// ErrPrecondition, also when a request to another host (a credential
// refresh) went out first.
func TestFailAfterRetry(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer sts.Close()
	send := func(op *driver.Op, url string) {
		req, _ := http.NewRequestWithContext(op.Context(), http.MethodPut, url, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	sdkErr := errors.New("412 from the service")
	for n, want := range map[int]error{1: driver.ErrPrecondition, 2: driver.ErrOutcomeUnknown} {
		op, err := driver.BeginPut(context.Background(), driver.Capabilities{}, "test", "k", driver.PutOptions{If: driver.IfAbsent()})
		if err != nil {
			t.Fatal(err)
		}
		send(op, sts.URL)
		send(op, sts.URL)
		for range n {
			send(op, srv.URL)
		}
		err = op.Fail(driver.ErrPrecondition, sdkErr)
		if !errors.Is(err, want) || !errors.Is(err, sdkErr) {
			t.Errorf("after %d requests: %v, want %v with the SDK's error in the chain", n, err, want)
		}
		if n == 2 && errors.Is(err, driver.ErrPrecondition) {
			t.Errorf("after a retry the refusal still reads as ErrPrecondition: %v", err)
		}
	}
}
