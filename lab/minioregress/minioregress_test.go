package minioregress

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	_ "github.com/mushroomdb/bucketlease/driver/r2"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

const ttl = 30 * time.Second

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// drivers opens one fresh bucket of the MinIO server through each S3-family
// driver, by URL, as a user would.
func drivers(t *testing.T) map[string]driver.Bucket {
	t.Helper()
	srv := miniotest.Env(t)
	for _, v := range []string{"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("MINIO_ACCESS_KEY", srv.AccessKey)
	t.Setenv("MINIO_SECRET_KEY", srv.SecretKey)
	urls := map[string]string{
		"s3":    "s3://" + srv.NewBucket(t) + "/p?region=us-east-1&path_style=true&endpoint=" + srv.URL(),
		"r2":    "r2://0123456789abcdef0123456789abcdef/" + srv.NewBucket(t) + "/p?endpoint=" + srv.URL(),
		"minio": "minio://" + srv.Addr + "/" + srv.NewBucket(t) + "/p?tls=false",
	}
	out := map[string]driver.Bucket{}
	for name, u := range urls {
		b, _, err := location.Open(t.Context(), u)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Without the service's time: these tests move fake clocks a TTL
		// on without waiting one, which the service's clock would refuse.
		out[name] = faulty.OnFakeClocks(b)
	}
	return out
}

// claimsConditionalDelete is a driver that declares a conditional delete
// nobody verified: the declaration the lease once trusted.
type claimsConditionalDelete struct{ driver.Bucket }

func (c claimsConditionalDelete) Capabilities() driver.Capabilities {
	caps := c.Bucket.Capabilities()
	caps.ConditionalDelete = true
	return caps
}

// Delete sends the condition where the driver sends it, so that the server
// decides (MinIO ignores it); a driver that refuses to send it gets the
// unconditional delete the server would have made of it.
func (c claimsConditionalDelete) Delete(ctx context.Context, key string, cond driver.Condition) error {
	err := c.Bucket.Delete(ctx, key, cond)
	if errors.Is(err, driver.ErrUnsupported) {
		return c.Bucket.Delete(ctx, key, driver.Condition{})
	}
	return err
}

func opts(id string, c clock.Clock) *lease.Options {
	return leaseseam.With(&lease.Options{TTL: ttl, InstanceID: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, leaseseam.Seams{Clock: c, Getenv: func(string) string { return "" }})
}

// fencedHolderReleases: A acquires and stops renewing, B takes over after a
// TTL, A releases, C tries to acquire. It returns what went wrong, or "".
func fencedHolderReleases(t *testing.T, b driver.Bucket) string {
	t.Helper()
	ctx := context.Background()
	ac, bc, cc := clock.NewFake(t0), clock.NewFake(t0), clock.NewFake(t0)
	a, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("A", ac))
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	for _, c := range []*clock.Fake{ac, bc, cc} {
		c.Advance(ttl)
	}
	succ, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("B", bc))
	if err != nil {
		t.Fatalf("B taking over: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		return "A's release failed: " + err.Error()
	}
	st, err := admin.Inspect(ctx, bucket.New(b, "db1"), bc.Wall())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != admin.Fresh || st.Holder() != "B" || st.Version != leaseseam.Inside(succ).Version {
		return "after the fenced holder's release the lease is " + st.State.String() + ", held by " + st.Holder()
	}
	if _, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("C", cc)); !errors.Is(err, lease.ErrHeld) {
		return "C acquired while B holds a fresh lease"
	}
	return ""
}

