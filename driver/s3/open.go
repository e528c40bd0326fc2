package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/s3proto"
)

// Scheme is the URL scheme this package registers.
const Scheme = "s3"

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for s3:// URLs: the bucket, the
// prefix and the endpoint parameter (empty for AWS); the region and
// path_style say how to reach the bucket, not which it is.
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	return u.Host, u.Path, u.Query().Get("endpoint"), nil
}

// ClientOptions say how NewClient builds a client. Credentials are not among
// them: they always come from the AWS SDK's default chain (environment,
// shared config and credentials files, SSO, web identity, ECS and EC2 roles).
type ClientOptions struct {
	// Region, such as "eu-west-1". Empty means the SDK's default chain
	// (AWS_REGION, the shared config file); one of the two must give one.
	Region string
	// Endpoint is the service's base URL, such as "https://s3.example.com"
	// or "http://127.0.0.1:9000". Empty means AWS S3.
	Endpoint string
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// rather than in the host name (bucket.endpoint/key).
	PathStyle bool
	// ChecksumWhenRequired sends and validates flexible checksums (CRC32 and
	// the like) only where an operation requires them, for services that
	// reject the headers the SDK sends by default since s3 v1.73.0.
	ChecksumWhenRequired bool
}

// NewClient builds an S3 client from o and the SDK's default configuration
// chain, without contacting the service. The client is the caller's.
func NewClient(ctx context.Context, o ClientOptions) (*s3sdk.Client, error) {
	c, _, err := newClient(ctx, o)
	return c, err
}

// OpenWithProfile returns the bucket named bucket, with profile p, on
// clients built from o; the Bucket owns them and its Close closes their
// connections. Streamed writes and listings get one client and Get, Put
// and Delete another, each with its own transport, so that a renewal never
// queues behind a part on one HTTP/2 connection.
func OpenWithProfile(ctx context.Context, o ClientOptions, bucket string, p Profile) (*Bucket, error) {
	return openWithProfile(ctx, o, bucket, p)
}

// openWithProfile is OpenWithProfile; dataTransport, if given, is applied
// to the streaming client's transport (tests bound it).
func openWithProfile(ctx context.Context, o ClientOptions, bucket string, p Profile, dataTransport ...func(*http.Transport)) (*Bucket, error) {
	cfg, err := loadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	tracked := &conns{open: map[*trackedConn]struct{}{}}
	b := NewWithProfile(build(cfg, o, tracked, dataTransport...), bucket, p)
	b.ctl = build(cfg, o, tracked)
	b.conns = tracked
	return b, nil
}

