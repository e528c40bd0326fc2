package azure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/httpdate"
)

// Scheme is the URL scheme this package registers.
const Scheme = "azblob"

// driverName is the driver's name in errors.
const driverName = "azure"

// The environment variables open reads.
const (
	EnvConnectionString = "AZURE_STORAGE_CONNECTION_STRING"
	EnvAccount          = "AZURE_STORAGE_ACCOUNT"
)

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for azblob:// URLs: the
// container and prefix on the account's blob service.
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	q, err := checkURL(u)
	if err != nil {
		return "", "", "", err
	}
	if cs := os.Getenv(EnvConnectionString); cs != "" {
		account, _ := connStringAccount(cs)
		return u.Host, u.Path, "connection string of account " + account, nil
	}
	endpoint, err = serviceURL(q.Get("account"), q.Get("endpoint"))
	if err != nil {
		return "", "", "", err
	}
	return u.Host, u.Path, endpoint, nil
}

// accountName is the shape of a storage account name (Azurite's is longer
// than Azure's 24 characters).
var accountName = regexp.MustCompile(`^[a-z0-9]{3,63}$`)

// OpenURL is the Open of the driver.Scheme for
// azblob://CONTAINER/PREFIX?account=NAME&endpoint=URL, which init registers;
// a program may register it under a scheme of its own too.
func OpenURL(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := checkURL(u)
	if err != nil {
		return nil, "", err
	}
	c, err := containerClient(u.Host, q.Get("account"), q.Get("endpoint"))
	if err != nil {
		return nil, "", err
	}
	return New(c), strings.Trim(u.Path, "/"), nil
}

// checkURL refuses an azblob URL that is malformed whatever the
// environment says, and returns its parameters.
func checkURL(u *url.URL) (url.Values, error) {
	q, err := driver.Params(u, "account", "endpoint")
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		return nil, errors.New("azblob URLs carry no credentials; they come from " + EnvConnectionString + " or the default Azure credential chain")
	}
	if u.Host == "" {
		return nil, errors.New("the URL names no container; use azblob://CONTAINER/prefix")
	}
	return q, CheckContainerName(u.Host)
}

// containerClient builds the client for one container from the
// environment's connection string, or else the default credential chain.
// No error it returns contains the connection string.
func containerClient(name, account, endpoint string) (*container.Client, error) {
	if cs := os.Getenv(EnvConnectionString); cs != "" {
		if endpoint != "" {
			return nil, errors.New("the endpoint parameter cannot be used while " + EnvConnectionString +
				" is set: the connection string names its own endpoint")
		}
		csAccount, ok := connStringAccount(cs)
		if !ok {
			return nil, errors.New(EnvConnectionString + " is not a valid connection string")
		}
		if account != "" && csAccount != "" && account != csAccount {
			return nil, fmt.Errorf("the URL names account %q but %s is for account %q", account, EnvConnectionString, csAccount)
		}
		c, err := container.NewClientFromConnectionString(cs, name, nil)
		if err != nil {
			// The SDK's message may quote the string; do not pass it on.
			return nil, errors.New(EnvConnectionString + " is not a valid connection string")
		}
		return c, nil
	}
	serviceURL, err := serviceURL(account, endpoint)
	if err != nil {
		return nil, err
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("azure: default credential chain: %w", err)
	}
	c, err := container.NewClient(serviceURL+url.PathEscape(name), cred, nil)
	if err != nil {
		return nil, fmt.Errorf("azure: create client: %w", err)
	}
	return c, nil
}

// serviceURL is the blob service URL, with a trailing slash, from the
// endpoint parameter or else the account (parameter, then environment).
func serviceURL(account, endpoint string) (string, error) {
	if endpoint != "" {
		e, err := url.Parse(endpoint)
		if err != nil || e.Host == "" || (e.Scheme != "http" && e.Scheme != "https") ||
			e.User != nil || e.RawQuery != "" || e.Fragment != "" {
			return "", errors.New(`the endpoint parameter must be the blob service URL, such as ` +
				`"https://ACCOUNT.blob.core.windows.net" or "http://127.0.0.1:10000/devstoreaccount1", without a query`)
		}
		if account != "" {
			return "", errors.New("give either the account or the endpoint parameter, not both")
		}
		return strings.TrimRight(e.String(), "/") + "/", nil
	}
	if account == "" {
		account = os.Getenv(EnvAccount)
	}
	if account == "" {
		return "", errors.New("no storage account: set the account parameter, " + EnvAccount + ", or " + EnvConnectionString)
	}
	if !accountName.MatchString(account) {
		return "", fmt.Errorf("%q is not a storage account name (lower-case letters and digits)", account)
	}
	return "https://" + account + ".blob.core.windows.net/", nil
}

// connStringAccount returns the AccountName of a connection string ("" if it
// has none, as a SAS-only one may not) and whether it parses at all.
func connStringAccount(cs string) (string, bool) {
	account := ""
	for _, part := range strings.Split(strings.TrimRight(cs, ";"), ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return "", false
		}
		if k == "AccountName" {
			account = v
		}
	}
	return account, true
}

