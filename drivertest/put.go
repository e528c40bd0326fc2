package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Put and its conditions, alone and under concurrency: obligation 3.

var putChecks = []check{
	check{
		name:   "put-if-absent-new",
		expect: "IfAbsent on a missing key succeeds with a version; Get returns the same bytes and version",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			data := []byte("hello, drivertest")
			v, err := put(ctx, s.b, k, data, driver.IfAbsent())
			if err != nil {
				return want("Put IfAbsent", err, nil)
			}
			if v == "" {
				return errors.New("Put returned an empty version")
			}
			return unchanged(ctx, s.b, k, data, v)
		},
	},
	check{
		name:   "put-if-absent-existing",
		area:   areaPut,
		expect: "IfAbsent on an existing key returns ErrPrecondition and leaves the object unchanged",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("first"))
			if err != nil {
				return err
			}
			_, err = put(ctx, s.b, k, []byte("second"), driver.IfAbsent())
			if err := want("second Put IfAbsent", err, driver.ErrPrecondition); err != nil {
				return err
			}
			return unchanged(ctx, s.b, k, []byte("first"), v)
		},
	},
	check{
		name:   "put-if-match-current",
		expect: "IfMatch with the current version succeeds with a new version that Get agrees with",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v1, err := seed(ctx, s.b, k, []byte("one"))
			if err != nil {
				return err
			}
			v2, err := put(ctx, s.b, k, []byte("two"), driver.IfMatch(v1))
			if err != nil {
				return want("Put IfMatch(current)", err, nil)
			}
			if v2 == "" || v2 == v1 {
				return fmt.Errorf("the new version %q should differ from the old %q", v2, v1)
			}
			return unchanged(ctx, s.b, k, []byte("two"), v2)
		},
	},
	check{
		name:   "put-if-match-stale",
		area:   areaPut,
		expect: "IfMatch with a superseded version returns ErrPrecondition and leaves the object unchanged",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v1, v2, err := seedOverwritten(ctx, s.b, k)
			if err != nil {
				return err
			}
			_, err = put(ctx, s.b, k, []byte("three"), driver.IfMatch(v1))
			if err := want("Put IfMatch(stale)", err, driver.ErrPrecondition); err != nil {
				return err
			}
			return unchanged(ctx, s.b, k, []byte("two"), v2)
		},
	},
	check{
		name:   "put-if-match-made-up",
		area:   areaPut,
		expect: "IfMatch with a well-formed version the object never had returns ErrPrecondition; object unchanged",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("one"))
			if err != nil {
				return err
			}
			_, err = put(ctx, s.b, k, []byte("two"), driver.IfMatch(objects.FakeVersion(v)))
			if err := want("Put IfMatch(made-up)", err, driver.ErrPrecondition); err != nil {
				return err
			}
			return unchanged(ctx, s.b, k, []byte("one"), v)
		},
	},
	check{
		name:   "put-if-match-missing",
		area:   areaPut,
		expect: "IfMatch on a missing key returns ErrPrecondition (not ErrNotExist) and creates nothing",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			other := s.key("other")
			v, err := seed(ctx, s.b, other, []byte("x"))
			if err != nil {
				return err
			}
			_, err = put(ctx, s.b, k, []byte("ghost"), driver.IfMatch(v))
			if err := want("Put IfMatch on a missing key", err, driver.ErrPrecondition); err != nil {
				return err
			}
			return absent(ctx, s.b, k)
		},
	},
	check{
		name:   "put-large-refused",
		area:   areaPut,
		expect: "a 17 MiB body under IfMatch(made-up) or IfAbsent is refused, never stored; object unchanged",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("small"))
			if err != nil {
				return err
			}
			big := bytes.Repeat([]byte{'L'}, largeSize)
			_, err = put(ctx, s.b, k, big, driver.IfMatch(objects.FakeVersion(v)))
			if err := notStored("large Put IfMatch(made-up)", err); err != nil {
				return err
			}
			_, err = put(ctx, s.b, k, big, driver.IfAbsent())
			if err := notStored("large Put IfAbsent on an existing key", err); err != nil {
				return err
			}
			return unchanged(ctx, s.b, k, []byte("small"), v)
		},
	},
	check{
		name:    "race-if-absent",
		area:    areaPut,
		applies: conditional,
		expect:  "16 concurrent IfAbsent writers on one key: exactly one succeeds, the rest get ErrPrecondition",
		run:     raceIfAbsent,
	},
	check{
		name:    "cas-counter",
		area:    areaPut,
		applies: conditional,
		expect:  "5 workers doing 10 compare-and-swap increments each on one counter end at exactly 50",
		run:     casCounter,
	},
}

// largeSize is above the common SDKs' single-request thresholds (16 MiB),
// catching a big body slipping into a multipart upload without its condition.
const largeSize = 17 << 20