// newClient is NewClient, returning also what tracks the connections of
// the client's HTTP transport.
func newClient(ctx context.Context, o ClientOptions) (*s3sdk.Client, *conns, error) {
	cfg, err := loadConfig(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	tracked := &conns{open: map[*trackedConn]struct{}{}}
	return build(cfg, o, tracked), tracked, nil
}

// loadConfig checks o and loads the SDK's default configuration for it.
func loadConfig(ctx context.Context, o ClientOptions) (aws.Config, error) {
	if o.Endpoint != "" {
		if err := checkEndpoint(o.Endpoint); err != nil {
			return aws.Config{}, err
		}
	}
	var load []func(*config.LoadOptions) error
	if o.Region != "" {
		load = append(load, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading the AWS SDK configuration: %w", err)
	}
	if cfg.Region == "" && o.Endpoint != "" {
		// An S3-compatible server at an endpoint of its own (MinIO, a
		// gateway) signs with a region it mostly ignores; us-east-1 is
		// what such servers take by default. AWS itself still needs one.
		cfg.Region = "us-east-1"
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no region: add ?region=… to the URL or set AWS_REGION")
	}
	if cfg.Credentials != nil {
		cfg.Credentials = credentialErrors{cfg.Credentials}
	}
	return cfg, nil
}

// build makes a client of cfg and o with an HTTP transport of its own,
// whose dialer tracks every connection so that Close can close those
// left (the SDK keeps the transport out of reach).
func build(cfg aws.Config, o ClientOptions, tracked *conns, extra ...func(*http.Transport)) *s3sdk.Client {
	return s3sdk.NewFromConfig(cfg, func(opt *s3sdk.Options) {
		// The client's options are final here (the defaults mode's dialer
		// settings, a custom CA bundle), so the dialer is wrapped last.
		// WithTransportOptions copies the BuildableClient with a clone of
		// its transport: each client built here has its own pool.
		if bc, ok := opt.HTTPClient.(*awshttp.BuildableClient); ok {
			opt.HTTPClient = bc.WithTransportOptions(append([]func(*http.Transport){tracked.wrap}, extra...)...)
		}
		if o.Endpoint != "" {
			opt.BaseEndpoint = aws.String(o.Endpoint)
		}
		opt.UsePathStyle = o.PathStyle
		// The SDK logs "Response has no supported checksum" at DEBUG for
		// every object written by a client that sent none (another tool,
		// an older SDK), on stderr and inside hold --json's stream: noise.
		opt.DisableLogOutputChecksumValidationSkipped = true
		if o.ChecksumWhenRequired {
			opt.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			opt.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
}

// checkEndpoint accepts an http or https base URL with a host and nothing
// that could carry a secret or confuse the SDK.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("endpoint is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("endpoint must be an http:// or https:// URL, not %q", u.Scheme)
	case u.Host == "":
		return errors.New("endpoint has no host")
	case u.User != nil:
		return errors.New("endpoint must not hold credentials; use the AWS credential chain")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("endpoint must not have a query or fragment")
	}
	return nil
}

// OpenURL is the Open of the driver.Scheme for s3:// URLs. The Bucket owns
// the client it creates: close it when done.
func OpenURL(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := driver.Params(u, "region", "endpoint", "path_style")
	if err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", errors.New("the URL must not hold credentials; they come from the AWS credential chain")
	}
	if u.Host == "" {
		return nil, "", errors.New("the URL names no bucket; use s3://BUCKET/PREFIX")
	}
	if err := s3proto.CheckBucketName(u.Host); err != nil {
		return nil, "", fmt.Errorf("%w; the URL's host is the bucket (s3://BUCKET/PREFIX), and a server's address or port "+
			"belongs in the endpoint parameter", err)
	}
	o := ClientOptions{Region: q.Get("region"), Endpoint: q.Get("endpoint")}
	if s := q.Get("path_style"); s != "" {
		if o.PathStyle, err = strconv.ParseBool(s); err != nil {
			return nil, "", fmt.Errorf("path_style=%q is not true or false", s)
		}
	}
	b, err := OpenWithProfile(ctx, o, u.Host, AWS)
	if err != nil {
		return nil, "", err
	}
	return b, strings.Trim(u.Path, "/"), nil
}

// credentialErrors marks the credential chain's errors, which the SDK
// reports only as text, so that they are driver.ErrPermission.
type credentialErrors struct{ aws.CredentialsProvider }

// Retrieve returns the inner provider's credentials, or its error marked.
func (c credentialErrors) Retrieve(ctx context.Context) (aws.Credentials, error) {
	v, err := c.CredentialsProvider.Retrieve(ctx)
	if err != nil {
		return v, &credentialsError{err: err}
	}
	return v, nil
}

// credentialsError is an error of the credential chain.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "getting AWS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// conns are the connections a client's transport dialed and has not
// closed.
type conns struct {
	mu   sync.Mutex
	open map[*trackedConn]struct{}
}

// wrap makes tr's dialer track the connections it dials.
func (c *conns) wrap(tr *http.Transport) {
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t := &trackedConn{Conn: nc, c: c}
		c.mu.Lock()
		c.open[t] = struct{}{}
		c.mu.Unlock()
		return t, nil
	}
}

// closeAll closes every connection still open.
func (c *conns) closeAll() {
	c.mu.Lock()
	open := make([]*trackedConn, 0, len(c.open))
	for t := range c.open {
		open = append(open, t)
	}
	c.mu.Unlock()
	for _, t := range open {
		_ = t.Close()
	}
}

// trackedConn is a connection conns tracks until it is closed.
type trackedConn struct {
	net.Conn
	c *conns
}

// Close closes the connection and stops tracking it.
func (t *trackedConn) Close() error {
	t.c.mu.Lock()
	delete(t.c.open, t)
	t.c.mu.Unlock()
	return t.Conn.Close()
}
