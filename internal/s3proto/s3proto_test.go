package s3proto

import (
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

func TestRefused(t *testing.T) {
	match, absent, none := driver.IfMatch(`"abc"`), driver.IfAbsent(), driver.Condition{}
	cases := []struct {
		code   string
		status int
		cond   driver.Condition
		want   bool
	}{
		{"PreconditionFailed", 412, absent, true},
		{"", 412, match, true},
		{"ConditionalRequestConflict", 409, absent, true},
		{"NoSuchKey", 404, match, true},
		{"NoSuchKey", 404, absent, false},
		{"NoSuchBucket", 404, match, false},
		{"PreconditionFailed", 412, none, false},
		{"AccessDenied", 403, match, false},
		{"InternalError", 500, absent, false},
	}
	for _, c := range cases {
		if got := Refused(c.code, c.status, c.cond); got != c.want {
			t.Errorf("Refused(%q, %d, %v) = %v, want %v", c.code, c.status, c.cond, got, c.want)
		}
	}
}

func TestMissing(t *testing.T) {
	if !Missing("NoSuchKey", 404) || !Missing("", 404) || Missing("NoSuchBucket", 404) || Missing("AccessDenied", 403) {
		t.Fatal("Missing")
	}
}
