package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	_ "github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

// A backup worker: take the lease, keep it renewed in the background, and
// write through the lease's bucket, which refuses to start a write once the
// holder is fenced and cancels one in flight at that moment.
func Example_worker() {
	ctx := context.Background()
	b, err := bucket.Open(ctx, "mem://example/backups/db1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := lease.Acquire(ctx, b, &lease.Options{Logger: quiet})
	if errors.Is(err, lease.ErrHeld) {
		fmt.Println("another machine is writing this backup:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(context.WithoutCancel(ctx))

	work, stop := l.Fence(ctx) // cancelled when the lease ends
	defer stop()
	go l.Keep(work)

	w := l.Bucket() // keys relative to the prefix
	// Immutable objects: If-None-Match: *, so a stale writer cannot replace one.
	if _, err := w.Put(work, "chunks/0001", []byte("…"), &bucket.PutOptions{If: bucket.IfAbsent()}); err != nil {
		fmt.Println(err)
		return
	}
	// The manifest: If-Match on the version last written or read (here: new).
	if _, err := w.Put(work, "LATEST", []byte("chunks/0001"), &bucket.PutOptions{If: bucket.IfAbsent()}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("backup written under", l.Key(), "with", l.Exclusion(), "exclusion")
	// Output: backup written under backups/db1/LEASE with conditional exclusion
}

// A second instance is refused, and told who holds the lease and when it
// could be taken over.
func ExampleHeldError() {
	ctx := context.Background()
	b, _ := bucket.Open(ctx, "mem://example-held/db1")
	defer b.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, _ := lease.Acquire(ctx, b, &lease.Options{InstanceID: "machine-a", Logger: quiet})
	defer first.Release(ctx)

	_, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: "machine-b", Logger: quiet})
	var held *lease.HeldError
	if errors.As(err, &held) {
		fmt.Println("held by", held.Holder(), "state", held.State)
	}
	// Output: held by machine-a state fresh
}

// Keys through Lease.Bucket are relative to the prefix, so one line of
// worker code is right for every form of URL: a whole bucket, a prefix, and
// a prefix with a trailing slash name the same keys, and only one LEASE.
func ExampleLease_Bucket() {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, url := range []string{"mem://shapes-a", "mem://shapes-b/backups/db1", "mem://shapes-c/backups/db1/"} {
		b, err := bucket.Open(ctx, url)
		if err != nil {
			fmt.Println(err)
			return
		}
		l, err := lease.Acquire(ctx, b, &lease.Options{Logger: quiet})
		if err != nil {
			fmt.Println(err)
			return
		}
		if _, err := l.Bucket().Put(ctx, "chunks/0001", []byte("…"), &bucket.PutOptions{If: bucket.IfAbsent()}); err != nil {
			fmt.Println(err)
			return
		}
		_, _, err = b.Driver().Get(ctx, path.Join(l.Prefix(), "chunks/0001"), driver.GetOptions{})
		fmt.Printf("%-30s lease %-20s chunk stored: %v\n", url, l.Key(), err == nil)
		l.Release(ctx)
	}
	// Output:
	// mem://shapes-a                 lease LEASE                chunk stored: true
	// mem://shapes-b/backups/db1     lease backups/db1/LEASE    chunk stored: true
	// mem://shapes-c/backups/db1/    lease backups/db1/LEASE    chunk stored: true
}

// backupUnderLease is the README's example, character for character
// (TestReadmeExampleIsThisOne keeps them in step, and runs it on stores
// where it must not back up): it takes the lease on url's prefix as instance id and runs backup
// under it, through the lease's bucket, or returns an error and runs
// nothing.
func backupUnderLease(ctx context.Context, url, id string, backup func(context.Context, *bucket.Bucket) error) error {
	b, err := bucket.Open(ctx, url) // keys relative to the URL's prefix
	if err != nil {
		return err
	}
	defer b.Close()
	l, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: id}) // Wait: true waits for a held lease
	if errors.Is(err, lease.ErrHeld) {
		// another machine holds it; err (a *lease.HeldError) names it and says
		// when the lease could be taken over
		return fmt.Errorf("backup skipped: %w", err)
	}
	if err != nil {
		return err // lease.ErrPreconditionsIgnored among others: no lease, no backup
	}
	defer l.Release(context.WithoutCancel(ctx))

	work, stop := l.Fence(ctx) // cancelled the moment the holder must stop
	defer stop()
	go l.Keep(work) // renews every TTL/3, retries until the fence

	// l.Bucket() refuses writes once fenced and cancels those in flight;
	// its keys are relative to the prefix.
	return backup(work, l.Bucket())
}

// The README's example on an in-memory bucket, with a backup that writes
// one immutable chunk.
func Example_readme() {
	ctx := context.Background()
	err := backupUnderLease(ctx, "mem://readme/db1", "machine-a", func(ctx context.Context, w *bucket.Bucket) error {
		_, err := w.Put(ctx, "chunks/0001", []byte("…"), &bucket.PutOptions{If: bucket.IfAbsent()}) // If-None-Match: *
		return err
	})
	fmt.Println(err)
	// Output: <nil>
}
