package r2

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/s3proto"
	"github.com/mushroomdb/bucketlease/driver/s3"
)

// Scheme is the URL scheme this package registers.
const Scheme = "r2"

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for r2:// URLs: the bucket and
// prefix of the path, on the endpoint parameter or else the account's
// endpoint.
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	bucket, prefix, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	endpoint = u.Query().Get("endpoint")
	if endpoint == "" {
		endpoint = Endpoint(strings.ToLower(u.Host))
	}
	return bucket, prefix, endpoint, nil
}

// Profile is R2's profile for the S3 driver: no conditional delete (R2
// documents no If-Match on DeleteObject), and about one write per second
// to one object name.
var Profile = s3.Profile{Driver: Scheme, ConditionalDelete: false, KeyWriteInterval: time.Second}

// Region is the region R2 expects in request signatures.
const Region = "auto"

// New returns the R2 bucket named bucket on client, which the caller built
// for R2 (ClientOptions gives the settings).
func New(client *s3sdk.Client, bucket string) *s3.Bucket {
	return s3.NewWithProfile(client, bucket, Profile)
}

// Endpoint returns the S3 API endpoint of an R2 account.
func Endpoint(accountID string) string {
	return "https://" + accountID + ".r2.cloudflarestorage.com"
}

// ClientOptions returns the S3 client settings for the R2 account,
// checksums only where required (R2 answers the SDK's default CRC32 with
// 501).
func ClientOptions(accountID string) s3.ClientOptions {
	return s3.ClientOptions{
		Region:               Region,
		Endpoint:             Endpoint(accountID),
		PathStyle:            true,
		ChecksumWhenRequired: true,
	}
}

// validAccountID reports whether id can stand in a host name. Cloudflare
// account IDs are 32 lowercase hex digits; this accepts any DNS label.
func validAccountID(id string) bool {
	if id == "" || len(id) > 63 || id[0] == '-' || id[len(id)-1] == '-' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// OpenURL is the Open of the driver.Scheme for r2:// URLs. The Bucket owns
// the client it creates: close it when done.
func OpenURL(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := driver.Params(u, "endpoint")
	if err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", errors.New("the URL must not hold credentials; they come from the AWS credential chain (R2 API token as AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)")
	}
	if !validAccountID(u.Host) {
		return nil, "", errors.New("the URL names no valid account ID; use r2://ACCOUNT_ID/BUCKET/PREFIX")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return nil, "", errors.New("the URL names no bucket; use r2://ACCOUNT_ID/BUCKET/PREFIX")
	}
	if err := s3proto.CheckBucketName(bucket); err != nil {
		return nil, "", err
	}
	if strings.Contains(bucket, ".") {
		return nil, "", fmt.Errorf("bucket name %q is not valid: R2 bucket names are lower-case letters, digits and hyphens, with no dots", bucket)
	}
	o := ClientOptions(u.Host)
	p := Profile
	if e := q.Get("endpoint"); e != "" {
		o.Endpoint = e
		if !isR2Endpoint(e) {
			// Another S3 server (an emulator, a test's MinIO) is not taken to
			// limit writes per key: a 429 from it is still sent again after
			// its Retry-After, but writes are not spaced in advance.
			p.KeyWriteInterval = 0
		}
	}
	// The bucket owns the client it opens: bucket.Bucket.Close closes it.
	b, err := s3.OpenWithProfile(ctx, o, bucket, p)
	if err != nil {
		return nil, "", err
	}
	return b, strings.Trim(prefix, "/"), nil
}

// isR2Endpoint reports whether endpoint is Cloudflare's own
// (https://….r2.cloudflarestorage.com, any jurisdiction).
func isR2Endpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err == nil && u.Scheme == "https" && strings.HasSuffix(strings.ToLower(u.Hostname()), ".r2.cloudflarestorage.com")
}
