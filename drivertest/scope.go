package drivertest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// scope is one check's view of the bucket: its own keys, removed afterwards.
type scope struct {
	b      driver.Bucket // the driver under test, through a recorder
	raw    driver.Bucket // the driver under test itself, for its optional interfaces
	opts   Options
	test   string // the test the check runs in under Run, "" under Check
	prefix string
	mu     sync.Mutex
	keys   []string
	// closers close the buckets the check opened (Options.Transport).
	closers []func()
}

// key returns a scratch key for this check and remembers it for cleanup.
func (s *scope) key(name string) string {
	k := s.prefix + "/" + name
	s.mu.Lock()
	if !slices.Contains(s.keys, k) {
		s.keys = append(s.keys, k)
	}
	s.mu.Unlock()
	return k
}

func (s *scope) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range s.keys {
		_ = s.b.Delete(ctx, k, driver.Condition{})
	}
	for _, c := range s.closers {
		c()
	}
}

// lateSettle is how long the sweep waits for abandoned writes to land.
const lateSettle = time.Second

// lateWrites are the scopes of the run's failed checks, which may have
// abandoned requests the service applies after their clean-up.
type lateWrites struct{ scopes []*scope }

func (l *lateWrites) add(s *scope) { l.scopes = append(l.scopes, s) }

// sweep waits lateSettle (unless ctx ended), then removes each scope's keys
// and everything under its prefix. Errors are ignored: results are settled.
func (l *lateWrites) sweep(ctx context.Context) {
	if len(l.scopes) == 0 {
		return
	}
	select {
	case <-time.After(lateSettle):
	case <-ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range l.scopes {
		s.mu.Lock()
		keys := slices.Clone(s.keys)
		s.mu.Unlock()
		for o, err := range s.raw.List(ctx, s.prefix+"/") {
			if err != nil {
				break
			}
			keys = append(keys, o.Key)
		}
		for _, k := range keys {
			_ = s.raw.Delete(ctx, k, driver.Condition{})
		}
	}
}
