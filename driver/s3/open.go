package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/s3proto"
)

// Scheme is the URL scheme this package registers.
const Scheme = "s3"

func init() { driver.Register(Scheme, OpenURL) }

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
// chain. It contacts no service.
func NewClient(ctx context.Context, o ClientOptions) (*s3sdk.Client, error) {
	if o.Endpoint != "" {
		if err := checkEndpoint(o.Endpoint); err != nil {
			return nil, err
		}
	}
	var load []func(*config.LoadOptions) error
	if o.Region != "" {
		load = append(load, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS SDK configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no region: add ?region=… to the URL or set AWS_REGION")
	}
	if cfg.Credentials != nil {
		cfg.Credentials = credentialErrors{cfg.Credentials}
	}
	return s3sdk.NewFromConfig(cfg, func(opt *s3sdk.Options) {
		if o.Endpoint != "" {
			opt.BaseEndpoint = aws.String(o.Endpoint)
		}
		opt.UsePathStyle = o.PathStyle
		if o.ChecksumWhenRequired {
			opt.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			opt.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	}), nil
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

// OpenURL is the driver.Opener for s3://BUCKET/PREFIX?region=R&endpoint=E&path_style=true,
// which init registers with driver.Register; a custom driver.Mux can
// register it too.
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
	client, err := NewClient(ctx, o)
	if err != nil {
		return nil, "", err
	}
	return New(client, u.Host), strings.Trim(u.Path, "/"), nil
}

// credentialErrors marks the errors of the credential chain, so that a
// request that could not get credentials (none configured, an expired SSO
// session, a refused role) is driver.ErrPermission: the SDK reports them
// only as text.
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
