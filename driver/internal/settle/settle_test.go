package settle_test

import (
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver/internal/settle"
)

// Judge: the write's bytes are the write's; other bytes prove
// that nothing landed only when the service last modified them before the
// first attempt, judged on the service's clock and to the second.
func TestJudge(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sent := time.Now() // elapsed: about nothing
	for _, c := range []struct {
		name string
		rb   settle.ReadBack
		want settle.Result
	}{
		{"ours", settle.ReadBack{Exists: true, Data: []byte("mine"), Version: "v", Modified: now, Now: now}, settle.Ours},
		{"missing", settle.ReadBack{}, settle.Unknown},
		{"the same bytes, stored before the first attempt", settle.ReadBack{Exists: true, Data: []byte("mine"), Version: "v", Modified: now.Add(-5 * time.Second), Now: now}, settle.NotApplied},
		{"other, old", settle.ReadBack{Exists: true, Data: []byte("old"), Version: "v", Modified: now.Add(-5 * time.Second), Now: now}, settle.NotApplied},
		{"other, this second", settle.ReadBack{Exists: true, Data: []byte("old"), Version: "v", Modified: now, Now: now}, settle.Unknown},
		{"other, a second ago (within Last-Modified's granularity)", settle.ReadBack{Exists: true, Data: []byte("old"), Version: "v", Modified: now.Add(-999 * time.Millisecond), Now: now}, settle.Unknown},
		{"other, no Date", settle.ReadBack{Exists: true, Data: []byte("old"), Version: "v", Modified: now.Add(-time.Hour)}, settle.Unknown},
	} {
		if got := settle.Judge([]byte("mine"), sent, c.rb); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// An object older than the service's clock says, but not older than
	// the time since the first attempt: it may be this write overwritten.
	long := time.Now().Add(-time.Minute)
	rb := settle.ReadBack{Exists: true, Data: []byte("old"), Version: "v", Modified: now.Add(-30 * time.Second), Now: now}
	if got := settle.Judge([]byte("mine"), long, rb); got != settle.Unknown {
		t.Errorf("an object modified after the first attempt: %v, want Unknown", got)
	}
}
