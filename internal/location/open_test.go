package location_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mushroomdb/bucketlease/driver"
	_ "github.com/mushroomdb/bucketlease/driver/mem" // registers mem://
	"github.com/mushroomdb/bucketlease/internal/location"
)

func TestOpenReturnsPrefix(t *testing.T) {
	b, prefix, err := location.Open(context.Background(), "mem://shared/backups/db1/")
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "backups/db1" {
		t.Errorf("prefix = %q", prefix)
	}
	b2, _, err := location.Open(context.Background(), "mem://shared/other")
	if err != nil {
		t.Fatal(err)
	}
	if b != b2 {
		t.Error("two opens of one mem NAME gave different buckets")
	}
}

func TestOpenRefusesUnknownParameter(t *testing.T) {
	_, _, err := location.Open(context.Background(), "mem://b/p?regoin=us-east-1")
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
		_, _, err := location.Open(context.Background(), raw)
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
		if got := location.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseRefusesAnInvalidPrefix: a URL whose prefix no valid key can
// start with fails at Parse with ErrInvalidKey, naming the prefix quoted,
// rather than at the first request under it; a prefix with spaces, unicode
// and a trailing slash is fine.
func TestParseRefusesAnInvalidPrefix(t *testing.T) {
	for _, raw := range []string{"mem://b/a%1B%5B2J", "mem://b/a//c", "mem://b/a/./c", "mem://b/a/%FF", "mem://b/a%5Cc"} {
		_, err := location.Parse(raw)
		if !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("ParseURL(%q): %v, want ErrInvalidKey", raw, err)
			continue
		}
		if strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 || r == utf8.RuneError }) {
			t.Errorf("ParseURL(%q): %q carries the prefix raw", raw, err)
		}
	}
	l, err := location.Parse("mem://b/backups/db%201/%C3%BC/")
	if err != nil || l.Prefix != "backups/db 1/ü" {
		t.Errorf("ParseURL of a valid prefix: %v, %v", l, err)
	}
}

func Example_open() {
	// Importing a driver package registers its scheme:
	//	import _ "github.com/mushroomdb/bucketlease/driver/s3"
	b, prefix, err := location.Open(context.Background(), "mem://example/backups/db1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prefix, b.Capabilities().Exclusion)
	// Output: backups/db1 conditional
}
