package minio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"iter"

	miniogo "github.com/minio/minio-go/v7"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/s3proto"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

var _ multipart.PendingLister = (*Bucket)(nil)

// PutStream stores the body read from r under key, with opts.Metadata, if
// opts.If holds when it is committed, through s3proto.Upload on minio-go's
// Core API, which sends the condition on CompleteMultipartUpload.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return s3proto.Upload{
		Caps: b.Capabilities(), Driver: Scheme, Key: key, Opts: opts,
		Single: func(ctx context.Context, data []byte) (driver.Version, error) {
			a, err := b.Put(ctx, key, data, opts)
			return a.Version, err
		},
		Multipart: uploads{b: b, key: key, cond: opts.If},
		Kind:      kind,
	}.Run(ctx, r, s)
}

// uploads is s3proto.Multipart on minio-go's Core API.
type uploads struct {
	b    *Bucket
	key  string
	cond driver.Condition
}

func (m uploads) core() miniogo.Core { return miniogo.Core{Client: m.b.client} }

func (m uploads) Create(ctx context.Context, md driver.Metadata) (string, error) {
	// Look the bucket's region up first (see Put), so that the commit's
	// operation counts its own attempts only.
	if _, err := m.b.client.GetBucketLocation(ctx, m.b.bucket); err != nil {
		return "", err
	}
	id, err := m.core().NewMultipartUpload(ctx, m.b.bucket, m.key, miniogo.PutObjectOptions{UserMetadata: userMetadata(md)})
	if err == nil && id == "" {
		err = errors.New("the server returned no upload ID")
	}
	return id, err
}

func (m uploads) Part(ctx context.Context, upload string, n int, data []byte) (string, string, error) {
	p, err := m.core().PutObjectPart(ctx, m.b.bucket, m.key, upload, n, bytes.NewReader(data), int64(len(data)), partOptions(m.b.client, data))
	if err != nil {
		return "", "", err
	}
	return p.ETag, "", nil
}

// partOptions are the options of one part's PutObjectPart. Over plain
// HTTP it signs the in-memory part's SHA-256 as the payload hash, which
// the server checks as it would the streaming signature's chunks, without
// that signature's per-64-KiB garbage (BENCHMARKS.md). Over TLS minio-go
// sends UNSIGNED-PAYLOAD and nothing changes.
func partOptions(c *miniogo.Client, data []byte) miniogo.PutObjectPartOptions {
	if u := c.EndpointURL(); u != nil && u.Scheme == "https" {
		return miniogo.PutObjectPartOptions{}
	}
	sum := sha256.Sum256(data)
	return miniogo.PutObjectPartOptions{DisableContentSha256: true, Sha256Hex: hex.EncodeToString(sum[:])}
}

func (m uploads) Complete(ctx context.Context, upload string, parts []s3proto.Part) (driver.Version, error) {
	cps := make([]miniogo.CompletePart, len(parts))
	for i, p := range parts {
		cps[i] = miniogo.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	var opts miniogo.PutObjectOptions
	if v, match := m.cond.Match(); match {
		opts.SetMatchETag(unquote(v))
	} else if m.cond == driver.IfAbsent() {
		opts.SetMatchETagExcept("*")
	}
	info, err := m.core().CompleteMultipartUpload(ctx, m.b.bucket, m.key, upload, cps, opts)
	if err != nil {
		return "", err
	}
	return driver.Version(unquote(driver.Version(info.ETag))), nil
}

func (m uploads) Abort(ctx context.Context, upload string) error {
	err := m.core().AbortMultipartUpload(ctx, m.b.bucket, m.key, upload)
	if code, _ := errorResponse(err); code == "NoSuchUpload" {
		return nil
	}
	return err
}

func (m uploads) Pending(ctx context.Context) iter.Seq2[multipart.Pending, error] {
	return m.b.ListPending(ctx, m.key)
}

func (m uploads) HasParts(ctx context.Context, upload string) (bool, error) {
	res, err := m.core().ListObjectParts(ctx, m.b.bucket, m.key, upload, 0, 1)
	if err != nil {
		return false, err
	}
	return len(res.ObjectParts) > 0, nil
}

// List yields the objects whose keys start with prefix in lexical order.
// Stopping early cancels the listing and waits for minio-go's goroutine.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, Scheme, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
		lctx, cancel := context.WithCancel(op.Context())
		ch := b.client.ListObjects(lctx, b.bucket, miniogo.ListObjectsOptions{Prefix: prefix, Recursive: true})
		defer func() {
			cancel()
			for range ch {
			}
		}()
		for o := range ch {
			if o.Err != nil {
				yield(driver.Object{}, op.Fail(kind(o.Err, driver.Condition{}), o.Err))
				return
			}
			obj := driver.Object{Key: o.Key, Size: o.Size, Version: driver.Version(unquote(driver.Version(o.ETag))), ModTime: o.LastModified}
			if !yield(obj, nil) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(driver.Object{}, op.Fail(nil, err))
		}
	})
}

// ListPending yields the multipart uploads under prefix that are neither
// completed nor aborted. The MinIO server lists only the uploads of the key
// the prefix names exactly.
func (b *Bucket) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return driver.Listing(ctx, Scheme, prefix, func(op *driver.Op, yield func(multipart.Pending, error) bool) {
		keyMarker, idMarker := "", ""
		for {
			res, err := miniogo.Core{Client: b.client}.ListMultipartUploads(op.Context(), b.bucket, prefix, keyMarker, idMarker, "", 1000)
			if err != nil {
				yield(multipart.Pending{}, op.Fail(kind(err, driver.Condition{}), err))
				return
			}
			for _, u := range res.Uploads {
				p := multipart.Pending{Key: u.Key, Upload: u.UploadID, Initiated: u.Initiated, Abort: b.abortFunc(u.Key, u.UploadID)}
				if !yield(p, nil) {
					return
				}
			}
			if !res.IsTruncated || (res.NextKeyMarker == "" && res.NextUploadIDMarker == "") {
				return
			}
			keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
		}
	})
}
