//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestShowListsPendingUploadsMinIO: show lists the multipart uploads
// started under the lease's prefix and never completed (one started here
// with the SDK and abandoned), through the minio and the s3 drivers, in
// text and --json; one under another prefix is not listed, and once it is
// aborted show says there is none.
func TestShowListsPendingUploadsMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	c := srv.Client(srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(key string) string {
		t.Helper()
		out, err := c.CreateMultipartUpload(ctx, &s3sdk.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatalf("starting a multipart upload of %s: %v", key, err)
		}
		return *out.UploadId
	}
	const key = "db1/dumps/abandoned.sql"
	upload := start(key)
	other := start("db2/dumps/elsewhere.sql")
	abort := func(k, id string) {
		if _, err := c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3sdk.AbortMultipartUploadInput{Bucket: &bucket, Key: &k, UploadId: &id}); err != nil {
			t.Errorf("aborting %s: %v", k, err)
		}
	}
	defer abort("db2/dumps/elsewhere.sql", other)

	for name, u := range map[string]string{"minio": "minio://" + srv.Addr + "/" + bucket + "/db1?tls=false", "s3": s3URL(srv.URL(), bucket, "db1")} {
		out, errOut, code := runCLI(t, env, "show", u)
		noSecret(t, srv, out, errOut)
		if code != 0 || !regexp.MustCompile(`(?m)^pending\s+1 upload under db1/ started and neither completed nor aborted`).MatchString(out) ||
			!strings.Contains(out, key+", started ") || !strings.Contains(out, "upload "+upload) || strings.Contains(out, "elsewhere") {
			t.Errorf("%s: show: exit %d\n%s%s", name, code, out, errOut)
		}
		out, errOut, code = runCLI(t, env, "show", u, "--json")
		var j report.ShowJSON
		if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 || j.Pending == nil || !j.Pending.Available || len(j.Pending.Uploads) != 1 ||
			j.Pending.Uploads[0].Key != key || j.Pending.Uploads[0].Upload != upload || j.Pending.Uploads[0].Initiated == "" || j.Pending.Prefix != "db1/" {
			t.Errorf("%s: show --json: exit %d, %v\n%s%s", name, code, err, out, errOut)
		}
	}
	abort(key, upload)
	u := "minio://" + srv.Addr + "/" + bucket + "/db1?tls=false"
	if out, errOut, code := runCLI(t, env, "show", u); code != 0 || !regexp.MustCompile(`(?m)^pending\s+none: no upload under db1/ was started and left uncompleted`).MatchString(out) {
		t.Errorf("after the abort: exit %d\n%s%s", code, out, errOut)
	}
}
