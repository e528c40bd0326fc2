package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/s3proto"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

var _ multipart.PendingLister = (*Bucket)(nil)

// PutStream stores the body read from r under key, with opts.Metadata, if
// opts.If holds when it is committed, through s3proto.Upload: the condition
// rides on the CompleteMultipartUpload that makes the object visible, and
// a failed upload is aborted before PutStream returns. What a killed
// process leaves needs a lifecycle rule with AbortIncompleteMultipartUpload.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return s3proto.Upload{
		Caps: b.caps, Driver: b.profile.Driver, Key: key, Opts: opts,
		Single: func(ctx context.Context, data []byte) (driver.Version, error) {
			a, err := b.put(ctx, b.client, key, data, opts)
			return a.Version, err
		},
		Multipart: uploads{b: b, key: key, cond: opts.If},
		Kind:      kind,
	}.Run(ctx, r, s)
}

// uploads is s3proto.Multipart on the AWS SDK.
type uploads struct {
	b    *Bucket
	key  string
	cond driver.Condition
}

func (m uploads) Create(ctx context.Context, md driver.Metadata) (string, error) {
	// CRC32 on every part, handed back in the completed parts, as the
	// SDK's own transfer manager does: AWS S3 checks each part's checksum
	// against the one it computed.
	out, err := m.b.client.CreateMultipartUpload(ctx, &s3sdk.CreateMultipartUploadInput{Bucket: &m.b.bucket, Key: &m.key,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, Metadata: md})
	if err != nil {
		return "", err
	}
	if aws.ToString(out.UploadId) == "" {
		return "", errors.New("the service returned no upload ID")
	}
	return aws.ToString(out.UploadId), nil
}

func (m uploads) Part(ctx context.Context, upload string, n int, data []byte) (string, string, error) {
	out, err := m.b.client.UploadPart(ctx, &s3sdk.UploadPartInput{
		Bucket: &m.b.bucket, Key: &m.key, UploadId: &upload, PartNumber: aws.Int32(int32(n)),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return "", "", err
	}
	return aws.ToString(out.ETag), aws.ToString(out.ChecksumCRC32), nil
}

func (m uploads) Complete(ctx context.Context, upload string, parts []s3proto.Part) (driver.Version, error) {
	in := &s3sdk.CompleteMultipartUploadInput{Bucket: &m.b.bucket, Key: &m.key, UploadId: &upload,
		MultipartUpload: &types.CompletedMultipartUpload{}}
	for _, p := range parts {
		cp := types.CompletedPart{PartNumber: aws.Int32(int32(p.Number)), ETag: aws.String(p.ETag)}
		if p.Checksum != "" {
			cp.ChecksumCRC32 = aws.String(p.Checksum)
		}
		in.MultipartUpload.Parts = append(in.MultipartUpload.Parts, cp)
	}
	if v, match := m.cond.Match(); match {
		in.IfMatch = aws.String(string(v))
	} else if m.cond == driver.IfAbsent() {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := m.b.client.CompleteMultipartUpload(ctx, in)
	if err != nil {
		return "", err
	}
	return driver.Version(aws.ToString(out.ETag)), nil
}

func (m uploads) Abort(ctx context.Context, upload string) error {
	_, err := m.b.client.AbortMultipartUpload(ctx, &s3sdk.AbortMultipartUploadInput{Bucket: &m.b.bucket, Key: &m.key, UploadId: &upload})
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) {
		return nil // already gone (completed or aborted)
	}
	return err
}

func (m uploads) Pending(ctx context.Context) iter.Seq2[multipart.Pending, error] {
	return m.b.ListPending(ctx, m.key)
}

func (m uploads) HasParts(ctx context.Context, upload string) (bool, error) {
	out, err := m.b.client.ListParts(ctx, &s3sdk.ListPartsInput{Bucket: &m.b.bucket, Key: &m.key, UploadId: &upload, MaxParts: aws.Int32(1)})
	if err != nil {
		return false, err
	}
	return len(out.Parts) > 0, nil
}

// List yields the objects whose keys start with prefix, in the service's
// (lexical) order, one ListObjectsV2 page at a time as the caller
// iterates. Versions are ETags, quoted as Get returns them.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, b.profile.Driver, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
		pages := s3sdk.NewListObjectsV2Paginator(b.client, &s3sdk.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
		for pages.HasMorePages() {
			page, err := pages.NextPage(op.Context())
			if err != nil {
				yield(driver.Object{}, op.Fail(kind(err, driver.Condition{}), err))
				return
			}
			for _, o := range page.Contents {
				obj := driver.Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size),
					Version: driver.Version(aws.ToString(o.ETag)), ModTime: aws.ToTime(o.LastModified)}
				if !yield(obj, nil) {
					return
				}
			}
		}
	})
}

// ListPending yields the multipart uploads under prefix that are neither
// completed nor aborted (ListMultipartUploads, paged).
func (b *Bucket) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return driver.Listing(ctx, b.profile.Driver, prefix, func(op *driver.Op, yield func(multipart.Pending, error) bool) {
		in := &s3sdk.ListMultipartUploadsInput{Bucket: &b.bucket, Prefix: &prefix}
		for {
			out, err := b.client.ListMultipartUploads(op.Context(), in)
			if err != nil {
				yield(multipart.Pending{}, op.Fail(kind(err, driver.Condition{}), err))
				return
			}
			for _, u := range out.Uploads {
				p := multipart.Pending{Key: aws.ToString(u.Key), Upload: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)}
				p.Abort = b.abortFunc(p.Key, p.Upload)
				if !yield(p, nil) {
					return
				}
			}
			if !aws.ToBool(out.IsTruncated) || (aws.ToString(out.NextKeyMarker) == "" && aws.ToString(out.NextUploadIdMarker) == "") {
				return
			}
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
	})
}
