package s3_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// A conditional PUT of a body of several MiB over an existing key: MinIO
// answers 412 before it has read the body and resets the connection, the
// SDK sends the write again and meets a refusal that may be of its own
// first attempt. The driver reads the object back and settles it: the old
// object, last modified before the write began, is unchanged, so the
// refusal stands (ErrPrecondition), never ErrOutcomeUnknown.
func TestRetriedRefusalIsSettled(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	b := s3.New(srv.Client(srv.URL()), bucket)
	ctx := t.Context()
	put, err := b.Put(ctx, "k", []byte("old"), driver.PutOptions{If: driver.IfAbsent()})
	old := put.Version
	if err != nil {
		t.Fatal(err)
	}
	// Last-Modified and Date are to the second: the old object must be
	// seconds older than the writes for the read-back to prove it.
	time.Sleep(3 * time.Second)
	body := bytes.Repeat([]byte("x"), 12<<20)
	retried := 0
	for i := range 20 {
		cond := driver.IfAbsent()
		if i%2 == 1 {
			cond = driver.IfMatch(objects.FakeVersion(old))
		}
		_, err := b.PutStream(ctx, "k", bytes.NewReader(body), driver.PutOptions{If: cond}, nil)
		if strings.Contains(err.Error(), "times;") {
			retried++
		}
		if !errors.Is(err, driver.ErrPrecondition) || errors.Is(err, driver.ErrOutcomeUnknown) {
			t.Errorf("write %d (%s) of 12 MiB over an existing key: %v, want ErrPrecondition", i, cond, err)
		}
	}
	data, got, err := objects.ReadAll(ctx, b, "k", 100, driver.GetOptions{})
	if err != nil || string(data) != "old" || got.Version != old {
		t.Fatalf("the object is %q at %s (%v), want %q at %s unchanged", data, got.Version, err, "old", old)
	}
	t.Logf("%d of 20 writes were sent more than once by the SDK and settled by reading back", retried)
}
