package s3

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// TestControlRequestsHaveTheirOwnPool: a bucket OpenWithProfile made sends
// its control requests (Get, Put, Delete: the lease's renewals) through a
// client and transport other than its streamed writes' and listings', so a
// Put completes while every connection of the other transport is busy.
// Here that transport is bounded to one connection (over HTTP/2 one is
// all a transport uses), held by a read left unread. Negative control: the
// same Put through one client for both (as New makes) waits for that
// connection until its deadline.
func TestControlRequestsHaveTheirOwnPool(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	ctx := t.Context()
	b, err := openWithProfile(ctx, ClientOptions{Region: miniotest.Region, Endpoint: srv.URL(), PathStyle: true}, bucket, AWS,
		func(tr *http.Transport) { tr.MaxConnsPerHost = 1 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.ctl == b.client {
		t.Fatal("OpenWithProfile made one client for both; want the control requests on a client of their own")
	}
	if _, err := b.Put(ctx, "big", make([]byte, 32<<20), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// From here on the streaming transport's one connection is held by a
	// read whose 32 MiB body is left unread.
	hold, err := b.client.GetObject(ctx, &s3sdk.GetObjectInput{Bucket: &b.bucket, Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Body.Close()

	put := func(b *Bucket) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := b.Put(ctx, "LEASE", []byte("renewal"), driver.PutOptions{})
		return err
	}
	if err := put(b); err != nil {
		t.Errorf("a Put while the streaming transport's one connection is busy: %v; want it done on the control transport", err)
	}
	// A streamed write, even one that fits one PUT, stays on the
	// streaming transport, so it waits.
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := b.PutStream(sctx, "small", bytes.NewReader([]byte("x")), driver.PutOptions{If: driver.IfAbsent()}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a streamed write while the streaming transport's one connection is busy: %v; want it to wait there until its deadline", err)
	}
	shared := *b
	shared.ctl = b.client
	if err := put(&shared); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("control: a Put through the busy transport: %v; want it to wait until its deadline, or the test proves nothing", err)
	}
}
