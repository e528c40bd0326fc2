package wirefault_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/miniotest"
	"github.com/mushroomdb/bucketlease/internal/wirefault"
	"github.com/mushroomdb/bucketlease/lease"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// lostReplyScenarios runs, on a bucket whose transport is tr, an acquire
// whose first If-None-Match reply is dropped and a renewal whose If-Match
// reply is dropped: both must be recognised as our own, with no ErrLost.
func lostReplyScenarios(t *testing.T, b driver.Bucket, tr *wirefault.Transport) {
	t.Helper()
	lostReplyScenariosWith(t, b, tr,
		wirefault.ConditionalPut("If-None-Match", "/db1/LEASE"), wirefault.ConditionalPut("If-Match", "/db1/LEASE"))
}

// lostReplyScenariosWith is lostReplyScenarios for a service whose acquire
// and renewal requests the two matchers recognise.
func lostReplyScenariosWith(t *testing.T, b driver.Bucket, tr *wirefault.Transport, acquireReq, renewReq func(*http.Request) bool) {
	t.Helper()
	ctx := context.Background()
	c := clock.NewFake(t0)
	opts := &lease.Options{InstanceID: "wire", Clock: c, Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}

	tr.Drop = wirefault.Once(acquireReq)
	l, err := lease.Acquire(ctx, b, "db1", opts)
	if err != nil {
		t.Fatalf("acquire whose reply was dropped: %v", err)
	}
	if tr.Dropped() != 1 {
		t.Fatalf("%d replies dropped; the scenario did not happen", tr.Dropped())
	}

	c.Advance(lease.DefaultTTL / 3)
	tr.Drop = wirefault.Once(renewReq)
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("renewal whose reply was dropped: %v (want it recognised as ours)", err)
	}
	if tr.Dropped() != 2 {
		t.Fatalf("%d replies dropped; the renewal scenario did not happen", tr.Dropped())
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("the next renewal: %v", err)
	}
	if !l.MayWrite() {
		t.Fatal("fenced after recognised renewals")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestS3LostReplies(t *testing.T) {
	srv := miniotest.Env(t)
	for _, attempts := range []int{1, 3} {
		t.Run(map[int]string{1: "no SDK retry", 3: "SDK retries, the retry is refused"}[attempts], func(t *testing.T) {
			tr := &wirefault.Transport{}
			o := srv.Client(srv.URL()).Options()
			o.HTTPClient = &http.Client{Transport: tr}
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = attempts
				so.MaxBackoff = 10 * time.Millisecond
			})
			client := s3sdk.New(o)
			lostReplyScenarios(t, s3.New(client, srv.NewBucket(t)), tr)
		})
	}
}

func TestMinIOLostReplies(t *testing.T) {
	srv := miniotest.Env(t)
	tr := &wirefault.Transport{}
	client, err := miniogo.New(srv.Addr, &miniogo.Options{
		Creds:     credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region:    miniotest.Region,
		Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	lostReplyScenarios(t, minio.New(client, srv.NewBucket(t)), tr)
}

// TestNegativeControl shows that the rig really loses replies: without the
// lease's read-back, the dropped acquire surfaces as an error.
func TestNegativeControl(t *testing.T) {
	srv := miniotest.Env(t)
	tr := &wirefault.Transport{}
	o := srv.Client(srv.URL()).Options()
	o.HTTPClient = &http.Client{Transport: tr}
	o.Retryer = aws.NopRetryer{}
	client := s3sdk.New(o)
	b := s3.New(client, srv.NewBucket(t))
	tr.Drop = wirefault.Once(wirefault.ConditionalPut("If-None-Match", "/k"))
	_, err := b.Put(context.Background(), "k", []byte("x"), driver.IfAbsent())
	if err == nil || !errors.Is(err, wirefault.ErrReplyDropped) {
		t.Fatalf("a dropped reply: %v", err)
	}
	if _, _, err := b.Get(context.Background(), "k"); err != nil {
		t.Fatalf("the write whose reply was dropped did not land: %v", err)
	}
}