// TestFencedHolderReleaseOnMinIO is a fenced holder's release on the real
// server: MinIO ignores If-Match on DELETE, so a release that deletes
// removes the successor's lease; the lease's release must overwrite, also
// through a driver that declares a conditional delete (the declaration the
// old release trusted: mutant release-deletes brings it back).
func TestFencedHolderReleaseOnMinIO(t *testing.T) {
	for name, b := range drivers(t) {
		t.Run(name, func(t *testing.T) {
			if bad := fencedHolderReleases(t, b); bad != "" {
				t.Fatal(bad)
			}
		})
	}
	for name, b := range drivers(t) {
		t.Run(name+"/declares-conditional-delete", func(t *testing.T) {
			if bad := fencedHolderReleases(t, claimsConditionalDelete{b}); bad != "" {
				t.Fatal(bad)
			}
		})
	}
}

// TestReleaseOfOldLeaseOnMinIO is the release of a stale *Lease on the real
// server: a fenced
// lease, acquired again by its Contender, then the old *Lease released.
func TestReleaseOfOldLeaseOnMinIO(t *testing.T) {
	for name, b := range drivers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := clock.NewFake(t0)
			con, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c))
			if err != nil {
				t.Fatal(err)
			}
			old, err := con.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			c.Advance(ttl * 2 / 3)
			cur, err := con.Acquire(ctx)
			if err != nil {
				t.Fatalf("acquiring again: %v", err)
			}
			if err := old.Release(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := admin.Inspect(ctx, bucket.New(b, "db1"), c.Wall())
			if err != nil {
				t.Fatal(err)
			}
			if st.State != admin.Fresh || st.Version != leaseseam.Inside(cur).Version {
				t.Fatalf("releasing the old lease left the new one %s at %s", st.State, st.Version)
			}
		})
	}
}

// TestTwinsOnMinIO is twins on the real server: a second process with
// the same instance id is refused while the first renews.
func TestTwinsOnMinIO(t *testing.T) {
	for name, b := range drivers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := clock.NewFake(t0)
			first, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("same", c))
			if err != nil {
				t.Fatal(err)
			}
			second, err := lease.NewContender(bucket.New(b, "db1"), opts("same", c))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := second.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("second process, first look: %v", err)
			}
			c.Advance(ttl / 3)
			if err := leaseseam.Renew(ctx, first); err != nil {
				t.Fatal(err)
			}
			if _, err := second.Acquire(ctx); !errors.Is(err, lease.ErrInstanceInUse) {
				t.Fatalf("second process after the first renewed: %v, want ErrInstanceInUse", err)
			}
			if !first.MayWrite() {
				t.Fatal("the first process stopped writing")
			}
		})
	}
}

// TestWorkerKeysForEveryURLShape: the README's worker line, Put of
// "chunks/0001" through Lease.Bucket, lands under the lease's prefix for a
// whole bucket, a prefix, and a prefix with a trailing slash, on the real
// server through the s3 driver, and the lease object is one key.
func TestWorkerKeysForEveryURLShape(t *testing.T) {
	srv := miniotest.Env(t)
	drivers(t) // the credentials in the environment
	bucketName := srv.NewBucket(t)
	q := "?region=us-east-1&path_style=true&endpoint=" + srv.URL()
	for url, want := range map[string]string{
		"s3://" + bucketName + q:         "LEASE",
		"s3://" + bucketName + "/p" + q:  "p/LEASE",
		"s3://" + bucketName + "/q/" + q: "q/LEASE",
	} {
		ctx := context.Background()
		b, prefix, err := location.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		l, err := lease.Acquire(ctx, bucket.New(b, prefix), opts("me", clock.System{}))
		if err != nil {
			t.Fatalf("prefix %q: %v", prefix, err)
		}
		if l.Key() != want {
			t.Errorf("prefix %q: the lease object is %q, want %q", prefix, l.Key(), want)
		}
		if _, err := l.Bucket().Driver().Put(ctx, "chunks/0001", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatalf("prefix %q: put: %v", prefix, err)
		}
		chunk := strings.TrimSuffix(want, "LEASE") + "chunks/0001"
		if _, _, err := b.Get(ctx, chunk, driver.GetOptions{}); err != nil {
			t.Errorf("prefix %q: the chunk is not at %q: %v", prefix, chunk, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
