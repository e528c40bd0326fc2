package location

import (
	"context"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

var redactSeeds = []string{
	"s3://bkt/p?region=eu-west-1",
	"s3://AKIAEXAMPLE:hunter2@bkt/p",
	"azblob://c/p?account=a&sig=xyz&sv=2020-01-01&se=2030&sp=rw",
	"minio://h:9000/b?access_key=AK&secret_key=SK&tls=0",
	"gs://b/p\x7f?token=s",
	"r2://acct:pw@b/p?profile=x&Session_Token=abc#frag",
	"file:///tmp/x?x-amz-signature=abc&X-Amz-Credential=def",
	"s3://b/p?token=a&token=b",
	"s3://b/p?%zz=1&password=p",
	"nosuch://user:p%40ss@b/%zz",
	"://nothing", "", "s3:opaque?key=v", "s3://[::1]:9000/b?key=v",
}

// withOtherSecrets returns raw with its password and the values of its
// secret-named query parameters replaced by other text, or raw itself when
// it has neither: re-encoding a URL with no secret in it would change its
// form, not its secrets (the input "====== %00+" once raised that false
// alarm).
func withOtherSecrets(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	changed := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "other-password")
			changed = true
		}
	}
	if q, err := url.ParseQuery(u.RawQuery); err == nil && u.RawQuery != "" {
		inQuery := false
		for k, vs := range q {
			if secretParam(k) {
				for i := range vs {
					vs[i] = "other-secret"
				}
				inQuery = true
			}
		}
		if inQuery {
			u.RawQuery = q.Encode()
			changed = true
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// FuzzRedact: Redact never panics; it never outputs a password or the value
// of a secret-named parameter; what it outputs parses as a URL whose user
// info has no password and whose secret-named parameters all read
// REDACTED; a string that does not parse comes out as its scheme at most.
func FuzzRedact(f *testing.F) {
	for _, s := range redactSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out := Redact(raw)
		// Nothing secret reaches the output: it is the same whatever the
		// secrets were.
		if other := withOtherSecrets(raw); Redact(other) != out {
			t.Fatalf("Redact depends on the secrets: Redact(%q) = %q, but Redact(%q) = %q", raw, out, other, Redact(other))
		}
		u, err := url.Parse(raw)
		if err != nil {
			if out != "REDACTED" && !(strings.HasSuffix(out, "://REDACTED") && len(out) <= 16+len("://REDACTED")) {
				t.Fatalf("Redact of the unparseable %q = %q", raw, out)
			}
			return
		}
		ou, err := url.Parse(out)
		if err != nil {
			t.Fatalf("Redact(%q) = %q, which does not parse: %v", raw, out, err)
		}
		if ou.User != nil {
			if _, has := ou.User.Password(); has || ou.User.Username() != "REDACTED" {
				t.Fatalf("Redact(%q) = %q keeps user info", raw, out)
			}
		}
		if u.RawQuery == "" {
			return
		}
		if _, err := url.ParseQuery(u.RawQuery); err != nil {
			if ou.RawQuery != "REDACTED" {
				t.Fatalf("Redact(%q) = %q keeps an unparseable query", raw, out)
			}
			return
		}
		oq, err := url.ParseQuery(ou.RawQuery)
		if err != nil {
			t.Fatalf("Redact(%q) = %q, whose query does not parse: %v", raw, out, err)
		}
		for k, vs := range oq {
			if !secretParam(k) {
				continue
			}
			for _, v := range vs {
				if v != "REDACTED" {
					t.Fatalf("Redact(%q) = %q shows %s=%q", raw, out, k, v)
				}
			}
		}
	})
}

