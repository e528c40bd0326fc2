package backupworker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/examples/backupworker"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Example is a small backup worker under the lease: three backups of two
// chunks each (one chunk shared by all), streamed through the fenced
// bucket, then a retention pass that keeps the newest two, and a restore.
func Example() {
	ctx := context.Background()
	store := bucket.New(mem.New(), "db1") // or bucket.Open(ctx, "s3://…/db1")
	l, err := lease.Acquire(ctx, store, &lease.Options{InstanceID: "worker-a",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(context.WithoutCancel(ctx))
	work, stop := l.Fence(ctx)
	defer stop()
	go l.Keep(work)

	b := l.Bucket() // keys relative to db1/, writes fenced
	for seq := 1; seq <= 3; seq++ {
		chunks := []io.Reader{strings.NewReader("the shared base"), strings.NewReader(fmt.Sprintf("changes of day %d", seq))}
		if err := backupworker.BackupOnce(work, b, seq, chunks); err != nil {
			fmt.Println("backup:", err)
			return
		}
	}
	st, err := admin.Inspect(ctx, store, time.Now())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := backupworker.Retain(work, b, st, 2); err != nil {
		fmt.Println("retention:", err)
		return
	}
	for o, err := range store.Driver().List(ctx, "db1/") {
		if err != nil {
			fmt.Println(err)
			return
		}
		if strings.HasPrefix(o.Key, "db1/chunks/") {
			o.Key = "db1/chunks/…"
		}
		fmt.Println(o.Key)
	}
	latest, _, _ := store.ReadAll(ctx, "LATEST", 1<<10)
	fmt.Println("LATEST ->", string(latest))
	m, err := backupworker.RestoreLatest(ctx, store, st) // a reader: no lease needed
	fmt.Println("restore:", m.Seq, len(m.Chunks), "chunks", err)
	// Output:
	// db1/LATEST
	// db1/LEASE
	// db1/chunks/…
	// db1/chunks/…
	// db1/chunks/…
	// db1/manifests/00000002.json
	// db1/manifests/00000003.json
	// LATEST -> manifests/00000003.json
	// restore: 3 2 chunks <nil>
}