// CheckContainerName reports whether name follows Azure's container
// naming rule; the error says the rule.
func CheckContainerName(name string) error {
	switch name {
	case "$root", "$web", "$logs":
		return nil
	}
	why := ""
	switch {
	case len(name) < 3 || len(name) > 63:
		why = fmt.Sprintf("it is %d characters long", len(name))
	case strings.ContainsFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }):
		why = "it has a character other than a lower-case letter, a digit or a hyphen"
	case name[0] == '-' || name[len(name)-1] == '-':
		why = "it begins or ends with a hyphen"
	case strings.Contains(name, "--"):
		why = "it has two hyphens in a row"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("container name %q is not valid (%s): Azure container names are 3 to 63 lower-case letters, "+
		"digits and hyphens, beginning and ending with a letter or digit, with no two hyphens in a row; the URL's "+
		"host is the container (azblob://CONTAINER/PREFIX), and a server's address belongs in the endpoint parameter", name, why)
}

// Bucket is an Azure Blob Storage container. It is safe for concurrent use.
type Bucket struct {
	c *container.Client
}

// New returns the container c reaches. The caller keeps ownership of c.
func New(c *container.Client) *Bucket { return &Bucket{c: c} }

// Capabilities declares Conditional exclusion, a conditional Delete and
// metadata.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true, Metadata: true, ListMetadata: true}
}

// beginGet starts a Get (driver.BeginGet), and also refuses a key with a
// segment ending in a dot (dotted).
func (b *Bucket) beginGet(ctx context.Context, key string) (*driver.Op, error) {
	o, err := driver.BeginGet(ctx, driverName, key)
	return dotted(key, o, err)
}

// beginDelete is beginGet for a Delete under cond (driver.BeginDelete).
func (b *Bucket) beginDelete(ctx context.Context, key string, cond driver.Condition) (*driver.Op, error) {
	o, err := driver.BeginDelete(ctx, b.Capabilities(), driverName, key, cond)
	return dotted(key, o, err)
}

// beginPut is beginGet for a Put or PutStream under opts (driver.BeginPut).
func (b *Bucket) beginPut(ctx context.Context, key string, opts driver.PutOptions) (*driver.Op, error) {
	o, err := driver.BeginPut(ctx, b.Capabilities(), driverName, key, opts)
	return dotted(key, o, err)
}

// dotted returns o and err, begun for key, and refuses a key with a
// segment ending in a dot, which Blob Storage advises against because its
// URL handling may drop the dot, so two keys could name one blob.
func dotted(key string, o *driver.Op, err error) (*driver.Op, error) {
	if err != nil {
		return o, err
	}
	for _, seg := range strings.Split(key, "/") {
		if strings.HasSuffix(seg, ".") {
			return o, o.Fail(driver.ErrInvalidKey, fmt.Errorf("key %q has a segment ending in a dot, which Azure Blob "+
				"Storage may drop, so two keys could name one blob", key))
		}
	}
	return o, nil
}

// Get downloads the blob and returns its body and its Attrs (the ETag, the
// service's time and, under opts.Metadata, the blob's metadata), all from
// the one Get Blob response.
func (b *Bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := b.beginGet(ctx, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	var raw *http.Response
	resp, err := b.c.NewBlobClient(key).DownloadStream(policy.WithCaptureResponse(op.Context(), &raw), nil)
	if err != nil {
		return nil, driver.Attrs{Time: serviceTime(raw, nil)}, b.fail(op, classify(err, driver.Condition{}), err)
	}
	a := driver.Attrs{Time: serviceTime(raw, resp.LastModified)}
	if resp.ETag == nil || *resp.ETag == "" {
		resp.Body.Close()
		return nil, a, op.Fail(nil, errors.New("the response carried no ETag"))
	}
	a.Version = driver.Version(*resp.ETag)
	if opts.Metadata {
		a.Metadata = fromAzure(resp.Metadata)
	}
	return resp.Body, a, nil
}

// Put uploads data as a block blob in one Put Blob request, with
// opts.Metadata, if opts.If holds, and returns the new ETag and the
// service's time.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := b.beginPut(ctx, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	var raw *http.Response
	resp, err := b.c.NewBlockBlobClient(key).Upload(policy.WithCaptureResponse(op.Context(), &raw),
		streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{AccessConditions: accessConditions(opts.If),
			Metadata: toAzure(op.Metadata)})
	a := driver.Attrs{Time: serviceTime(raw, nil)}
	if err != nil {
		if v, ok := landed(raw, http.StatusCreated); ok {
			a.Version = v
			return a, nil
		}
		return a, b.fail(op, classify(err, opts.If), err)
	}
	if resp.ETag == nil || *resp.ETag == "" {
		return a, op.Fail(nil, errors.New("the response carried no ETag"))
	}
	a.Version = driver.Version(*resp.ETag)
	return a, nil
}

// serviceTime is the service's time raw, the call's last response, states:
// its Date and, for a Get, modified; zero without a response.
func serviceTime(raw *http.Response, modified *time.Time) driver.ServiceTime {
	if raw == nil {
		return driver.ServiceTime{}
	}
	date := httpdate.Parse(raw.Header.Get("Date"))
	if date.IsZero() {
		return driver.ServiceTime{}
	}
	var mod time.Time
	if modified != nil {
		mod = *modified
	}
	return driver.ServiceTime{Date: date, Modified: mod, Resolution: time.Second}
}