// FuzzMuxOpen: Open never panics, never shows a secret of the URL in its
// error, whichever step refuses it (parsing, the scheme, the opener), and
// returns a prefix with no leading or trailing slash.
func FuzzMuxOpen(f *testing.F) {
	for _, s := range redactSeeds {
		f.Add(s)
	}
	f.Add("mem://b/p/?region=x")
	f.Add("MEM://user:supersecret@b//p//")
	f.Fuzz(func(t *testing.T, raw string) {
		m := map[string]driver.Scheme{}
		opener := func(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
			if _, err := driver.Params(u, "region"); err != nil {
				return nil, "", err
			}
			if u.Host == "fail" {
				return nil, "", errors.New("the service said no")
			}
			return nil, u.Path, nil
		}
		m["mem"] = driver.Scheme{Open: opener}
		m["s3"] = driver.Scheme{Open: opener}
		_, prefix, err := open(context.Background(), raw, m)
		if err != nil {
			// No secret reaches the error: it is the same whatever the
			// secrets were.
			other := withOtherSecrets(raw)
			if _, _, oerr := open(context.Background(), other, m); oerr == nil || oerr.Error() != err.Error() {
				t.Fatalf("the error depends on the secrets: Open(%q): %v; Open(%q): %v", raw, err, other, oerr)
			}
			return
		}
		if strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") {
			t.Fatalf("Open(%q) returned the prefix %q", raw, prefix)
		}
	})
}

// nestedCarriers put a secret where a pasted URL or token carries one.
var nestedCarriers = []func(secret string) string{
	func(s string) string { return "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=" + s },
	func(s string) string { return "https://user:" + s + "@h.example:9000/x" },
	func(s string) string { return "https://h.example/x?X-Amz-Signature=" + s + "&X-Amz-Date=1" },
	func(s string) string { return "sv=2022&sp=rw&sig=" + s },
	func(s string) string { return "https://h.example/x#token=" + s },
	func(s string) string {
		return "https://h.example/x?next=" + url.QueryEscape("https://i.example/?token="+s)
	},
	func(s string) string { return "https://h.example/x?key=" + s },
	func(s string) string { return s + "@h.example" },
}

// decodings returns s and every string reached from it by repeated
// percent-decoding, as a reader (or a service) might decode it.
func decodings(s string) []string {
	out := []string{s}
	for range 12 {
		next := out[len(out)-1]
		for _, f := range []func(string) (string, error){url.QueryUnescape, url.PathUnescape} {
			if d, err := f(next); err == nil && d != next {
				out = append(out, d)
				next = d
			}
		}
		if next == out[len(out)-1] && len(out) > 1 && out[len(out)-2] == next {
			break
		}
		if next == s {
			break
		}
	}
	return out
}

// FuzzRedactNested: a secret nested in a parameter value (or its name) at
// any depth of percent-encoding, in any of the places a pasted URL carries
// one, reaches neither Redact's output nor Open's error, in any
// decoding of them.
func FuzzRedactNested(f *testing.F) {
	for i := range nestedCarriers {
		for depth := range 4 {
			f.Add([]byte("hunter2!"), uint8(i), uint8(depth), "endpoint", false)
		}
	}
	f.Add([]byte("s3cr3t-value"), uint8(0), uint8(2), "url", true)
	f.Add([]byte{0xff, 0, 1, 2}, uint8(3), uint8(5), "e", false)
	f.Fuzz(func(t *testing.T, seed []byte, carrier, depth uint8, name string, asName bool) {
		if len(seed) < 4 {
			return
		}
		secret := "Zq" + hex.EncodeToString(seed) + "qZ"
		nested := nestedCarriers[int(carrier)%len(nestedCarriers)](secret)
		for i := 0; i < int(depth%7); i++ {
			if i%2 == 0 {
				nested = url.QueryEscape(nested)
			} else {
				nested = url.PathEscape(nested)
			}
		}
		if name == "" || secretParam(name) || strings.Contains(name, secret) {
			name = "endpoint"
		}
		raw := "s3://bkt/p?region=eu-west-1&" + url.QueryEscape(name) + "=" + nested
		if asName {
			raw = "s3://bkt/p?" + nested + "=1&region=x"
		}
		out := Redact(raw)
		for _, d := range decodings(out) {
			if strings.Contains(d, secret) {
				t.Fatalf("Redact(%q) = %q shows the secret (after decoding: %q)", raw, out, d)
			}
		}
		m := map[string]driver.Scheme{}
		m["s3"] = driver.Scheme{Open: func(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
			return nil, "", errors.New("the service said no")
		}}
		if _, _, err := open(context.Background(), raw, m); err != nil {
			for _, d := range decodings(err.Error()) {
				if strings.Contains(d, secret) {
					t.Fatalf("Open(%q) error %q shows the secret", raw, err)
				}
			}
		}
	})
}
