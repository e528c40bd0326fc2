package s3_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestListPendingSeesAnUpload is the positive control of drivertest's "no
// upload pending" assertions on MinIO: an upload left open is listed, and
// gone once aborted.
func TestListPendingSeesAnUpload(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	client := srv.Client(srv.URL())
	b := s3.New(client, bucket)
	ctx := t.Context()
	key := "p/left-open"
	out, err := client.CreateMultipartUpload(ctx, &s3sdk.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	pending := func() []multipart.Pending {
		var ps []multipart.Pending
		for p, err := range b.ListPending(ctx, key) {
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		return ps
	}
	if ps := pending(); len(ps) != 1 || ps[0].Key != key || ps[0].Upload != aws.ToString(out.UploadId) {
		t.Fatalf("ListPending = %+v, want the open upload %s", ps, aws.ToString(out.UploadId))
	}
	if _, err := client.AbortMultipartUpload(ctx, &s3sdk.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: out.UploadId}); err != nil {
		t.Fatal(err)
	}
	if ps := pending(); len(ps) != 0 {
		t.Fatalf("ListPending after the abort = %+v", ps)
	}
}

// TestStreamRefusedAtCommitSaysAborted: a multipart write refused at
// CompleteMultipartUpload is ErrPrecondition, keeps the SDK's error, and
// says that the upload was aborted.
func TestStreamRefusedAtCommitSaysAborted(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	b := s3.New(srv.Client(srv.URL()), bucket)
	ctx := t.Context()
	if _, err := b.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("z"), driver.MinPartSize+1)
	_, err := b.PutStream(ctx, "k", bytes.NewReader(body), driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: driver.MinPartSize})
	if !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("PutStream IfAbsent over an existing key: %v, want ErrPrecondition", err)
	}
	var ue *multipart.UploadError
	if !errors.As(err, &ue) || !ue.Staged || !ue.Aborted {
		t.Fatalf("the error does not say the upload was aborted: %v", err)
	}
	t.Log(err)
}
