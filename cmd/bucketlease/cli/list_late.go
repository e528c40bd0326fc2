package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// lateJSON is list --late's --json output.
type lateJSON struct {
	URL string `json:"url"`
	// Keys is how many objects were looked at; Truncated, that the
	// listing stopped at --max-keys.
	Keys      int             `json:"keys"`
	Truncated bool            `json:"truncated"`
	Late      []lateWriteJSON `json:"late"`
	Now       string          `json:"now"`
}

// lateWriteJSON is one late write (admin.LateWrite).
type lateWriteJSON struct {
	Key        string  `json:"key"`
	Instance   string  `json:"instance"`
	Epoch      uint64  `json:"epoch"`
	Modified   string  `json:"modified"`
	AfterEpoch uint64  `json:"after_epoch"`
	AfterBegan string  `json:"after_began"`
	LateByS    float64 `json:"late_by_s"`
}

// listLate lists the objects under loc's prefix that a holder wrote after
// its lease had passed to another (admin.Status.Late), looking at maxKeys
// objects at most, and exits exitcode.Late if it found any.
func listLate(ctx context.Context, e *env, b driver.Bucket, loc *location.Location, asJSON bool, maxKeys int, timeout time.Duration) error {
	rb := bounded.New(b, timeout, loc, "--timeout")
	st, err := admin.Inspect(ctx, bucket.New(rb, loc.Prefix), time.Now())
	if err != nil {
		return explain(loc, fmt.Errorf("%s: %w", loc.String(), err))
	}
	if len(st.Eras()) == 0 {
		return fmt.Errorf("%s: %w (state %s): late writes can be told only under a lease held by this version, on a driver that reports the service's time",
			loc.String(), admin.ErrNoEras, st.State)
	}
	res := lateJSON{URL: loc.String(), Late: []lateWriteJSON{}}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	under := strings.TrimSuffix(st.Key, admin.Key(""))
	for obj, err := range b.List(lctx, under) {
		if err == nil && res.Keys == maxKeys {
			res.Truncated = true
			break
		}
		var w admin.LateWrite
		late := false
		if err == nil {
			res.Keys++
			w, late, err = st.Late(lctx, b, obj)
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return fmt.Errorf("%s: looking for late writes did not finish within --timeout %v (after %d objects): %w", loc.String(), timeout, res.Keys, err)
		case err != nil:
			return explain(loc, fmt.Errorf("%s: %w", loc.String(), err))
		case late:
			res.Late = append(res.Late, lateWriteJSON{Key: w.Key, Instance: w.Stamp.Instance, Epoch: w.Stamp.Epoch,
				Modified: report.UTC(w.Modified), AfterEpoch: w.After.Epoch, AfterBegan: report.UTC(w.After.Began), LateByS: report.Seconds(w.By)})
		}
	}
	res.Now = time.Now().UTC().Format(time.RFC3339Nano)
	if asJSON {
		if err := report.WriteJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		printLate(e.stdout, loc, res)
	}
	if len(res.Late) > 0 {
		return exitcode.With(exitcode.Late, fmt.Errorf("%d late write(s) under %s, by a holder whose lease had passed on: restore nothing from them",
			len(res.Late), loc.String()))
	}
	return nil
}

// printLate prints list --late's findings for people.
func printLate(w io.Writer, loc *location.Location, res lateJSON) {
	if len(res.Late) == 0 {
		fmt.Fprintf(w, "No late write under %s (%d objects looked at).\n", loc.String(), res.Keys)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tWRITTEN BY\tEPOCH\tMODIFIED\tLATE BY\tAFTER EPOCH")
		for _, l := range res.Late {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\n", term.Safe(l.Key), report.HolderName(l.Instance), l.Epoch, l.Modified,
				(time.Duration(l.LateByS * float64(time.Second))).Round(time.Second), l.AfterEpoch)
		}
		tw.Flush()
	}
	if res.Truncated {
		fmt.Fprintf(w, "Stopped after %d objects (--max-keys): there may be more further on.\n", res.Keys)
	}
}
