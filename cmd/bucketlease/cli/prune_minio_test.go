//go:build unix

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestPruneMinIO: on MinIO, through the minio and the s3 drivers, prune
// keeps an abandoned multipart upload younger than --older-than, and
// --dry-run removes nothing. Once a live hold takes the prefix, an upload
// started after it is kept, whatever --older-than, while one abandoned
// more than a TTL before its lease began (an earlier writer's) is
// aborted; once the hold has released the lease, that upload goes too. An
// upload under another prefix is never touched.
func TestPruneMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	c := srv.Client(srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := func(key string) string {
		t.Helper()
		out, err := c.CreateMultipartUpload(ctx, &s3sdk.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatalf("starting a multipart upload of %s: %v", key, err)
		}
		return *out.UploadId
	}
	pending := func() map[string]bool {
		t.Helper()
		out, err := c.ListMultipartUploads(ctx, &s3sdk.ListMultipartUploadsInput{Bucket: &bucket})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, u := range out.Uploads {
			m[*u.Key] = true
		}
		return m
	}
	const old, live, other = "db1/dumps/old.sql", "db1/dumps/live.sql", "db2/elsewhere.sql"
	began := time.Now()
	begin(old)
	otherID := begin(other)
	defer c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3sdk.AbortMultipartUploadInput{Bucket: &bucket, Key: aws.String(other), UploadId: &otherID})
	mu := "minio://" + srv.Addr + "/" + bucket + "/db1?tls=false"
	su := s3URL(srv.URL(), bucket, "db1")

	out, errOut, code := runCLI(t, env, "prune", mu, "--older-than", "1h")
	noSecret(t, srv, out, errOut)
	if code != 0 || !strings.Contains(out, "Kept "+old) || !strings.Contains(out, "less than 1h0m0s") || !pending()[old] {
		t.Errorf("prune --older-than 1h: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, env, "prune", su, "--older-than", "0s", "--dry-run")
	if code != 0 || !strings.Contains(out, "Would remove (--dry-run) "+old) || !strings.Contains(out, "no lease covers its key") || !pending()[old] {
		t.Errorf("prune --dry-run: exit %d\n%s%s", code, out, errOut)
	}

	time.Sleep(time.Until(began.Add(3 * time.Second))) // old is more than a TTL older than the lease
	h := start(t, env, "hold", mu, "--ttl", "1s", "--instance-id", "alpha")
	h.waitFor(`acquired\s+acquired lease db1/LEASE as instance alpha`)
	begin(live)
	for name, u := range map[string]string{"minio": mu, "s3": su} {
		out, errOut, code = runCLI(t, env, "prune", u, "--older-than", "0s")
		noSecret(t, srv, out, errOut)
		if code != 0 || !strings.Contains(out, "Kept "+live) || !strings.Contains(out, `held by "alpha"`) {
			t.Errorf("%s: prune under a live holder: exit %d\n%s%s", name, code, out, errOut)
		}
		if p := pending(); p[old] || !p[live] || !p[other] {
			t.Errorf("%s: after prune under a live holder, pending: %v\n%s%s", name, p, out, errOut)
		}
	}
	h.signal(sigInterrupt)
	if code := h.wait(); code != 0 {
		t.Errorf("hold exit %d", code)
	}
	out, errOut, code = runCLI(t, env, "prune", su, "--older-than", "0s") // the s3 driver's abort; minio's took old
	if p := pending(); code != 0 || !strings.Contains(out, "Removed "+live) || !strings.Contains(out, "db1/LEASE is released") || p[live] || !p[other] {
		t.Errorf("prune after the release: exit %d, pending %v\n%s%s", code, p, out, errOut)
	}
}
