package lease_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

const ttl = 30 * time.Second

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// events collects a lease's events for assertions.
type events struct {
	mu   sync.Mutex
	list []lease.Event
}

func (e *events) add(ev lease.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

func (e *events) kinds() []lease.EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var k []lease.EventKind
	for _, ev := range e.list {
		k = append(k, ev.Kind)
	}
	return k
}

func (e *events) has(k lease.EventKind) bool {
	for _, got := range e.kinds() {
		if got == k {
			return true
		}
	}
	return false
}

// logBuffer is a slog logger writing text to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// opts returns options for one instance on clock c, with no environment.
func opts(id string, c clock.Clock, ev *events) *lease.Options {
	o := &lease.Options{TTL: ttl, InstanceID: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	*o.Seams() = leaseseam.Seams{Clock: c, Getenv: func(string) string { return "" }}
	if ev != nil {
		o.OnEvent = ev.add
	}
	return o
}

func acquire(t *testing.T, b driver.Bucket, id string, c clock.Clock) *lease.Lease {
	t.Helper()
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts(id, c, nil))
	if err != nil {
		t.Fatalf("%s: acquire: %v", id, err)
	}
	return l
}

// readRecord returns the record stored in db1/LEASE.
func readRecord(t *testing.T, b driver.Bucket) (admin.Record, driver.Version, bool) {
	t.Helper()
	data, a, err := objects.ReadAll(context.Background(), b, "db1/LEASE", 1<<20, driver.GetOptions{})
	if err != nil {
		return admin.Record{}, "", false
	}
	r, err := admin.DecodeRecord(data)
	if err != nil {
		t.Fatalf("stored record: %v", err)
	}
	return r, a.Version, true
}

func put(t *testing.T, b driver.Bucket, data string) driver.Version {
	t.Helper()
	a, err := b.Put(context.Background(), "db1/LEASE", []byte(data), driver.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a.Version
}

func foreign(id string, renewed time.Time, ttlS int64) string {
	return string(admin.Record{InstanceID: id, AcquiredAt: renewed, RenewedAt: renewed, TTLSeconds: ttlS}.Encode())
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// scratchLeft counts the scratch keys (admin.IsScratchKey) left in b.
func scratchLeft(t *testing.T, b driver.Bucket) int {
	t.Helper()
	n := 0
	for o, err := range b.List(context.Background(), "") {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if admin.IsScratchKey(o.Key) {
			n++
		}
	}
	return n
}

// onLease selects the lease object of prefix db1: a path that misbehaves
// only there passes the scratch-key proof and meets the probes after the
// first write.
func onLease(key string) bool { return key == "db1/LEASE" }

// machineClocksOnly returns an empty mem bucket that reports no service
// time, like a driver without the capability: the lease judges records on
// the machines' clocks alone. Tests of that rule use it, because their
// fake clocks read days away from the real time a mem bucket would report.
func machineClocksOnly() *mem.Bucket {
	return &mem.Bucket{Now: func() time.Time { return time.Time{} }}
}
