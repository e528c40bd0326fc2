package driver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

func TestOpenReturnsPrefix(t *testing.T) {
	b, prefix, err := driver.Open(context.Background(), "mem://shared/backups/db1/")
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "backups/db1" {
		t.Errorf("prefix = %q", prefix)
	}
	b2, _, err := driver.Open(context.Background(), "mem://shared/other")
	if err != nil {
		t.Fatal(err)
	}
	if b != b2 {
		t.Error("two opens of one mem NAME gave different buckets")
	}
}

func TestOpenRefusesUnknownParameter(t *testing.T) {
	_, _, err := driver.Open(context.Background(), "mem://b/p?regoin=us-east-1")
	if err == nil || !strings.Contains(err.Error(), `"regoin"`) {
		t.Fatalf("err = %v, want a refusal naming the parameter", err)
	}
}

func TestErrorsRedactSecrets(t *testing.T) {
	for _, raw := range []string{
		"nosuch://AKIAEXAMPLE:hunter2@bucket/p?secret_key=hunter2",
		"mem://b/p?token=hunter2",
		"nosuch://b/p?sig=hunter2&sv=2020",
		"nosuch://user:hunter2@b/%zz",
	} {
		_, _, err := driver.Open(context.Background(), raw)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", raw)
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "AKIAEXAMPLE") {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"s3://bkt/p?region=eu-west-1":          "s3://bkt/p?region=eu-west-1",
		"s3://k:s@bkt/p":                       "s3://REDACTED@bkt/p",
		"azblob://c/p?account=a&sig=xyz":       "azblob://c/p?account=a&sig=REDACTED",
		"minio://h:9000/b?access_key=AK&tls=0": "minio://h:9000/b?access_key=REDACTED&tls=0",
		"gs://b/p\x7f?token=s":                 "gs://REDACTED",
		"s3://b/p?endpoint=http://k:SECRET@h":  "s3://b/p?endpoint=http%3A%2F%2FREDACTED%40h",
		"s3:AKIA:supersecret@bucket/p":         "s3:REDACTED",
		"s3://b/p#sig=secret":                  "s3://b/p#REDACTED",
		"s3://b/p?pwd=secret&pass=x":           "s3://b/p?pass=REDACTED&pwd=REDACTED",
		// A secret nested in an endpoint, at any depth of encoding, is redacted.
		"s3://b/p?endpoint=http://127.0.0.1:9000":                                                 "s3://b/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000",
		"azblob://c/p?endpoint=https%3A%2F%2Fa.blob.core.windows.net%2Fc%3Fsv%3D1%26sig%3DSECRET": "azblob://c/p?endpoint=https%3A%2F%2Fa.blob.core.windows.net%2Fc%3Fsig%3DREDACTED%26sv%3DREDACTED",
		"gs://b/p?endpoint=https%253A%252F%252Fh%252Fx%253Ftoken%253DSECRET":                      "gs://b/p?endpoint=REDACTED",
		"s3://b/p?endpoint=http://h/x?X-Amz-Signature=SECRET":                                     "s3://b/p?endpoint=http%3A%2F%2Fh%2Fx%3FX-Amz-Signature%3DREDACTED",
		"r2://a/b/p?endpoint=https://h/?key=SECRET":                                               "r2://a/b/p?endpoint=https%3A%2F%2Fh%2F%3Fkey%3DREDACTED",
	}
	for in, want := range cases {
		if got := driver.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFakeVersion(t *testing.T) {
	for _, v := range []driver.Version{`"9b2cf535f27731c974343645a3985328"`, "1700000000000009", "0x8DCBA9F00FF", "m12", ""} {
		f := driver.FakeVersion(v)
		if f == v || len(f) == 0 {
			t.Errorf("FakeVersion(%q) = %q", v, f)
		}
		if len(v) > 0 && len(f) != len(v) {
			t.Errorf("FakeVersion(%q) = %q changes the length", v, f)
		}
	}
	if f := driver.FakeVersion("9"); f == "0" {
		t.Error("a generation number became 0, which means 'absent' to GCS")
	}
}

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

// TestParseRefusesAnInvalidPrefix: a URL whose prefix no valid key can
// start with fails at Parse with ErrInvalidKey, naming the prefix quoted,
// rather than at the first request under it; a prefix with spaces, unicode
// and a trailing slash is fine.
func TestParseRefusesAnInvalidPrefix(t *testing.T) {
	for _, raw := range []string{"mem://b/a%1B%5B2J", "mem://b/a//c", "mem://b/a/./c", "mem://b/a/%FF", "mem://b/a%5Cc"} {
		_, err := driver.ParseURL(raw)
		if !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("ParseURL(%q): %v, want ErrInvalidKey", raw, err)
			continue
		}
		if strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 || r == utf8.RuneError }) {
			t.Errorf("ParseURL(%q): %q carries the prefix raw", raw, err)
		}
	}
	l, err := driver.ParseURL("mem://b/backups/db%201/%C3%BC/")
	if err != nil || l.Prefix != "backups/db 1/ü" {
		t.Errorf("ParseURL of a valid prefix: %v, %v", l, err)
	}
}

