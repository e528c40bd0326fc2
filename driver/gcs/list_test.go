package gcs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
)

// listKeys collects what List yields under prefix, failing on an error.
func listKeys(t *testing.T, b driver.Bucket, prefix string) []driver.Object {
	t.Helper()
	var objs []driver.Object
	for o, err := range b.List(t.Context(), prefix) {
		if err != nil {
			t.Fatalf("List %q after %d objects: %v", prefix, len(objs), err)
		}
		objs = append(objs, o)
	}
	return objs
}

// TestList: more than 1,000 keys (so the listing takes two pages), keys
// with spaces, unicode and "%", a key that is a prefix of others, and keys
// outside the prefix. List yields exactly the keys under the prefix, in
// lexical order, each with its size, a modification time, and the version
// Put returned (the generation, as Get returns it).
func TestList(t *testing.T) {
	endpoint := emulator(t)
	rc := &requestCounter{}
	b := gcs.New(client(t, endpoint, rc), newBucket(t, endpoint))
	ctx := t.Context()
	want := map[string]driver.Version{}
	var mu sync.Mutex
	put := func(key string) error {
		v, err := b.Put(ctx, key, []byte(key), driver.PutOptions{If: driver.IfAbsent()})
		if err == nil {
			mu.Lock()
			want[key] = v.Version
			mu.Unlock()
		}
		return err
	}
	keys := []string{"db1/c", "db1/with space", "db1/ünïcødé/ключ", "db1/100%", "db1/a%2Fb", "db1/plus+sign", "db1/LEASE"}
	for i := range 1005 {
		keys = append(keys, fmt.Sprintf("db1/chunks/%05d", i))
	}
	others := []string{"db10/x", "db2/x", "db0"}
	work := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range work {
				if err := put(k); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, k := range append(slices.Clone(keys), others...) {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	before, _ := rc.counts()
	objs := listKeys(t, b, "db1/")
	if after, _ := rc.counts(); after-before < 2 {
		t.Errorf("%d keys listed in %d requests; want at least two pages", len(objs), after-before)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
		if o.Version != want[o.Key] || o.Size != int64(len(o.Key)) || o.ModTime.IsZero() {
			t.Errorf("listed %+v; want version %s, size %d and a modification time", o, want[o.Key], len(o.Key))
		}
	}
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Fatalf("List(db1/) yielded %d keys, want %d in lexical order; first difference near %v",
			len(got), len(keys), firstDiff(got, keys))
	}
	for _, k := range []string{"db1/with space", "db1/ünïcødé/ключ", "db1/100%"} {
		if _, v := read(t, b, k); v != want[k] {
			t.Errorf("Get(%q) version %s, List's %s", k, v, want[k])
		}
	}

	// A plain string prefix: "db1" covers "db10/x", "db1/c" covers
	// "db1/chunks/...", and "db1/chunks/" does not cover "db1/c".
	if n := len(listKeys(t, b, "db1")); n != len(keys)+1 {
		t.Errorf("List(db1) yielded %d keys, want %d (db10/x included)", n, len(keys)+1)
	}
	if n := len(listKeys(t, b, "db1/c")); n != 1006 {
		t.Errorf("List(db1/c) yielded %d keys, want 1006", n)
	}
	if objs := listKeys(t, b, "db1/chunks/"); len(objs) != 1005 || objs[0].Key != "db1/chunks/00000" {
		t.Errorf("List(db1/chunks/) yielded %d keys, want 1005", len(objs))
	}
	if n := len(listKeys(t, b, "nothing/")); n != 0 {
		t.Errorf("List(nothing/) yielded %d keys", n)
	}

	// Stopping early is allowed; the iterator ends there.
	n := 0
	for range b.List(ctx, "db1/") {
		if n++; n == 3 {
			break
		}
	}
}

// TestListErrors: a missing bucket is ErrBucketNotExist, and an ended
// context an error matching it.
func TestListErrors(t *testing.T) {
	endpoint := emulator(t)
	missing := gcs.New(client(t, endpoint, nil), "bucketlease-no-such-bucket")
	for _, err := range missing.List(t.Context(), "db1/") {
		if !errors.Is(err, driver.ErrBucketNotExist) || !strings.Contains(err.Error(), "list db1/") {
			t.Errorf("List in a missing bucket: %v; want ErrBucketNotExist naming the prefix", err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := gcs.New(client(t, endpoint, nil), newBucket(t, endpoint))
	for _, err := range b.List(ctx, "db1/") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("List with an ended context: %v", err)
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("index %d: %q, want %q", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}
