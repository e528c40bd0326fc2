//go:build unix

package cli

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestPutRecipeMinIO: docs/cli.md's pg_dump recipes, on a real MinIO
// server through the minio and the s3 drivers, with sh -c 'head -c 40M
// /dev/urandom | tee expected' for pg_dump db1 (and bash -o pipefail for
// the gzip line): each object is byte-exact, read back with get and
// checked with verify, put prints its version, nothing is left pending, no
// secret is printed; a producer that exits 1 after 40 MB commits nothing
// (exit 7); a second put of the key is refused (4).
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
				{"on its own", `"$BL" put "$URL" dumps/db2.sql --wait -- sh -c 'head -c 40M /dev/urandom | tee expected' > version`, "dumps/db2.sql"},
				{"inside hold", `"$BL" hold "$URL" --wait -- "$BL" put dumps/db1.sql -- sh -c 'head -c 40M /dev/urandom | tee expected' > version`, "dumps/db1.sql"},
				{"gzip", `"$BL" put "$URL" dumps/db1.sql.gz --wait -- bash -o pipefail -c 'head -c 40M /dev/urandom | tee expected | gzip -1' > version`, "dumps/db1.sql.gz"},
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
				var restored bytes.Buffer
				errOut, code := runTo(t, work, &restored, env, "get", u, c.key)
				noSecret(t, srv, errOut)
				if code != 0 {
					t.Fatalf("%s: get: exit %d: %s", c.name, code, errOut)
				}
				got := restored.Bytes()
				if c.name == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(got))
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					if got, err = io.ReadAll(zr); err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: %s: %d bytes read back with get, want the %d produced (first difference at %d)", c.name, c.key, len(got), len(want), firstDiff(got, want))
				}
				sum := sha256.Sum256(restored.Bytes())
				if out, errOut, code := runCLI(t, env, "verify", u, c.key, "--sha256", hex.EncodeToString(sum[:])); code != 0 {
					t.Errorf("%s: verify: exit %d: %s%s", c.name, code, out, errOut)
				}
				obj, err := srv.Client(srv.URL()).HeadObject(t.Context(), &s3sdk.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + c.key)})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if c.name != "gzip" && !strings.Contains(aws.ToString(obj.ETag), "-") { // "md5-N": a multipart upload
					t.Errorf("%s: ETag %s: not a multipart upload, so put did not stream", c.name, aws.ToString(obj.ETag))
				}
				printed, _ := os.ReadFile(filepath.Join(work, "version"))
				if v := strings.TrimSpace(string(printed)); v == "" || !strings.Contains(aws.ToString(obj.ETag), strings.Trim(v, `"`)) {
					t.Errorf("%s: put printed %q, the object's ETag is %s", c.name, printed, aws.ToString(obj.ETag))
				}
			}
			_, errOut, code := runCLI(t, env, "put", u, "dumps/failed.sql", "--", "sh", "-c", "head -c 40000000 /dev/urandom; exit 1")
			noSecret(t, srv, errOut)
			if code != exitcode.ProducerFailed {
				t.Errorf("a producer that exits 1: exit %d, want %d: %s", code, exitcode.ProducerFailed, errOut)
			}
			if _, err := srv.Client(srv.URL()).HeadObject(t.Context(), &s3sdk.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/dumps/failed.sql")}); err == nil {
				t.Error("a producer that exited 1 left an object")
			}
			_, errOut, code = runCLI(t, env, "put", u, "dumps/db2.sql", filepath.Join(work, "expected"))
			noSecret(t, srv, errOut)
			if code != exitcode.Refused {
				t.Errorf("a second put of dumps/db2.sql: exit %d, want %d: %s", code, exitcode.Refused, errOut)
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
