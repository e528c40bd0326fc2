//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestPutRecipeMinIO: docs/cli.md's pg_dump recipe, both lines, on a real
// MinIO server through the minio and the s3 drivers, with head -c 40M
// /dev/urandom | tee expected for pg_dump db1: the object is byte-exact,
// put prints its version, nothing is left pending, no secret is printed;
// a second put of the key is refused (4) at the multipart commit.
func TestPutRecipeMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	urls := minioURLs(srv, bucket, "")
	for _, form := range []string{"minio", "s3"} {
		t.Run(form, func(t *testing.T) {
			prefix := "db1-" + form
			u := strings.Replace(urls[form], bucket+"/", bucket+"/"+prefix, 1)
			work := t.TempDir()
			for _, c := range []struct{ name, script, key string }{
				{"inside hold", `"$BL" hold "$URL" --wait -- sh -c 'head -c 40M /dev/urandom | tee expected | "$BL" put dumps/db1.sql > version'`, "dumps/db1.sql"},
				{"on its own", `head -c 40M /dev/urandom | tee expected | "$BL" put "$URL" dumps/db2.sql --wait > version`, "dumps/db2.sql"},
			} {
				cmd := exec.Command("sh", "-c", c.script)
				cmd.Dir = work
				cmd.Env = append(cleanEnv(), append(env, "BL="+binary, "URL="+u)...)
				var errb bytes.Buffer
				cmd.Stderr = &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s: %v\n%s", c.name, err, errb.String())
				}
				noSecret(t, srv, errb.String())
				want, err := os.ReadFile(filepath.Join(work, "expected"))
				if err != nil || len(want) != 40<<20 {
					t.Fatalf("%s: expected: %d bytes, %v", c.name, len(want), err)
				}
				obj, err := srv.Client(srv.URL()).GetObject(t.Context(), &s3sdk.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + c.key)})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got, err := io.ReadAll(obj.Body)
				obj.Body.Close()
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: %s: %d bytes (%v), want the %d piped in (first difference at %d)", c.name, c.key, len(got), err, len(want), firstDiff(got, want))
				}
				if !strings.Contains(aws.ToString(obj.ETag), "-") { // "md5-N": a multipart upload
					t.Errorf("%s: ETag %s: not a multipart upload, so put did not stream", c.name, aws.ToString(obj.ETag))
				}
				printed, _ := os.ReadFile(filepath.Join(work, "version"))
				if v := strings.TrimSpace(string(printed)); v == "" || !strings.Contains(aws.ToString(obj.ETag), strings.Trim(v, `"`)) {
					t.Errorf("%s: put printed %q, the object's ETag is %s", c.name, printed, aws.ToString(obj.ETag))
				}
			}
			_, errOut, code := runCLI(t, env, "put", u, "dumps/db2.sql", filepath.Join(work, "expected"))
			noSecret(t, srv, errOut)
			if code != exitPutRefused {
				t.Errorf("a second put of dumps/db2.sql: exit %d, want %d: %s", code, exitPutRefused, errOut)
			}
			ups, err := srv.Client(srv.URL()).ListMultipartUploads(t.Context(), &s3sdk.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
			if err != nil {
				t.Fatal(err)
			}
			for _, up := range ups.Uploads {
				t.Errorf("left pending: %s (%s)", aws.ToString(up.Key), aws.ToString(up.UploadId))
			}
		})
	}
}
