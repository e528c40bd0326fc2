package minio

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/httpdate"
	"github.com/mushroomdb/bucketlease/driver/internal/metadata"
	"github.com/mushroomdb/bucketlease/driver/internal/s3proto"
)

// Scheme is the URL scheme this package registers.
const Scheme = "minio"

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for minio:// URLs: the bucket and
// prefix of the path, on the server the host and the tls parameter name
// (https unless tls=false); the region says nothing of which bucket it is.
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	scheme := "https"
	if s := u.Query().Get("tls"); s != "" {
		secure, err := strconv.ParseBool(s)
		if err != nil {
			return "", "", "", fmt.Errorf("tls=%q is not true or false", s)
		}
		if !secure {
			scheme = "http"
		}
	}
	bucket, prefix, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	return bucket, prefix, scheme + "://" + u.Host, nil
}

// MaxPutSize is the largest body Put sends. Every Put is one PUT request
// (multipart is disabled), so that the precondition covers the whole write;
// a larger body is refused rather than split into parts.
const MaxPutSize = 5 << 30

// Bucket is one bucket of a MinIO server reached through minio-go. It is
// safe for concurrent use.
type Bucket struct {
	client *miniogo.Client
	bucket string
	// transport is the HTTP transport of the client OpenURL made, which
	// Close closes; nil for a client passed to New, which stays its
	// caller's.
	transport *http.Transport
}

// Close closes the idle connections of the client OpenURL made, once no
// operation is in flight; for a caller's client it does nothing. It
// returns nil.
func (b *Bucket) Close() error {
	if b.transport != nil {
		b.transport.CloseIdleConnections()
	}
	return nil
}

var _ driver.Bucket = (*Bucket)(nil)

// New returns the bucket named bucket on client. The client is the
// caller's, with its credentials, transport and retry policy.
func New(client *miniogo.Client, bucket string) *Bucket {
	return &Bucket{client: client, bucket: bucket}
}

// Credentials returns the credential chain NewClient uses: MINIO_ROOT_USER
// and MINIO_ROOT_PASSWORD, else MINIO_ACCESS_KEY and MINIO_SECRET_KEY, else
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
func Credentials() *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvMinio{},
		&credentials.EnvAWS{},
	})
}

// NewClient returns a client for the server at endpoint ("host:port"),
// with credentials from the environment (driver.ErrPermission if none).
func NewClient(endpoint string, secure bool, region string) (*miniogo.Client, error) {
	c, _, err := newClient(endpoint, secure, region)
	return c, err
}

// newClient is NewClient, returning also the client's HTTP transport
// (minio-go's default one, made here so that a Bucket that owns the client
// can close it).
func newClient(endpoint string, secure bool, region string) (*miniogo.Client, *http.Transport, error) {
	creds := Credentials()
	v, err := creds.GetWithContext(nil)
	if err != nil || v.AccessKeyID == "" || v.SecretAccessKey == "" {
		return nil, nil, fmt.Errorf("%w: no credentials: set MINIO_ACCESS_KEY and MINIO_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
			driver.ErrPermission)
	}
	tr, err := miniogo.DefaultTransport(secure)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the MinIO client's transport: %w", err)
	}
	var rt http.RoundTripper = tr
	if secure {
		rt = plainHTTPHint{tr}
	}
	rt = ServiceTimeTransport(rt)
	c, err := miniogo.New(endpoint, &miniogo.Options{Creds: creds, Secure: secure, Region: region, Transport: rt})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the MinIO client for %s: %w", endpoint, err)
	}
	return c, tr, nil
}