// Delete removes the blob if cond holds. An unconditional Delete of a
// missing blob succeeds; under IfMatch a missing blob is ErrPrecondition.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := b.beginDelete(ctx, key, cond)
	if err != nil {
		return err
	}
	var raw *http.Response
	_, err = b.c.NewBlobClient(key).Delete(policy.WithCaptureResponse(op.Context(), &raw),
		&blob.DeleteOptions{AccessConditions: accessConditions(cond)})
	if err == nil {
		return nil
	}
	if _, ok := landed(raw, http.StatusAccepted); ok {
		return nil
	}
	k := classify(err, cond)
	if k == driver.ErrNotExist && cond == (driver.Condition{}) {
		return nil
	}
	return b.fail(op, k, err)
}

// landed reports whether raw, captured for a write the SDK reported as
// failed, is the service's success, with its ETag: the SDK reports a
// context's end in place of a success, and such a write did land.
func landed(raw *http.Response, ok int) (driver.Version, bool) {
	if raw == nil || raw.StatusCode != ok {
		return "", false
	}
	etag := raw.Header.Get("ETag")
	return driver.Version(etag), etag != "" || ok == http.StatusAccepted
}

// accessConditions renders cond as the request's conditional headers.
func accessConditions(cond driver.Condition) *blob.AccessConditions {
	var m blob.ModifiedAccessConditions
	switch v, match := cond.Match(); {
	case cond == driver.IfAbsent():
		etag := azcore.ETagAny
		m.IfNoneMatch = &etag
	case match:
		etag := azcore.ETag(v)
		m.IfMatch = &etag
	default:
		return nil
	}
	return &blob.AccessConditions{ModifiedAccessConditions: &m}
}

// permissionCodes are Blob Storage's error codes for refused credentials
// or permissions.
var permissionCodes = []bloberror.Code{bloberror.AuthenticationFailed, bloberror.AuthorizationFailure,
	bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationProtocolMismatch,
	bloberror.AuthorizationResourceTypeMismatch, bloberror.AuthorizationServiceMismatch,
	bloberror.AuthorizationSourceIPMismatch, bloberror.InsufficientAccountPermissions,
	bloberror.InvalidAuthenticationInfo, bloberror.NoAuthenticationInformation, bloberror.AccountIsDisabled}

// classify maps a failed request to the contract's kinds by the service's
// error code, not the status alone: a 412 LeaseIdMissing (an Azure blob
// lease) is not a refused condition.
func classify(err error, cond driver.Condition) error {
	var afe *azidentity.AuthenticationFailedError
	var are *azidentity.AuthenticationRequiredError
	var re *azcore.ResponseError
	_, match := cond.Match()
	switch {
	case errors.As(err, &afe) || errors.As(err, &are):
		return driver.ErrPermission
	case bloberror.HasCode(err, permissionCodes...),
		errors.As(err, &re) && (re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden):
		return driver.ErrPermission
	case errors.As(err, &re) && (re.StatusCode == http.StatusTooManyRequests ||
		re.StatusCode == http.StatusServiceUnavailable && re.ErrorCode == string(bloberror.ServerBusy)):
		return driver.ErrRateLimited
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return driver.ErrBucketNotExist
	case cond != (driver.Condition{}) && bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists):
		return driver.ErrPrecondition
	case bloberror.HasCode(err, bloberror.BlobNotFound) && match:
		return driver.ErrPrecondition
	case bloberror.HasCode(err, bloberror.BlobNotFound) && cond == (driver.Condition{}):
		return driver.ErrNotExist
	}
	return nil
}

// fail builds the OpError with a one-line message in place of the SDK's
// dump of the response body.
func (b *Bucket) fail(op *driver.Op, kind, err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		err = &serviceError{re: re, err: err}
	}
	if kind == driver.ErrRateLimited {
		var wait time.Duration
		if re != nil && re.RawResponse != nil {
			now, perr := http.ParseTime(re.RawResponse.Header.Get("Date"))
			if perr != nil {
				now = time.Now()
			}
			wait, _ = httpdate.RetryAfter(re.RawResponse.Header.Get("Retry-After"), now)
		}
		return op.RateLimited(err, wait)
	}
	return op.Fail(kind, err)
}

// serviceError shortens an *azcore.ResponseError's message to its status and
// error code; errors.As still reaches the ResponseError.
type serviceError struct {
	re  *azcore.ResponseError
	err error
}

func (e *serviceError) Error() string {
	code := e.re.ErrorCode
	if code == "" {
		code = "no error code"
	}
	msg := fmt.Sprintf("HTTP %d %s", e.re.StatusCode, code)
	if strings.HasPrefix(code, "Lease") {
		msg += " (the blob has an Azure blob lease, which this driver does not use; break it with the Azure tools)"
	}
	return msg
}

func (e *serviceError) Unwrap() error { return e.err }