func TestReadAllBounded(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	if _, err := b.Put(ctx, "big", make([]byte, 2048), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := driver.ReadAll(ctx, b, "big", 1024, driver.GetOptions{}); !errors.Is(err, driver.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if data, _, err := driver.ReadAll(ctx, b, "big", 2048, driver.GetOptions{}); err != nil || len(data) != 2048 {
		t.Fatalf("ReadAll at the limit: %d bytes, %v", len(data), err)
	}
}

// brokenBody is a Bucket whose Get answers with attrs and a body that
// fails when read.
type brokenBody struct {
	driver.Bucket
	attrs driver.Attrs
}

func (b brokenBody) Get(context.Context, string, driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	return io.NopCloser(iotest.ErrReader(errors.New("connection reset"))), b.attrs, nil
}

// TestReadAllAttrs: ReadAll returns Get's Attrs, the metadata asked for
// included; with an error it keeps the service's time (a missing key, a
// body that failed) but no version, and with ErrTooLarge the whole Attrs
// of the object it refused.
func TestReadAllAttrs(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	b := &mem.Bucket{Now: func() time.Time { return now }}
	if _, a, err := driver.ReadAll(ctx, b, "missing", 10, driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) || !a.Time.Date.Equal(now) {
		t.Errorf("a missing key: %+v, %v; want ErrNotExist with the service's time %v", a, err, now)
	}
	put, err := b.Put(ctx, "k", []byte("body"), driver.PutOptions{Metadata: driver.Metadata{"epoch": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	data, a, err := driver.ReadAll(ctx, b, "k", 10, driver.GetOptions{Metadata: true})
	if err != nil || string(data) != "body" || a.Version != put.Version || a.Metadata["epoch"] != "3" || !a.Time.Date.Equal(now) {
		t.Errorf("ReadAll: %q, %+v, %v; want the body, version %s, epoch=3 and the service's time", data, a, err, put.Version)
	}
	if _, a, err := driver.ReadAll(ctx, b, "k", 3, driver.GetOptions{}); !errors.Is(err, driver.ErrTooLarge) || a.Version != put.Version {
		t.Errorf("ReadAll over the limit: %+v, %v; want ErrTooLarge with the object's version %s", a, err, put.Version)
	}
	broken := brokenBody{attrs: driver.Attrs{Version: "v1", Time: driver.ServiceTime{Date: now}}}
	if _, a, err := driver.ReadAll(ctx, broken, "k", 10, driver.GetOptions{}); err == nil || a.Version != "" || !a.Time.Date.Equal(now) {
		t.Errorf("a body that failed: %+v, %v; want its error with the service's time and no version", a, err)
	}
}

func ExampleOpen() {
	// Importing a driver package registers its scheme:
	//	import _ "github.com/mushroomdb/bucketlease/driver/s3"
	b, prefix, err := driver.Open(context.Background(), "mem://example/backups/db1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prefix, b.Capabilities().Exclusion)
	// Output: backups/db1 conditional
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
		Locate: func(u *url.URL) (driver.Location, error) {
			// The region says how to reach the bucket, not which it is.
			return driver.Location{Bucket: u.Host, Prefix: u.Path}, nil
		},
	})
}

func TestWithContext(t *testing.T) {
	sdk := errors.New("request send failed: use of closed network connection")
	ctx, cancel := context.WithCancel(context.Background())
	if driver.WithContext(ctx, sdk) != sdk {
		t.Fatal("a live context changed the error")
	}
	cancel()
	err := driver.WithContext(ctx, sdk)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, sdk) {
		t.Fatalf("%v: lost the cancellation or the SDK's error", err)
	}
	already := fmt.Errorf("wrapped: %w", context.Canceled)
	if driver.WithContext(ctx, already) != already {
		t.Fatal("an error that already matches was wrapped again")
	}
	if driver.WithContext(ctx, nil) != nil {
		t.Fatal("nil became an error")
	}
}