// OpenURL is the Open of the driver.Scheme for minio:// URLs. The Bucket
// owns the client it creates: close it when done.
func OpenURL(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := driver.Params(u, "tls", "region")
	if err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", errors.New("the URL must not hold credentials; set MINIO_ACCESS_KEY and MINIO_SECRET_KEY")
	}
	if u.Host == "" {
		return nil, "", errors.New("the URL names no server; use minio://HOST:PORT/BUCKET/PREFIX")
	}
	secure := true
	if s := q.Get("tls"); s != "" {
		if secure, err = strconv.ParseBool(s); err != nil {
			return nil, "", fmt.Errorf("tls=%q is not true or false", s)
		}
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return nil, "", errors.New("the URL names no bucket; use minio://HOST:PORT/BUCKET/PREFIX")
	}
	if err := s3proto.CheckBucketName(bucket); err != nil {
		return nil, "", err
	}
	c, tr, err := newClient(u.Host, secure, q.Get("region"))
	if err != nil {
		return nil, "", err
	}
	b := New(c, bucket)
	b.transport = tr
	return b, strings.Trim(prefix, "/"), nil
}

// Capabilities declares Conditional exclusion, metadata (not
// ListMetadata), and no conditional Delete.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: false, Metadata: true}
}

// userMetadata returns md, a write's metadata, as minio-go's
// PutObjectOptions.UserMetadata, each key with its x-amz-meta- prefix:
// minio-go sends a bare key that names a standard header ("expires") as
// that header, and refuses it.
func userMetadata(md driver.Metadata) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		out["x-amz-meta-"+k] = v
	}
	return out
}

// Get returns the object's body and its Attrs (the ETag, the service's
// time and, under opts.Metadata, the x-amz-meta-* headers), all from one
// GetObject response.
func (b *Bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, Scheme, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	// One GET, so body and version come from one response (the Client's
	// GetObject sends a HEAD, then a GET that fails if the object changed).
	var dates httpdate.Capture
	body, info, header, err := miniogo.Core{Client: b.client}.GetObject(dates.Context(op.Context()), b.bucket, key, miniogo.GetObjectOptions{})
	if err != nil {
		return nil, driver.Attrs{Time: serviceTime(&dates, time.Time{})}, op.Fail(kind(err, driver.Condition{}), err)
	}
	// The header, not info.LastModified, which minio-go replaces with
	// X-Minio-Source-Mtime (a replication source's clock) where present.
	a := driver.Attrs{Version: driver.Version(info.ETag), Time: serviceTime(&dates, httpdate.Parse(header.Get("Last-Modified")))}
	if a.Version == "" {
		body.Close()
		return nil, driver.Attrs{Time: a.Time}, op.Fail(nil, errors.New("the response carried no ETag, so the object's version is unknown"))
	}
	if opts.Metadata {
		// minio-go gives the keys in canonical header case ("Epoch").
		a.Metadata = metadata.Lower(info.UserMetadata)
	}
	return body, a, nil
}

// Put stores data under key with one PUT request carrying opts.If and
// opts.Metadata, and returns the new ETag, unquoted as minio-go reports
// it, and the service's time.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), Scheme, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	if len(data) > MaxPutSize {
		return driver.Attrs{}, op.Fail(nil, fmt.Errorf("body of %d bytes is larger than a single PUT allows (%d)", len(data), MaxPutSize))
	}
	cond := opts.If
	po := miniogo.PutObjectOptions{DisableMultipart: true, UserMetadata: userMetadata(op.Metadata)}
	if v, match := cond.Match(); match {
		// SetMatchETag adds the quotes itself.
		po.SetMatchETag(unquote(v))
	} else if cond == driver.IfAbsent() {
		po.SetMatchETagExcept("*")
	}
	// minio-go looks the bucket's region up (once, then cached) before its
	// first request to a bucket, when the client names none. Look it up
	// here, so that op.Context counts the PUT's own attempts only.
	if _, err := b.client.GetBucketLocation(ctx, b.bucket); err != nil {
		return driver.Attrs{}, op.Fail(kind(err, driver.Condition{}), err)
	}
	var dates httpdate.Capture
	info, err := b.client.PutObject(dates.Context(op.Context()), b.bucket, key, bytes.NewReader(data), int64(len(data)), po)
	t := serviceTime(&dates, time.Time{})
	if err != nil {
		return driver.Attrs{Time: t}, op.Fail(kind(err, cond), err)
	}
	if info.ETag == "" {
		return driver.Attrs{Time: t}, op.Fail(nil, errors.New("the server returned no ETag"))
	}
	return driver.Attrs{Version: driver.Version(info.ETag), Time: t}, nil
}

