package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/s3proto"
)

// MaxPutSize is the largest body Put sends: S3's limit for a single PUT.
// A larger body is refused rather than split into a multipart upload, whose
// parts would not carry the precondition.
const MaxPutSize = 5 << 30

// Profile is what distinguishes one S3-compatible service from another for
// this driver: the name it gives in errors and whether the service honours
// If-Match on DeleteObject. The R2 driver is this driver with the R2
// profile.
type Profile struct {
	// Driver names the driver in errors, such as "s3" or "r2".
	Driver string
	// ConditionalDelete reports whether the service honours If-Match on
	// DeleteObject. Where it is false, Delete refuses IfMatch with
	// driver.ErrUnsupported without sending a request.
	ConditionalDelete bool
}

// AWS is the profile of Amazon S3: conditional writes and, since
// 2025-09-16 on general-purpose buckets, conditional deletes.
var AWS = Profile{Driver: Scheme, ConditionalDelete: true}

// Bucket is one bucket reached through the AWS SDK's S3 client. It is safe
// for concurrent use.
type Bucket struct {
	client  *s3sdk.Client
	bucket  string
	profile Profile
}

var _ driver.Bucket = (*Bucket)(nil)

// New returns the bucket named bucket on client, with the AWS profile. The
// client is the caller's: its region, endpoint, credentials and retry policy
// are used as they are.
func New(client *s3sdk.Client, bucket string) *Bucket {
	return NewWithProfile(client, bucket, AWS)
}

// NewWithProfile is New for an S3-compatible service described by p.
func NewWithProfile(client *s3sdk.Client, bucket string, p Profile) *Bucket {
	if p.Driver == "" {
		p.Driver = Scheme
	}
	return &Bucket{client: client, bucket: bucket, profile: p}
}

// Capabilities declares Conditional exclusion, and a conditional Delete if
// the profile says the service honours one.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: b.profile.ConditionalDelete}
}

// Get returns the object's body and its ETag from one GetObject response.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	out, err := b.client.GetObject(ctx, &s3sdk.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		e := b.opError(ctx, "get", key, driver.Condition{}, err)
		if isNoSuchKey(err) {
			e.Kind = driver.ErrNotExist
		}
		return nil, "", e
	}
	return out.Body, driver.Version(aws.ToString(out.ETag)), nil
}

// Put stores data under key with one PutObject request carrying cond as
// If-None-Match: * or If-Match: ETag, and returns the new ETag.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	if len(data) > MaxPutSize {
		return "", &driver.OpError{Driver: b.profile.Driver, Op: "put", Key: key, Cond: cond,
			Err: fmt.Errorf("body of %d bytes is larger than a single PUT allows (%d)", len(data), MaxPutSize)}
	}
	in := &s3sdk.PutObjectInput{
		Bucket:        &b.bucket,
		Key:           &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	switch v, match := cond.Match(); {
	case cond.Absent():
		in.IfNoneMatch = aws.String("*")
	case match && v == "":
		// An empty If-Match header is no condition at all to most servers.
		return "", &driver.OpError{Driver: b.profile.Driver, Op: "put", Key: key, Cond: cond,
			Kind: driver.ErrPrecondition, Err: errors.New("the empty version never matches")}
	case match:
		in.IfMatch = aws.String(string(v))
	}
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		e := b.opError(ctx, "put", key, cond, err)
		if refused(err, cond) {
			e.Kind = driver.ErrPrecondition
		}
		return "", e
	}
	v := driver.Version(aws.ToString(out.ETag))
	if v == "" {
		return "", &driver.OpError{Driver: b.profile.Driver, Op: "put", Key: key, Cond: cond,
			Err: errors.New("the service returned no ETag")}
	}
	return v, nil
}

// Delete removes key with one DeleteObject request. A missing key is
// success. IfMatch is sent as If-Match where the profile declares a
// conditional delete, and refused with driver.ErrUnsupported otherwise.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	in := &s3sdk.DeleteObjectInput{Bucket: &b.bucket, Key: &key}
	switch v, match := cond.Match(); {
	case cond.Absent():
		return &driver.OpError{Driver: b.profile.Driver, Op: "delete", Key: key, Cond: cond,
			Kind: driver.ErrUnsupported, Err: errors.New("IfAbsent makes no sense for a delete")}
	case match && !b.profile.ConditionalDelete:
		return &driver.OpError{Driver: b.profile.Driver, Op: "delete", Key: key, Cond: cond,
			Kind: driver.ErrUnsupported, Err: errors.New("the service ignores If-Match on DeleteObject")}
	case match && v == "":
		return &driver.OpError{Driver: b.profile.Driver, Op: "delete", Key: key, Cond: cond,
			Kind: driver.ErrPrecondition, Err: errors.New("the empty version never matches")}
	case match:
		in.IfMatch = aws.String(string(v))
	}
	if _, err := b.client.DeleteObject(ctx, in); err != nil {
		if cond.Unconditional() && isNoSuchKey(err) {
			return nil
		}
		e := b.opError(ctx, "delete", key, cond, err)
		if refused(err, cond) {
			e.Kind = driver.ErrPrecondition
		}
		return e
	}
	return nil
}

// opError wraps an SDK error, making sure that a cancelled or expired ctx
// shows in the chain even when the SDK reported it some other way.
func (b *Bucket) opError(ctx context.Context, op, key string, cond driver.Condition, err error) *driver.OpError {
	return &driver.OpError{Driver: b.profile.Driver, Op: op, Key: key, Cond: cond, Err: driver.WithContext(ctx, err)}
}

// refused reports whether err is the service refusing a conditional
// request; see s3proto.Refused.
func refused(err error, cond driver.Condition) bool {
	code, status := apiError(err)
	return s3proto.Refused(code, status, cond)
}

// isNoSuchKey reports whether err says the key does not exist (as opposed
// to the bucket).
func isNoSuchKey(err error) bool {
	return s3proto.Missing(apiError(err))
}

// apiError returns the service's error code and HTTP status, if err carries
// them.
func apiError(err error) (code string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}
