package gcs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// TestControlRequestsHaveTheirOwnPool: a bucket opened by URL sends its
// control requests (Get, Put, Delete: the lease's renewals) through a
// client and transport other than its streamed writes' and listings', so
// a Put completes while every connection of the other transport is busy.
// Here that transport is bounded to one connection, held by a read left
// unread. Negative control: the same Put through one client for both (as
// New makes) waits for that connection until its deadline.
func TestControlRequestsHaveTheirOwnPool(t *testing.T) {
	endpoint := testenv.Emulator(t, "fake-gcs-server", "BUCKETLEASE_TEST_GCS_ENDPOINT")["BUCKETLEASE_TEST_GCS_ENDPOINT"]
	ctx := t.Context()
	var r [6]byte
	_, _ = rand.Read(r[:])
	name := "bucketlease-" + hex.EncodeToString(r[:])
	u, err := url.Parse("gs://" + name + "/p?endpoint=" + url.QueryEscape(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := OpenURL(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	b := db.(*Bucket)
	defer b.Close()
	if len(b.owned) != 2 || len(b.transports) != 2 || b.transports[0] == b.transports[1] || b.bkt == b.ctl {
		t.Fatalf("OpenURL made %d clients and %d transports; want two of each, the control one apart", len(b.owned), len(b.transports))
	}
	// The setup goes through the control client, so that the streaming
	// transport is bounded before it has ever dialled (a Transport's
	// fields may not change once it has connections: the race detector
	// sees its connections read them).
	if err := b.owned[1].Bucket(name).Create(ctx, "bucketlease-test", nil); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	w := b.ctl.Object("big").NewWriter(ctx)
	if _, err := w.Write(make([]byte, 32<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// From here on the streaming transport has one connection, held by a
	// read whose 32 MiB body is left unread.
	b.transports[0].MaxConnsPerHost = 1
	hold, err := b.bkt.Object("big").NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()

	put := func(b *Bucket) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := b.Put(ctx, "LEASE", []byte("renewal"), driver.PutOptions{})
		return err
	}
	if err := put(b); err != nil {
		t.Errorf("a Put while the streaming transport's one connection is busy: %v; want it done on the control transport", err)
	}
	shared := &Bucket{bkt: b.bkt, ctl: b.bkt}
	if err := put(shared); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("control: a Put through the busy transport: %v; want it to wait until its deadline, or the test proves nothing", err)
	}
}
