//go:build linux

package chaos

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// TestStreamLeavesNoOrphan replays, on one streamed write through the
// chaos proxy, what the first long streaming run found (pending-upload): a
// CreateMultipartUpload that reaches MinIO but whose reply is lost, or
// whose request is cancelled in flight, begins an upload the driver never
// learns the ID of (and the SDK's retries of a lost reply begin one per
// attempt). The drivers now sweep the key after such a creation
// (s3proto.Upload.Run), so that a write leaves nothing staged, whatever it
// returned; where the sweep cannot run (the replies stay lost), the error
// says that something may be left, never "nothing had been staged".
func TestStreamLeavesNoOrphan(t *testing.T) {
	needsMinIO(t)
	addr, ak, sk := os.Getenv(VarMinIOEndpoint), os.Getenv(VarMinIOAccessKey), os.Getenv(VarMinIOSecretKey)
	c := s3sdk.New(s3sdk.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, "")})
	t.Setenv("AWS_ACCESS_KEY_ID", ak)
	t.Setenv("AWS_SECRET_ACCESS_KEY", sk)
	t.Setenv("MINIO_ACCESS_KEY", ak)
	t.Setenv("MINIO_SECRET_KEY", sk)
	for _, drv := range []string{"s3", "minio"} {
		for _, fault := range []string{"drop-replies-then-heal", "cancel", "drop-replies-throughout"} {
			t.Run(drv+"/"+fault, func(t *testing.T) {
				ctx := context.Background()
				b := randomName("orphan-")
				if _, err := c.CreateBucket(ctx, &s3sdk.CreateBucketInput{Bucket: &b}); err != nil {
					t.Fatal(err)
				}
				defer removeS3Bucket(c, b)
				px, err := StartProxy(addr)
				if err != nil {
					t.Fatal(err)
				}
				defer px.Close()
				u := "s3://" + b + "/x?region=us-east-1&path_style=true&endpoint=http://" + px.Addr()
				if drv == "minio" {
					u = "minio://" + px.Addr() + "/" + b + "/x?tls=false"
				}
				bk, prefix, err := location.Open(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				// A first write, so that the minio driver knows the
				// bucket's location before the fault.
				if _, err := bk.Put(ctx, JoinKey(prefix, "warm"), []byte("x"), driver.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				switch fault {
				case "drop-replies-then-heal":
					px.DropReplies(true)
					time.AfterFunc(time.Second, px.Heal)
				case "drop-replies-throughout":
					px.DropReplies(true)
				case "cancel":
					px.SetDelay(200 * time.Millisecond) // the request reaches the server; the reply is not read
					time.AfterFunc(300*time.Millisecond, cancel)
				}
				_, err = bk.PutStream(pctx, JoinKey(prefix, "k"), bytes.NewReader(make([]byte, 2*driver.MinPartSize+1)),
					driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 1})
				cancel()
				px.Heal()
				out, lerr := c.ListMultipartUploads(ctx, &s3sdk.ListMultipartUploadsInput{Bucket: &b})
				if lerr != nil {
					t.Fatal(lerr)
				}
				for _, up := range out.Uploads {
					_, _ = c.AbortMultipartUpload(ctx, &s3sdk.AbortMultipartUploadInput{Bucket: &b, Key: up.Key, UploadId: up.UploadId})
				}
				n := len(out.Uploads)
				t.Logf("PutStream: %v; %d upload(s) pending after it returned", err, n)
				switch {
				case fault == "cancel" && err == nil:
					t.Fatal("the write succeeded though its context was cancelled")
				case fault == "drop-replies-throughout":
					// Nothing can be swept while every reply is lost: the
					// error must say that something may be left.
					var ue *multipart.UploadError
					if err == nil || !errors.As(err, &ue) || (n > 0 && (!ue.Staged || ue.Aborted)) ||
						(n > 0 && !strings.Contains(err.Error(), "service's clean-up")) {
						t.Errorf("%d upload(s) left and the error does not say so: %v", n, err)
					}
				case n > 0:
					t.Errorf("%d upload(s) left pending after PutStream returned %v", n, err)
				}
			})
		}
	}
}

// needsMinIO skips the test without the MinIO emulator's variables.
func needsMinIO(t *testing.T) {
	t.Helper()
	if m := MissingVars("minio", os.Getenv); len(m) > 0 {
		t.Skipf("the MinIO emulator is not running (%v unset)", m)
	}
}
