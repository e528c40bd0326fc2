package driver_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

func TestOpErrorChain(t *testing.T) {
	service := errors.New("412 PreconditionFailed")
	err := error(&driver.OpError{Driver: "s3", Op: "put", Key: "p/LEASE", Cond: driver.IfAbsent(), Kind: driver.ErrPrecondition, Err: service})
	if !errors.Is(err, driver.ErrPrecondition) || !errors.Is(err, service) {
		t.Fatal("the chain lost the kind or the service error")
	}
	want := "s3: put p/LEASE (If-None-Match: *): precondition failed: 412 PreconditionFailed"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

// TestOpErrorQuotesAnUnprintableKey: a key refused for a control character
// or bad UTF-8 is quoted in the message, so that it cannot reach a terminal
// or a log raw (an escape sequence in a typed URL, say); a printable key,
// spaces and unicode included, is written as it is.
func TestOpErrorQuotesAnUnprintableKey(t *testing.T) {
	ctx := context.Background()
	for key, want := range map[string]string{
		"p/\x1b[2Jwiped": `"p/\x1b[2Jwiped"`,
		"p/bad\xff":      `"p/bad\xff"`,
		"p/new\nline":    `"p/new\nline"`,
		"p/a b/ü":        "p/a b/ü",
	} {
		_, err := mem.New().Put(ctx, key, []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
		if key == "p/a b/ü" {
			err = &driver.OpError{Driver: "mem", Op: "put", Key: key, Cond: driver.IfAbsent(), Kind: driver.ErrPrecondition}
		}
		if err == nil {
			t.Fatalf("Put %q: success, want ErrInvalidKey", key)
		}
		if !strings.HasPrefix(err.Error(), "mem: put "+want+" (If-None-Match: *): ") {
			t.Errorf("Put %q: %q, want it to name the key as %s", key, err, want)
		}
	}
}

func ExampleRegister() {
	// A driver registers its scheme once, from its package's init, with
	// what opens its URLs and what says where they point:
	driver.Register("myfs", driver.Scheme{
		Open: func(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
			if _, err := driver.Params(u, "region"); err != nil {
				return nil, "", err // a misspelled parameter is refused
			}
			return mem.New(), u.Path, nil
		},
		Locate: func(u *url.URL) (bucket, prefix, endpoint string, err error) {
			// The region says how to reach the bucket, not which it is.
			return u.Host, u.Path, "", nil
		},
	})
}
