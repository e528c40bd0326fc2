// Package kv is a complete third-party driver for bucketlease, written
// against its public packages only: it keeps the lease in a bucket of the
// kvstore service. Importing it registers the scheme "kv":
//
//	kv://HOST:PORT/BUCKET/PREFIX?tls=false
//
// with the token from the KV_TOKEN environment variable. Its conformance
// test (kv_test.go) runs the whole drivertest suite.
//
// The driver is only the mapping of the service's API to the contract:
// driver.Begin enforces the contract's mechanical rules, driver.Op.Context
// lets Op.Fail tell a refused retry from a refused first attempt, and
// driver.Op.Fail builds every error.
package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Scheme is the URL scheme this package registers.
const Scheme = "kv"

// EnvToken is the environment variable OpenURL reads the token from.
const EnvToken = "KV_TOKEN"

func init() { driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate}) }

// Locate says where a kv:// URL points: the bucket and prefix of its path,
// on the server its host and tls parameter name. It is the Locate of the
// driver.Scheme init registers, so that two spellings of one URL name one
// place.
func Locate(u *url.URL) (driver.Location, error) {
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	scheme := "https"
	if s := u.Query().Get("tls"); s != "" {
		tls, err := strconv.ParseBool(s)
		if err != nil {
			return driver.Location{}, fmt.Errorf("tls=%q is not true or false", s)
		}
		if !tls {
			scheme = "http"
		}
	}
	return driver.Location{Bucket: bucket, Prefix: strings.Trim(prefix, "/"), Endpoint: scheme + "://" + u.Host}, nil
}

// OpenURL is the Open of the driver.Scheme init registers, for
// kv://HOST:PORT/BUCKET/PREFIX?tls=false URLs.
func OpenURL(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
	if _, err := driver.Params(u, "tls"); err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", errors.New("kv URLs carry no credentials; set " + EnvToken)
	}
	loc, err := Locate(u)
	if err != nil {
		return nil, "", err
	}
	if u.Host == "" || loc.Bucket == "" {
		return nil, "", errors.New("use kv://HOST:PORT/BUCKET/PREFIX")
	}
	token := os.Getenv(EnvToken)
	if token == "" {
		return nil, "", fmt.Errorf("%w: no credentials: set %s", driver.ErrPermission, EnvToken)
	}
	return New(http.DefaultClient, loc.Endpoint, loc.Bucket, token), loc.Prefix, nil
}

// Bucket is one bucket of a kvstore service.
type Bucket struct {
	client *http.Client
	base   string // scheme://host:port/bucket
	token  string
}

// New returns the bucket named bucket on the service at endpoint, reached
// with client.
func New(client *http.Client, endpoint, bucket, token string) *Bucket {
	return &Bucket{client: client, base: strings.TrimRight(endpoint, "/") + "/" + url.PathEscape(bucket), token: token}
}

// Capabilities declares Conditional exclusion (the service checks If-Match
// and If-None-Match atomically) and a conditional Delete.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
}

// do sends one request for op with the given body and condition headers.
func (b *Bucket) do(op *driver.Op, method string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(op.Context(), method, b.base+"/"+op.Key, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	if v, ok := op.Cond.Match(); ok {
		req.Header.Set("If-Match", string(v))
	} else if op.Cond.Absent() {
		req.Header.Set("If-None-Match", "*")
	}
	return b.client.Do(req)
}

// kind maps the service's error code to the contract's kinds.
func kind(code string, cond driver.Condition) error {
	_, match := cond.Match()
	switch {
	case code == "AccessDenied":
		return driver.ErrPermission
	case code == "NoSuchBucket":
		return driver.ErrBucketNotExist
	case code == "PreconditionFailed" && !cond.Unconditional():
		return driver.ErrPrecondition
	case code == "NoSuchKey" && match:
		return driver.ErrPrecondition
	case code == "NoSuchKey":
		return driver.ErrNotExist
	}
	return nil
}

// serviceError is the service's refusal, kept in the error chain.
type serviceError struct {
	Status int
	Code   string
}

func (e *serviceError) Error() string { return fmt.Sprintf("HTTP %d %s", e.Status, e.Code) }

func (b *Bucket) fail(op *driver.Op, resp *http.Response) error {
	code := resp.Header.Get("X-Error-Code")
	return op.Fail(kind(code, op.Cond), &serviceError{Status: resp.StatusCode, Code: code})
}

// Get returns the object's body and ETag from one response.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), Scheme, driver.OpGet, key, driver.Condition{})
	if err != nil {
		return nil, "", err
	}
	resp, err := b.do(op, http.MethodGet, nil)
	if err != nil {
		return nil, "", op.Fail(nil, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, "", b.fail(op, resp)
	}
	v := driver.Version(resp.Header.Get("ETag"))
	if v == "" {
		resp.Body.Close()
		return nil, "", op.Fail(nil, errors.New("the response carried no ETag"))
	}
	return resp.Body, v, nil
}

// Put stores data with one PUT carrying the condition.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), Scheme, driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	if data == nil {
		data = []byte{}
	}
	resp, err := b.do(op, http.MethodPut, data)
	if err != nil {
		return "", op.Fail(nil, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", b.fail(op, resp)
	}
	v := driver.Version(resp.Header.Get("ETag"))
	if v == "" {
		return "", op.Fail(nil, errors.New("the response carried no ETag"))
	}
	return v, nil
}

// Delete removes key with one DELETE carrying the condition; a missing key
// is success.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.Begin(ctx, b.Capabilities(), Scheme, driver.OpDelete, key, cond)
	if err != nil {
		return err
	}
	resp, err := b.do(op, http.MethodDelete, nil)
	if err != nil {
		return op.Fail(nil, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return b.fail(op, resp)
}
