package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/mushroomdb/bucketlease/bucket"
	_ "github.com/mushroomdb/bucketlease/driver/mem" // registers mem://
)

// A restore reads what a backup wrote, with the version it read, and a
// writer replaces a manifest only if it is still the one it read.
func Example() {
	ctx := context.Background()
	b, err := bucket.Open(ctx, "mem://example/backups/db1")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	if _, err := b.Put(ctx, "LATEST", []byte("v1"), &bucket.PutOptions{If: bucket.IfAbsent()}); err != nil {
		log.Fatal(err)
	}
	data, attrs, err := b.ReadAll(ctx, "LATEST", 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %s\n", data)

	_, err = b.Put(ctx, "LATEST", []byte("v2"), &bucket.PutOptions{If: bucket.IfMatch(attrs.Version)})
	fmt.Println("replace what was read:", err)
	_, err = b.Put(ctx, "LATEST", []byte("v3"), &bucket.PutOptions{If: bucket.IfMatch(attrs.Version)})
	fmt.Println("replace it again:", errors.Is(err, bucket.ErrPrecondition))
	// Output:
	// read v1
	// replace what was read: <nil>
	// replace it again: true
}
