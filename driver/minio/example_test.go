package minio_test

import (
	"context"
	"fmt"
	"log"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// A misspelled parameter is refused: "insecure" is not how this driver
// turns TLS off; tls=false is.
func Example_unknownParameter() {
	_, _, err := location.Open(context.Background(), "minio://127.0.0.1:9000/backups/db1?insecure=true")
	fmt.Println(err)
	// Output:
	// open minio://127.0.0.1:9000/backups/db1?insecure=true: unknown query parameter "insecure"; allowed: tls, region
}

// Bring your own client.
func ExampleNew() {
	client, err := miniogo.New("minio.example.com", &miniogo.Options{
		Creds:  credentials.NewEnvMinio(),
		Secure: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	b := minio.New(client, "backups")
	fmt.Println(b.Capabilities().Exclusion)
}
