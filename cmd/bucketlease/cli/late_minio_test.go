//go:build unix

package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/lease"
)

// parked is an HTTP transport that holds back the PUT of one key: it reads
// the request whole, as the service would have it on the wire, and sends
// it only when release is closed, whatever happened to the caller's
// context meanwhile. It is a holder paused between its fence check and
// its request (a frozen VM), which sends the request when it wakes: what
// no lease can stop.
type parked struct {
	base    http.RoundTripper
	path    string // the URL path of the PUT held back
	release chan struct{}
	sent    chan error
}

func (p *parked) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || req.URL.Path != p.path {
		return p.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	<-p.release
	late := req.Clone(context.Background())
	late.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := p.base.RoundTrip(late)
	p.sent <- err
	return resp, err
}

// TestListLateFindsAPausedHoldersWriteMinIO: on MinIO, holder host-a sends
// a PUT through its fenced bucket and freezes before the request leaves; its
// lease goes stale and host-b takes the prefix over, writes and releases;
// then host-a's request lands, stamped with its epoch. bucketlease list
// --late names that object, and only it, and exits 10.
func TestListLateFindsAPausedHoldersWriteMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucketName := srv.NewBucket(t)
	ctx := context.Background()
	p := &parked{path: "/" + bucketName + "/db1/chunks/late", release: make(chan struct{}), sent: make(chan error, 1)}
	b := minioBucket(t, srv, bucketName, func(rt http.RoundTripper) http.RoundTripper { p.base = rt; return p })
	acquire := func(id string) *lease.Lease {
		l, err := lease.Acquire(ctx, bucket.New(b, "db1"), leaseseam.With(&lease.Options{TTL: 3 * time.Second, InstanceID: id, Logger: slog.New(slog.DiscardHandler)}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, err := l.Bucket().Driver().Put(ctx, "chunks/"+id, []byte(id), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := acquire("host-a")
	putDone := make(chan error, 1)
	go func() {
		_, err := a.Bucket().Driver().Put(ctx, "chunks/late", []byte("sent before the pause"), driver.PutOptions{})
		putDone <- err
	}()
	// host-a is frozen: no renewal. Its lease goes stale on both clocks
	// (TTL, and the second of MinIO's dates).
	time.Sleep(5 * time.Second)
	next := acquire("host-b")
	time.Sleep(2 * time.Second)
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	close(p.release) // host-a wakes
	if err := <-p.sent; err != nil {
		t.Fatalf("the late PUT: %v", err)
	}
	<-putDone
	if _, _, err := b.Get(ctx, "db1/chunks/late", driver.GetOptions{}); err != nil {
		t.Fatalf("the late write did not land: %v", err)
	}

	out, errOut, code := runCLI(t, minioEnv(t, srv), "list", "minio://"+srv.Addr+"/"+bucketName+"/db1?tls=false", "--late")
	noSecret(t, srv, out, errOut)
	if code != exitcode.Late || !strings.Contains(out, "chunks/late") || !strings.Contains(out, "host-a") || strings.Contains(out, "chunks/host-") {
		t.Fatalf("list --late: exit %d\n%s%s\nwant chunks/late by host-a alone, exit %d", code, out, errOut, exitcode.Late)
	}
	t.Logf("list --late:\n%s", out)
}

// minioBucket opens bucketName on srv through the minio driver, with the
// service's clock reported (minio.ServiceTimeTransport) over transport
// base, or minio-go's default one when base is nil.
func minioBucket(t *testing.T, srv miniotest.Server, bucketName string, base ...func(http.RoundTripper) http.RoundTripper) driver.Bucket {
	t.Helper()
	tr, err := miniogo.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	var rt http.RoundTripper = minio.ServiceTimeTransport(tr)
	for _, wrap := range base {
		rt = wrap(rt)
	}
	client, err := miniogo.New(srv.Addr, &miniogo.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: miniotest.Region, Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	return minio.New(client, bucketName)
}
