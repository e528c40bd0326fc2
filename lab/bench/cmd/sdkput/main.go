// Command sdkput streams its stdin into one object with minio-go's
// PutObject, size unknown, in parts of 16 MiB (its smallest; its default
// for an unknown size, 512 MiB parts, holds 600 MB) one at a time, and
// with If-None-Match: *: the SDK side of BenchmarkStreamPut, a program as small as the
// command's job allows, whose resident set the benchmark compares with
// bucketlease put's.
//
//	sdkput HOST:PORT BUCKET KEY < body
//
// The credentials are MINIO_ROOT_USER and MINIO_ROOT_PASSWORD.
package main

import (
	"context"
	"fmt"
	"os"

	miniogo "github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: sdkput HOST:PORT BUCKET KEY < body")
		os.Exit(2)
	}
	c, err := miniogo.New(os.Args[1], &miniogo.Options{Creds: miniocreds.NewStaticV4(os.Getenv("MINIO_ROOT_USER"), os.Getenv("MINIO_ROOT_PASSWORD"), "")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts := miniogo.PutObjectOptions{PartSize: 16 << 20}
	opts.SetMatchETagExcept("*")
	if _, err := c.PutObject(context.Background(), os.Args[2], os.Args[3], os.Stdin, -1, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
