package lease_test

import (
	"context"
	"fmt"
	"path"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	_ "github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestWorkerKeysOnAFileURL: file:// opens with the empty prefix (the
// directory is the bucket); the worker's relative keys land inside it.
func TestWorkerKeysOnAFileURL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i, url := range []string{"file://" + dir, "file://" + dir + "/"} {
		b, prefix, err := location.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		l, err := lease.Acquire(ctx, bucket.New(b, prefix), opts("me", nil, nil))
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		key := fmt.Sprintf("chunks/%04d", i)
		if _, err := l.Bucket().Driver().Put(ctx, key, []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatalf("%s: put %s: %v", url, key, err)
		}
		if _, _, err := b.Get(ctx, path.Join(l.Prefix(), key), driver.GetOptions{}); err != nil {
			t.Fatalf("%s: the chunk is not at %s: %v", url, path.Join(l.Prefix(), key), err)
		}
		if _, err := l.Bucket().Driver().Put(ctx, "LEASE", []byte("x"), driver.PutOptions{}); err == nil {
			t.Fatalf("%s: the worker's bucket overwrote the lease object", url)
		}
		if _, err := l.Bucket().Driver().Put(ctx, "/abs", []byte("x"), driver.PutOptions{}); err == nil {
			t.Fatalf("%s: the worker's bucket took a key with a leading slash", url)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