// notStored fails a large conditional write that reported success or
// ErrNotExist. A service may answer a refusal before reading a large body
// and hang up (MinIO under load), so a broken connection is still a refusal
// once the caller finds the object unchanged.
func notStored(what string, err error) error {
	switch {
	case err == nil:
		return fmt.Errorf("%s: success", what)
	case errors.Is(err, driver.ErrNotExist):
		return fmt.Errorf("%s: ErrNotExist, where a refusal is ErrPrecondition", what)
	}
	return nil
}

// raced is what the writers of a race got: winners with their versions,
// unknown outcomes, and other errors as outcome text.
type raced struct {
	winners []int
	vers    map[int]driver.Version
	unknown []int
	odd     []string
}

// race runs write(0) to write(n-1) at once and sorts their outcomes.
func race(n int, write func(i int) (driver.Version, error)) raced {
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		r     = raced{vers: map[int]driver.Version{}}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			v, err := write(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				r.winners = append(r.winners, i)
				r.vers[i] = v
			case errors.Is(err, driver.ErrOutcomeUnknown):
				// The contract's answer for a write that may have landed:
				// the object says whether it did.
				r.unknown = append(r.unknown, i)
			case !errors.Is(err, driver.ErrPrecondition):
				r.odd = append(r.odd, outcome(err))
			}
		}()
	}
	close(start)
	wg.Wait()
	return r
}

func raceIfAbsent(ctx context.Context, s *scope) error {
	const n = 16
	k := s.key("contested")
	r := race(n, func(i int) (driver.Version, error) {
		return put(ctx, s.b, k, []byte("writer "+strconv.Itoa(i)), driver.IfAbsent())
	})
	if len(r.odd) > 0 {
		return fmt.Errorf("losers got errors other than ErrPrecondition: %v", r.odd)
	}
	data, _, err := read(ctx, s.b, k)
	if err != nil {
		return fmt.Errorf("Get after the race: %s", outcome(err))
	}
	winners := r.winners
	for _, i := range r.unknown {
		if string(data) == "writer "+strconv.Itoa(i) {
			winners = append(winners, i)
		}
	}
	if len(winners) != 1 {
		return fmt.Errorf("%d writers succeeded (%v); exactly one should", len(winners), winners)
	}
	if string(data) != "writer "+strconv.Itoa(winners[0]) {
		return fmt.Errorf("the object holds %q, but the winner was writer %d", data, winners[0])
	}
	return nil
}

// counter is casCounter's body: the count, then each landed increment's
// token, so a worker with an unknown outcome can tell whether it landed.
type counter struct {
	n      int
	tokens []string
}

func parseCounter(data []byte) (counter, error) {
	lines := strings.Split(string(data), "\n")
	n, err := strconv.Atoi(lines[0])
	if err != nil {
		return counter{}, fmt.Errorf("the counter holds %q, not a number", clip(data))
	}
	return counter{n: n, tokens: lines[1:]}, nil
}

func (c counter) bytes() []byte {
	return []byte(strings.Join(append([]string{strconv.Itoa(c.n)}, c.tokens...), "\n"))
}

func casCounter(ctx context.Context, s *scope) error {
	const workers, increments, maxAttempts = 5, 10, 2000
	k := s.key("counter")
	if _, err := seed(ctx, s.b, k, []byte("0")); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, attempts := 0, 0
			for done < increments {
				if attempts++; attempts > maxAttempts {
					errs <- fmt.Errorf("a worker made %d attempts for %d increments", maxAttempts, increments)
					return
				}
				data, v, err := read(ctx, s.b, k)
				if err != nil {
					errs <- fmt.Errorf("Get counter: %s", outcome(err))
					return
				}
				c, err := parseCounter(data)
				if err != nil {
					errs <- err
					return
				}
				token := fmt.Sprintf("w%d-a%d", w, attempts)
				c.n++
				c.tokens = append(c.tokens, token)
				// Widen the read-to-write window as latency would, so a store
				// ignoring IfMatch loses increments even when fast.
				time.Sleep(time.Duration(mrand.IntN(300)) * time.Microsecond)
				_, err = put(ctx, s.b, k, c.bytes(), driver.IfMatch(v))
				switch {
				case err == nil:
					done++
				case errors.Is(err, driver.ErrPrecondition):
					// lost the race; read again
				case errors.Is(err, driver.ErrOutcomeUnknown):
					data, _, err := read(ctx, s.b, k)
					if err != nil {
						errs <- fmt.Errorf("Get counter: %s", outcome(err))
						return
					}
					if now, err := parseCounter(data); err == nil && slices.Contains(now.tokens, token) {
						done++
					}
				default:
					errs <- fmt.Errorf("Put IfMatch: %s", outcome(err))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	data, _, err := read(ctx, s.b, k)
	if err != nil {
		return fmt.Errorf("Get counter: %s", outcome(err))
	}
	c, err := parseCounter(data)
	if err != nil {
		return err
	}
	if c.n != workers*increments || len(c.tokens) != workers*increments {
		return fmt.Errorf("the counter ended at %d with %d increments recorded, not %d: increments were lost or doubled",
			c.n, len(c.tokens), workers*increments)
	}
	return nil
}