// serviceTime is the service's time: the Date the transport recorded under
// dates and, for a Get, modified; zero when no Date was recorded.
func serviceTime(dates *httpdate.Capture, modified time.Time) driver.ServiceTime {
	d := dates.Date()
	if d.IsZero() {
		return driver.ServiceTime{}
	}
	return driver.ServiceTime{Date: d, Modified: modified, Resolution: time.Second}
}

// ServiceTimeTransport returns rt (http.DefaultTransport if nil) wrapped
// so that a Bucket whose client uses it reports the service's time. Wrap
// the transport of a client passed to New with it.
func ServiceTimeTransport(rt http.RoundTripper) http.RoundTripper { return httpdate.Transport(rt) }

// Delete removes key unconditionally; a missing key is success. Any
// condition is refused with driver.ErrUnsupported without a request, since
// the server would ignore it.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.Capabilities(), Scheme, key, cond)
	if err != nil {
		return err
	}
	err = b.client.RemoveObject(op.Context(), b.bucket, key, miniogo.RemoveObjectOptions{})
	if err == nil {
		return nil
	}
	k := kind(err, cond)
	if k == driver.ErrNotExist {
		return nil
	}
	return op.Fail(k, err)
}

// unquote strips the quotes of an ETag as S3 returns it, so that a Version
// from the s3 driver works here too.
func unquote(v driver.Version) string {
	return strings.TrimSuffix(strings.TrimPrefix(string(v), `"`), `"`)
}

// kind classifies a minio-go error (see s3proto.Kind).
func kind(err error, cond driver.Condition) error {
	code, status := errorResponse(err)
	return s3proto.Kind(code, status, cond)
}

// errorResponse returns the S3 error code and HTTP status in err's chain.
// minio.ToErrorResponse is not used: it does not look through wrapping.
func errorResponse(err error) (code string, status int) {
	var er miniogo.ErrorResponse
	if errors.As(err, &er) {
		return er.Code, er.StatusCode
	}
	return "", 0
}

// plainHTTPHint is the transport of a client that speaks TLS: a server that
// answers in plain HTTP fails the handshake with an error that names
// neither the server's nor the URL's mistake, so it adds what to do.
type plainHTTPHint struct{ rt http.RoundTripper }

// RoundTrip sends r, and says to add tls=false to the URL when the server
// answered the TLS handshake in plain HTTP.
func (h plainHTTPHint) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(r)
	if err != nil && isPlainHTTP(err) {
		err = &plainHTTPError{host: r.URL.Host, err: err}
	}
	return resp, err
}

// isPlainHTTP reports whether err is a TLS handshake that a plain-HTTP
// server answered.
func isPlainHTTP(err error) bool {
	var rhe tls.RecordHeaderError
	if errors.As(err, &rhe) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "server gave HTTP response to HTTPS client") ||
		strings.Contains(msg, "first record does not look like a TLS handshake")
}

// plainHTTPError is a TLS handshake that a plain-HTTP server answered,
// with the hint to add tls=false.
type plainHTTPError struct {
	host string
	err  error
}

func (e *plainHTTPError) Error() string {
	return e.err.Error() + " (the server at " + e.host + " answered in plain HTTP, not TLS: if it serves plain HTTP, add tls=false to the minio:// URL, as in minio://" + e.host + "/BUCKET/PREFIX?tls=false)"
}

func (e *plainHTTPError) Unwrap() error { return e.err }
