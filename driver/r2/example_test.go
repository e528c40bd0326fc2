package r2_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/driver/s3"
)

func ExampleClientOptions() {
	o := r2.ClientOptions("0123456789abcdef0123456789abcdef")
	fmt.Println(o.Endpoint)
	fmt.Println(o.Region, o.PathStyle, o.ChecksumWhenRequired)
	// Output:
	// https://0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com
	// auto true true
}

// Bring your own client, built with the R2 settings.
func ExampleNew() {
	client, err := s3.NewClient(context.Background(), r2.ClientOptions("0123456789abcdef0123456789abcdef"))
	if err != nil {
		log.Fatal(err)
	}
	b := r2.New(client, "my-bucket")
	fmt.Println(b.Capabilities().ConditionalDelete)
}
