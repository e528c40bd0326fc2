package wirefault_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mushroomdb/bucketlease/drivertest/wirefault"
)

// The scenarios that put this transport under each driver's client library
// (a lost acquire and renewal, a lost conditional write, a reply without an
// ETag, a wildcard on the wire) are drivertest checks now, run through
// drivertest.Options.Transport by every driver's contract test. These tests
// show that the rig does what those checks rely on.

// service counts the writes it acts on and answers with an ETag.
func service(t *testing.T, writes *atomic.Int64) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes.Add(1)
		}
		w.Header().Set("ETag", `"e1"`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDropAfterTheServiceActed: a dropped reply is ErrReplyDropped to the
// client, the service has acted on the request, and Once drops only the
// first match.
func TestDropAfterTheServiceActed(t *testing.T) {
	var writes atomic.Int64
	url := service(t, &writes)
	tr := &wirefault.Transport{Drop: wirefault.Once(wirefault.ConditionalPut("If-None-Match", "/k"))}
	c := &http.Client{Transport: tr}
	put := func() error {
		req, _ := http.NewRequest(http.MethodPut, url+"/k", strings.NewReader("x"))
		req.Header.Set("If-None-Match", "*")
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := put(); !errors.Is(err, wirefault.ErrReplyDropped) {
		t.Fatalf("the first PUT: %v, want ErrReplyDropped", err)
	}
	if writes.Load() != 1 {
		t.Fatalf("the service acted on %d writes, want 1: the reply was dropped before it acted", writes.Load())
	}
	if err := put(); err != nil {
		t.Fatalf("the second PUT: %v; Once dropped it too", err)
	}
	if tr.Dropped() != 1 {
		t.Fatalf("Dropped() = %d, want 1", tr.Dropped())
	}
}

// TestNegativeControl: without Drop nothing is lost, so a test whose
// scenario did not happen sees Dropped() == 0.
func TestNegativeControl(t *testing.T) {
	var writes atomic.Int64
	tr := &wirefault.Transport{}
	resp, err := (&http.Client{Transport: tr}).Post(service(t, &writes)+"/k", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tr.Dropped() != 0 || writes.Load() != 1 {
		t.Fatalf("dropped %d, writes %d", tr.Dropped(), writes.Load())
	}
}

// TestSentAndReply: Sent sees each request, Reply may alter each reply kept
// (here remove its ETag) and sees no dropped one; Write tells writes from
// reads.
func TestSentAndReply(t *testing.T) {
	var writes atomic.Int64
	url := service(t, &writes)
	var sent, replies int
	tr := &wirefault.Transport{
		Sent:  func(*http.Request) { sent++ },
		Reply: func(r *http.Response) { replies++; r.Header.Del("ETag") },
		Drop:  wirefault.Write,
	}
	c := &http.Client{Transport: tr}
	resp, err := c.Get(url + "/k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("ETag") != "" {
		t.Error("Reply did not remove the ETag")
	}
	if _, err := c.Post(url+"/k", "text/plain", strings.NewReader("x")); !errors.Is(err, wirefault.ErrReplyDropped) {
		t.Errorf("POST: %v, want its reply dropped (Write)", err)
	}
	if sent != 2 || replies != 1 {
		t.Errorf("Sent saw %d requests, Reply %d replies; want 2 and 1", sent, replies)
	}
}
