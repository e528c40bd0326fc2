package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// Streamed writes whose condition must hold at the commit, and one winner
// among concurrent IfAbsent writers.

// refusedAtCommit checks a streamed write whose condition fails: the error
// is ErrPrecondition, names the abort, and nothing changed.
func refusedAtCommit(ctx context.Context, s *scope, k string, cond driver.Condition, keep []byte, v driver.Version) error {
	before, err := s.pendingBefore(ctx, k)
	if err != nil {
		return err
	}
	_, err = stream(ctx, s.b, k, newBody(1, streamBig), cond, streamOpts(nil))
	if sk := notStreamed(err); sk != nil {
		return sk
	}
	if err := want("PutStream ("+cond.String()+") of a body of three parts", err, driver.ErrPrecondition); err != nil {
		return err
	}
	var ue *multipart.UploadError
	if !errors.As(err, &ue) {
		return fmt.Errorf("the refusal does not say what became of the upload (no *multipart.UploadError in its chain): %v", err)
	}
	if uerr := unchanged(ctx, s.b, k, keep, v); uerr != nil {
		return uerr
	}
	return s.nonePending(ctx, k, before, err)
}

func streamIfAbsentExisting(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("first"))
	if err != nil {
		return err
	}
	return refusedAtCommit(ctx, s, k, driver.IfAbsent(), []byte("first"), v)
}

func streamIfMatchStale(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v1, v2, err := seedOverwritten(ctx, s.b, k)
	if err != nil {
		return err
	}
	return refusedAtCommit(ctx, s, k, driver.IfMatch(v1), []byte("two"), v2)
}

func streamRace(ctx context.Context, s *scope) error {
	const n = 8
	const size = driver.MinPartSize + 1<<20 // two parts each
	k := s.key("contested")
	var (
		mu          sync.Mutex
		unsupported error
	)
	r := race(n, func(i int) (driver.Version, error) {
		v, err := stream(ctx, s.b, k, newBody(uint64(100+i), size), driver.IfAbsent(), streamOpts(nil))
		if sk := notStreamed(err); sk != nil {
			mu.Lock()
			unsupported = sk
			mu.Unlock()
		}
		return v, err
	})
	if unsupported != nil {
		return unsupported
	}
	if len(r.odd) > 0 {
		return fmt.Errorf("losers got errors other than ErrPrecondition: %v", r.odd)
	}
	winners, vers := r.winners, r.vers
	if len(r.unknown) > 0 && len(winners) == 0 {
		// An unknown outcome is the object's to tell.
		for _, i := range r.unknown {
			if holdsBody(ctx, s.b, k, uint64(100+i), size, "") == nil {
				winners = append(winners, i)
			}
		}
	}
	if len(winners) != 1 {
		return fmt.Errorf("%d streamed IfAbsent writers succeeded (%v); exactly one should", len(winners), winners)
	}
	if err := holdsBody(ctx, s.b, k, uint64(100+winners[0]), size, vers[winners[0]]); err != nil {
		return fmt.Errorf("the object is not the winner's (writer %d) whole body: %w", winners[0], err)
	}
	return nil
}
