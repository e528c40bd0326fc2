package lease_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/lease"
)

// heldInNetwork is an HTTP transport that holds the PUT of one path in the
// network: the client gives up on it when its context ends, but the
// request, already on its way, reaches the service when land is closed.
type heldInNetwork struct {
	base   http.RoundTripper
	path   string
	land   chan struct{}
	landed chan error
	gaveUp atomic.Bool
}

var errNeverCancelled = errors.New("the fence never cancelled the request")

func (h *heldInNetwork) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || req.URL.Path != h.path {
		return h.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if h.gaveUp.Load() {
		return nil, errNeverCancelled // the client's retries of it
	}
	select {
	case <-req.Context().Done():
	case <-time.After(20 * time.Second):
		h.gaveUp.Store(true)
		return nil, errNeverCancelled
	}
	late := req.Clone(context.Background())
	late.Body = io.NopCloser(bytes.NewReader(body))
	go func() {
		<-h.land
		resp, err := h.base.RoundTrip(late)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = errors.New(resp.Status)
			}
		}
		h.landed <- err
	}()
	return nil, req.Context().Err()
}

// TestFenceCancelledWriteThatLandsIsOutcomeUnknownMinIO: a Put through
// Lease.Bucket held in the network until the fence cancels it returns an
// error wrapping driver.ErrOutcomeUnknown, not context.Canceled; the
// request then lands on MinIO after another holder took over, as the
// error warned it might.
func TestFenceCancelledWriteThatLandsIsOutcomeUnknownMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucketName := srv.NewBucket(t)
	h := &heldInNetwork{path: "/" + bucketName + "/db1/LATEST", land: make(chan struct{}), landed: make(chan error, 1)}
	tr, err := miniogo.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	h.base = minio.ServiceTimeTransport(tr)
	client, err := miniogo.New(srv.Addr, &miniogo.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: miniotest.Region, Transport: h})
	if err != nil {
		t.Fatal(err)
	}
	b := minio.New(client, bucketName)
	ctx := context.Background()
	acquire := func(id string) *lease.Lease {
		t.Helper()
		l, err := lease.Acquire(ctx, bucket.New(b, "db1"), leaseseam.With(&lease.Options{TTL: 3 * time.Second, InstanceID: id,
			Logger: slog.New(slog.DiscardHandler)}, leaseseam.Seams{Getenv: func(string) string { return "" }}))

		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return l
	}
	a := acquire("host-a")
	_, err = a.Bucket().Driver().Put(ctx, "LATEST", []byte("host-a's pointer"), driver.PutOptions{})
	if !errors.Is(err, driver.ErrOutcomeUnknown) || errors.Is(err, context.Canceled) {
		t.Fatalf("a Put the fence cancelled in flight returned %v; want an error wrapping driver.ErrOutcomeUnknown and not context.Canceled", err)
	}
	if !errors.Is(err, lease.ErrFenced) {
		t.Errorf("the error does not carry the fence's cause: %v", err)
	}
	t.Logf("the fenced Put: %v", err)
	time.Sleep(2500 * time.Millisecond) // host-a's record goes stale on both clocks
	next := acquire("host-b")
	defer next.Release(ctx)
	close(h.land)
	if err := <-h.landed; err != nil {
		t.Fatalf("the held PUT did not land: %v", err)
	}
	if _, _, err := b.Get(ctx, "db1/LATEST", driver.GetOptions{}); err != nil {
		t.Fatalf("the write the fence cancelled was stored after all, yet reading it: %v", err)
	}
}
