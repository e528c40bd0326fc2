package s3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// A misspelled parameter is refused rather than ignored.
func Example_unknownParameter() {
	_, _, err := location.Open(context.Background(), "s3://my-bucket/backups?regoin=eu-west-1")
	fmt.Println(err)
	// Output:
	// open s3://my-bucket/backups?regoin=eu-west-1: unknown query parameter "regoin"; allowed: region, endpoint, path_style
}

// Bring your own client: any *s3.Client of aws-sdk-go-v2 will do.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("eu-west-1"))
	if err != nil {
		log.Fatal(err)
	}
	b := s3.New(s3sdk.NewFromConfig(cfg), "my-bucket")
	fmt.Println(b.Capabilities().Exclusion)
}
