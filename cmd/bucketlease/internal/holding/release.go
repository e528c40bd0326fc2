package holding

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// HoldUntilSignal holds the lease until a signal or until it ends.
func HoldUntilSignal(l *lease.Lease, sigs <-chan os.Signal, gone <-chan string, p *report.Printer) error {
	select {
	case s := <-sigs:
		p.Note("signal", fmt.Sprintf("received %s; releasing the lease", supervise.SignalName(s)), func(r *report.Record) { r.Signal = supervise.SignalName(s) })
		return nil
	case <-l.Done():
		return leaseEnded(l, p)
	case why := <-gone:
		p.Note("lease-gone", why+"; another instance may take the lease at once", func(r *report.Record) { r.Key = l.Key() })
		return exitcode.With(exitcode.LeaseEnded, fmt.Errorf("the lease %s ended while held: %s", l.Key(), why))
	}
}

// WatchInterval is how often hold reads its lease object back: a thirtieth
// of the TTL, from 100 ms to 1 s.
func WatchInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/30, 100*time.Millisecond), time.Second)
}

// Watch reads the lease object every interval (never if 0) while ctx
// lasts, and sends once why the lease is no longer this holder's: the
// object is gone, names another instance, or is no lease record. A tool
// that deleted it has let the next contender in without waiting for this
// holder's fence. A failed read is no evidence and is ignored.
func Watch(ctx context.Context, l *lease.Lease, b driver.Bucket, prefix string, interval time.Duration) <-chan string {
	out := make(chan string, 1)
	if interval <= 0 {
		return out
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.Done():
				return
			case <-t.C:
			}
			before := leaseseam.Inside(l).Version
			rctx, cancel := context.WithTimeout(ctx, max(interval, leaseseam.Inside(l).TTL/10))
			st, err := admin.Inspect(rctx, bucket.New(b, prefix), time.Now())
			cancel()
			if err != nil || ctx.Err() != nil {
				continue
			}
			if !l.MayWrite() { // fenced or ended meanwhile: that is what hold reports
				return
			}
			switch why, foreign := notOurs(st, l, before); {
			case foreign:
				// A takeover or break: renew now so the lease learns it
				// lost without waiting for the next renewal.
				rctx, cancel := l.Fence(ctx)
				_ = leaseseam.Renew(rctx, l)
				cancel()
				if l.Err() != nil {
					return
				}
			case why != "":
				out <- why
				return
			}
		}
	}()
	return out
}

// notOurs says why st shows a lease object that is gone or no lease
// record, or "" if it may still be l's (a version l wrote, or l's instance
// with a renewal's reply on its way). foreign reports another instance's
// record, which the lease judges at a renewal.
func notOurs(st admin.Status, l *lease.Lease, before driver.Version) (why string, foreign bool) {
	if st.Version == before || st.Version == leaseseam.Inside(l).Version {
		return "", false
	}
	switch {
	case st.Record != nil && st.Record.InstanceID != l.InstanceID():
		return "", true
	case st.State == admin.Free:
		return fmt.Sprintf("its lease object %s was deleted by something other than bucketlease (a sync tool with --delete, a clean-up)", st.Key), false
	case st.Record == nil:
		return fmt.Sprintf("its lease object %s was replaced by something that is not a lease record (%s)", st.Key, st.Reason), false
	}
	return "", false
}

// leaseEnded is the error for a lease fenced, lost or broken while held.
func leaseEnded(l *lease.Lease, p *report.Printer) error {
	return exitcode.With(exitcode.LeaseEnded, fmt.Errorf("the lease %s ended while held: %s", l.Key(), endReason(l, p)))
}

// endReason says why the lease ended, in words.
func endReason(l *lease.Lease, p *report.Printer) string {
	err := l.Err()
	switch {
	case p.Broken():
		return "it was broken by an operator (bucketlease break)"
	case errors.Is(err, lease.ErrInstanceInUse):
		return err.Error() + "; give each process its own --instance-id"
	case err == nil:
		return "it is held"
	default:
		return err.Error()
	}
}

// ErrInterrupted matches the errors for a signal that came before the
// lease was held (errors.Is).
var ErrInterrupted = errors.New("interrupted")

// Release releases the lease after result, reports the release on p once
// it happened, and returns the error to exit with: result, or the release
// failure (exit 125, with explain's hints) if the lease had not ended.
func Release(l *lease.Lease, loc *location.Location, b driver.Bucket, prefix string, p *report.Printer, result error, explain func(error) error) error {
	endedBefore := l.Err()
	ctx, cancel := context.WithTimeout(context.Background(), max(leaseseam.Inside(l).TTL, 10*time.Second))
	defer cancel()
	relErr := l.Release(ctx)
	if relErr != nil {
		relErr = explain(fmt.Errorf("could not release the lease %s: %w; it stays until its TTL (%v) runs out", l.Key(), relErr, leaseseam.Inside(l).TTL))
		p.Note("release-failed", relErr.Error(), func(r *report.Record) { r.Key, r.Error = l.Key(), relErr.Error() })
		code, _ := exitcode.Of(result)
		if code == exitcode.LeaseEnded || errors.Is(result, ErrInterrupted) {
			return errors.Join(result, relErr)
		}
		if result != nil {
			if ee := (*exitcode.Error)(nil); errors.As(result, &ee) && ee.Err == nil {
				relErr = fmt.Errorf("%w (the command %s)", relErr, exitText(ee.Code))
			} else {
				relErr = fmt.Errorf("%w; before that: %v", relErr, result)
			}
		}
		return exitcode.With(exitcode.ReleaseFailed, relErr)
	}
	if errors.Is(endedBefore, lease.ErrLost) {
		return result // lost: there was nothing of ours to release
	}
	// Say "released" only if the lease object now says so.
	st, err := admin.Inspect(ctx, bucket.New(b, prefix), time.Now())
	switch {
	case err != nil:
		p.Note("released", fmt.Sprintf("released lease %s (could not read it back: %v)", l.Key(), err), func(r *report.Record) { r.Key = l.Key() })
	case st.Record != nil && st.Record.InstanceID == l.InstanceID() && st.State == admin.Released:
		p.Note("released", fmt.Sprintf("released lease %s", l.Key()), func(r *report.Record) { r.Key = l.Key() })
	case st.State == admin.Free:
		// Release never deletes it: something else did.
		p.Note("not-released", fmt.Sprintf("did not release lease %s: its lease object is gone, deleted by something other than bucketlease; there was nothing of ours to release", l.Key()),
			func(r *report.Record) { r.Key, r.State = l.Key(), st.State.String() })
	case st.Record == nil:
		p.Note("not-released", fmt.Sprintf("did not release lease %s: its lease object is no longer a lease record (%s); left alone", l.Key(), st.Reason),
			func(r *report.Record) { r.Key, r.State = l.Key(), st.State.String() })
	default:
		p.Note("not-released", fmt.Sprintf("did not release lease %s: it is %s, held by %s, no longer ours", l.Key(), st.State, HolderText(st.Holder())),
			func(r *report.Record) { r.Key, r.Holder, r.State = l.Key(), st.Holder(), st.State.String() })
	}
	return result
}

// exitText describes a command's exit code.
func exitText(code int) string {
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("was killed by signal %s", supervise.SignalName(syscall.Signal(code-128)))
	}
	return fmt.Sprintf("exited with status %d", code)
}

// HolderText names a holder for people, saying who break is.
func HolderText(id string) string {
	if id == admin.BreakerID {
		return "an operator (bucketlease break)"
	}
	return "instance " + term.Safe(id)
}
