package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver"
)

// Scheme is the URL scheme this package registers.
const Scheme = "gs"

// name is the driver's name in errors.
const driverName = "gcs"

func init() { driver.Register(Scheme, open) }

// open is the Opener for gs://BUCKET/PREFIX?endpoint=URL.
func open(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := driver.Params(u, "endpoint")
	if err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", errors.New("gs URLs carry no credentials; they come from Application Default Credentials")
	}
	if u.Host == "" {
		return nil, "", errors.New("the URL names no bucket; use gs://BUCKET/prefix")
	}
	opts, err := clientOptions(q.Get("endpoint"))
	if err != nil {
		return nil, "", err
	}
	// Reads use the JSON API like every other call, rather than the client
	// library's default XML API, which emulators serve only on their
	// "public host".
	opts = append(opts, storage.WithJSONReads())
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("gcs: create client: %w", err)
	}
	return New(client, u.Host), strings.Trim(u.Path, "/"), nil
}

// clientOptions turns the endpoint parameter into client options. An http://
// endpoint (an emulator) gets no credentials, so that a token never crosses
// the network in clear text; an https:// one uses Application Default
// Credentials.
func clientOptions(endpoint string) ([]option.ClientOption, error) {
	if endpoint == "" {
		return nil, nil
	}
	e, err := url.Parse(endpoint)
	if err != nil || e.Host == "" || (e.Scheme != "http" && e.Scheme != "https") ||
		e.User != nil || e.RawQuery != "" || e.Fragment != "" {
		return nil, errors.New(`the endpoint parameter must be a URL such as "http://127.0.0.1:4443" or "https://storage.example.com"`)
	}
	e.Path = strings.TrimRight(e.Path, "/") + "/storage/v1/"
	opts := []option.ClientOption{option.WithEndpoint(e.String())}
	if e.Scheme == "http" {
		opts = append(opts, option.WithoutAuthentication())
	}
	return opts, nil
}

// Bucket is a Google Cloud Storage bucket. It is safe for concurrent use.
type Bucket struct {
	bkt *storage.BucketHandle
}

// New returns the bucket named name, reached through client. The caller
// keeps ownership of client and closes it when done.
func New(client *storage.Client, name string) *Bucket {
	return &Bucket{bkt: client.Bucket(name)}
}

// Capabilities declares Conditional exclusion and a conditional Delete:
// Cloud Storage enforces ifGenerationMatch on uploads and deletes.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
}

// Get reads the object and returns its body and generation, both from the
// one read response.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	r, err := b.bkt.Object(key).NewReader(ctx)
	if err != nil {
		var kind error
		if errors.Is(err, storage.ErrObjectNotExist) {
			kind = driver.ErrNotExist
		}
		return nil, "", b.fail(ctx, "get", key, driver.Condition{}, kind, err)
	}
	if r.Attrs.Generation <= 0 {
		r.Close()
		return nil, "", b.fail(ctx, "get", key, driver.Condition{}, nil,
			errors.New("the read response carried no object generation"))
	}
	return r, version(r.Attrs.Generation), nil
}

// Put uploads data in one request if cond holds and returns the new
// generation.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	obj := b.bkt.Object(key)
	switch v, match := cond.Match(); {
	case cond.Absent():
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	case match:
		g, err := generation(v)
		if err != nil {
			return "", b.fail(ctx, "put", key, cond, driver.ErrPrecondition, err)
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	if err := ctx.Err(); err != nil {
		return "", b.fail(ctx, "put", key, cond, nil, err)
	}
	// The Writer's context must outlive Close, and a cancel aborts the
	// upload; cancelling once Close returned releases its goroutine.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.NewWriter(wctx)
	// ChunkSize 0: the whole body goes in one multipart request, never a
	// resumable upload, whatever its size. Such a request is also never
	// retried by the client library (see the package documentation).
	w.ChunkSize = 0
	w.ContentType = "application/octet-stream"
	_, err := w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", b.fail(ctx, "put", key, cond, classify(err, cond), err)
	}
	attrs := w.Attrs()
	if attrs == nil || attrs.Generation <= 0 {
		return "", b.fail(ctx, "put", key, cond, nil, errors.New("the upload response carried no object generation"))
	}
	return version(attrs.Generation), nil
}

// Delete removes the object if cond holds. An unconditional Delete of a
// missing key succeeds; under IfMatch a missing key is ErrPrecondition.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	obj := b.bkt.Object(key)
	if cond.Absent() {
		return b.fail(ctx, "delete", key, cond, driver.ErrUnsupported,
			errors.New("IfAbsent is meaningless for a delete"))
	}
	if v, ok := cond.Match(); ok {
		g, err := generation(v)
		if err != nil {
			return b.fail(ctx, "delete", key, cond, driver.ErrPrecondition, err)
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	err := obj.Delete(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrObjectNotExist) && cond.Unconditional():
		return nil
	}
	return b.fail(ctx, "delete", key, cond, classify(err, cond), err)
}

// classify maps a failed conditional write to ErrPrecondition: 412 always,
// and a missing object under IfMatch (the condition cannot hold).
func classify(err error, cond driver.Condition) error {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed {
		return driver.ErrPrecondition
	}
	if _, match := cond.Match(); match && errors.Is(err, storage.ErrObjectNotExist) {
		return driver.ErrPrecondition
	}
	return nil
}

// fail builds the OpError, adding the context's error when the context
// ended, so that errors.Is(err, context.Canceled) holds whatever the client
// library made of the cancellation.
func (b *Bucket) fail(ctx context.Context, op, key string, cond driver.Condition, kind, err error) error {
	return &driver.OpError{Driver: driverName, Op: op, Key: key, Cond: cond, Kind: kind, Err: driver.WithContext(ctx, err)}
}

// version renders a generation as a Version.
func version(g int64) driver.Version { return driver.Version(strconv.FormatInt(g, 10)) }

// generation parses a Version as the positive decimal generation number
// this driver's versions are. Anything else names no object generation, so
// IfMatch of it cannot hold; it is refused before anything is sent, since
// GenerationMatch 0 would mean "does not exist" and a negative one would be
// ignored by the client library.
func generation(v driver.Version) (int64, error) {
	g, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || g <= 0 || version(g) != v {
		return 0, fmt.Errorf("version %q is not a Cloud Storage object generation, so it matches no object; nothing was sent", string(v))
	}
	return g, nil
}
