package gcs_test

import (
	"context"
	"fmt"

	"cloud.google.com/go/storage"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// Opening by URL: importing the package registers gs://. Opening sends no
// request, so this runs without a server.
func Example_open() {
	b, prefix, err := location.Open(context.Background(), "gs://my-bucket/backups/db1?endpoint=http://127.0.0.1:4443")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prefix, b.Capabilities().Exclusion, b.Capabilities().ConditionalDelete)
	// Output: backups/db1 conditional true
}

// With a client of your own, configured as you like.
func ExampleNew() {
	ctx := context.Background()
	client, err := storage.NewClient(ctx) // Application Default Credentials
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	b := gcs.New(client, "my-bucket")
	v, err := b.Put(ctx, "backups/db1/LEASE", []byte("{}"), driver.PutOptions{If: driver.IfAbsent()})
	fmt.Println(v.Version, err)
}
