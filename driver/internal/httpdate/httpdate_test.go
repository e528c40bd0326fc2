package httpdate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	want := time.Date(2026, 12, 4, 21, 17, 48, 0, time.UTC)
	if got := Parse("Fri, 04 Dec 2026 21:17:48 GMT"); !got.Equal(want) {
		t.Errorf("Parse = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "yesterday", "2026-12-04T21:17:48Z"} {
		if got := Parse(bad); !got.IsZero() {
			t.Errorf("Parse(%q) = %v, want the zero time", bad, got)
		}
	}
}

// TestTransportRecordsTheLastDate: a request under a Capture's context
// records its response's Date there, the last response's when there are
// several; a request under another context records nothing.
func TestTransportRecordsTheLastDate(t *testing.T) {
	dates := []string{"Fri, 04 Dec 2026 21:00:01 GMT", "Fri, 04 Dec 2026 21:00:02 GMT", ""}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := dates[n%len(dates)]; d != "" {
			w.Header()["Date"] = []string{d}
		} else {
			w.Header()["Date"] = nil // no Date at all
		}
		n++
		w.WriteHeader(http.StatusPreconditionFailed)
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(nil)}
	get := func(ctx context.Context) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var c Capture
	ctx := c.Context(t.Context())
	get(ctx)
	if got := c.Date(); !got.Equal(Parse(dates[0])) {
		t.Errorf("after one response: %v, want %s", got, dates[0])
	}
	get(ctx)
	if got := c.Date(); !got.Equal(Parse(dates[1])) {
		t.Errorf("after two responses: %v, want the last one's, %s", got, dates[1])
	}
	get(ctx) // no Date: the last Date stays
	if got := c.Date(); !got.Equal(Parse(dates[1])) {
		t.Errorf("after a response without a Date: %v, want %s kept", got, dates[1])
	}
	get(t.Context()) // answered with dates[0], outside the capture's context
	if got := c.Date(); !got.Equal(Parse(dates[1])) {
		t.Errorf("after a request outside the capture's context: %v, want %s kept", got, dates[1])
	}
}
