package driver

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzParams: Params accepts exactly the queries whose every parameter is
// allowed and given once, returns them as url.ParseQuery reads them, and
// its errors never show a parameter's value or a name long enough to be a
// pasted secret.
func FuzzParams(f *testing.F) {
	f.Add("region=eu-west-1", "region,profile")
	f.Add("regoin=eu-west-1", "region")
	f.Add("region=a&region=b", "region")
	f.Add("a=1", "")
	f.Add("%zz=1", "region")
	f.Add("AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY=1", "region")
	f.Add("secret_key=hunter2hunter2", "region")
	f.Fuzz(func(t *testing.T, rawQuery, allowedCSV string) {
		var allowed []string
		for _, a := range strings.Split(allowedCSV, ",") {
			if a != "" {
				allowed = append(allowed, a)
			}
		}
		q, err := Params(&url.URL{RawQuery: rawQuery}, allowed...)
		want, perr := url.ParseQuery(rawQuery)
		if err == nil {
			if perr != nil {
				t.Fatalf("Params accepted %q, which does not parse: %v", rawQuery, perr)
			}
			for k, vs := range q {
				if len(vs) != 1 || !contains(allowed, k) || want.Get(k) != vs[0] {
					t.Fatalf("Params(%q, %q) returned %s=%q", rawQuery, allowed, k, vs)
				}
			}
			if len(q) != len(want) {
				t.Fatalf("Params(%q) returned %d parameters of %d", rawQuery, len(q), len(want))
			}
			return
		}
		if perr != nil {
			return
		}
		for k := range want {
			// A long unknown name is clipped (it may be a pasted secret);
			// the allowed names are the driver's own and printed whole.
			if len(k) > 40 && strings.Contains(err.Error(), k) && !strings.Contains(strings.Join(allowed, ", "), k) {
				t.Fatalf("the error shows a %d-character parameter name in full: %v", len(k), err)
			}
		}
		// No value reaches the error: it is the same whatever the values.
		other := url.Values{}
		for k, vs := range want {
			for i := range vs {
				other.Add(k, "other-value-"+strconv.Itoa(i))
			}
		}
		if _, oerr := Params(&url.URL{RawQuery: other.Encode()}, allowed...); oerr == nil || oerr.Error() != err.Error() {
			t.Fatalf("the error depends on the values: %q gives %v, %q gives %v", rawQuery, err, other.Encode(), oerr)
		}
		if len(want) == 0 {
			t.Fatalf("Params refused %q, which has no parameter: %v", rawQuery, err)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
