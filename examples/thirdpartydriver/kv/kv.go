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
// driver.Begin (driver.BeginPut for a write) enforces the contract's
// mechanical rules, driver.Op.Context lets Op.Fail tell a refused retry
// from a refused first attempt, driver.Op.Fail builds every error, and
// driver.Listing runs the listing. The service cannot stage parts, so a
// streamed write is one PUT (driver.PutWhole).
package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

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
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	bucket, prefix, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	scheme := "https"
	if s := u.Query().Get("tls"); s != "" {
		tls, err := strconv.ParseBool(s)
		if err != nil {
			return "", "", "", fmt.Errorf("tls=%q is not true or false", s)
		}
		if !tls {
			scheme = "http"
		}
	}
	return bucket, strings.Trim(prefix, "/"), scheme + "://" + strings.ToLower(u.Host), nil
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
	bucket, prefix, endpoint, err := Locate(u)
	if err != nil {
		return nil, "", err
	}
	if u.Host == "" || bucket == "" {
		return nil, "", errors.New("use kv://HOST:PORT/BUCKET/PREFIX")
	}
	token := os.Getenv(EnvToken)
	if token == "" {
		return nil, "", fmt.Errorf("%w: no credentials: set %s", driver.ErrPermission, EnvToken)
	}
	return New(http.DefaultClient, endpoint, bucket, token), prefix, nil
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

// objectURL is the URL of key: each segment escaped, so that a key with
// "?", "#" or "%" in it names the object it spells.
func (b *Bucket) objectURL(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return b.base + "/" + strings.Join(segs, "/")
}

// do sends one request for key under cond, with body.
func (b *Bucket) do(op *driver.Op, method, key string, cond driver.Condition, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(op.Context(), method, b.objectURL(key), r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	if v, ok := cond.Match(); ok {
		req.Header.Set("If-Match", string(v))
	} else if cond == driver.IfAbsent() {
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
	case code == "PreconditionFailed" && cond != (driver.Condition{}):
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

func (b *Bucket) fail(op *driver.Op, cond driver.Condition, resp *http.Response) error {
	code := resp.Header.Get("X-Error-Code")
	return op.Fail(kind(code, cond), &serviceError{Status: resp.StatusCode, Code: code})
}

// Get returns the object's body and ETag from one response. The service
// keeps no metadata and states no time, so the Attrs carry the version
// only, whatever opts asks.
func (b *Bucket) Get(ctx context.Context, key string, _ driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, Scheme, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	resp, err := b.do(op, http.MethodGet, key, driver.Condition{}, nil)
	if err != nil {
		return nil, driver.Attrs{}, op.Fail(nil, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, driver.Attrs{}, b.fail(op, driver.Condition{}, resp)
	}
	v := driver.Version(resp.Header.Get("ETag"))
	if v == "" {
		resp.Body.Close()
		return nil, driver.Attrs{}, op.Fail(nil, errors.New("the response carried no ETag"))
	}
	return resp.Body, driver.Attrs{Version: v}, nil
}

// Put stores data with one PUT carrying opts.If. The driver does not
// declare Capabilities.Metadata, so opts.Metadata is not sent.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), Scheme, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	if data == nil {
		data = []byte{}
	}
	resp, err := b.do(op, http.MethodPut, key, opts.If, data)
	if err != nil {
		return driver.Attrs{}, op.Fail(nil, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return driver.Attrs{}, b.fail(op, opts.If, resp)
	}
	v := driver.Version(resp.Header.Get("ETag"))
	if v == "" {
		return driver.Attrs{}, op.Fail(nil, errors.New("the response carried no ETag"))
	}
	return driver.Attrs{Version: v}, nil
}

// PutStream stores the body with one Put: the service cannot stage parts,
// so driver.PutWhole reads it whole (up to s.Size() × s.Parallel() bytes).
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, b, key, r, opts, s)
}

// List yields the objects whose keys start with prefix, a page of the
// service's listing at a time.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, Scheme, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
		after := ""
		for {
			page, err := b.page(op, prefix, after)
			if err != nil {
				yield(driver.Object{}, err)
				return
			}
			for _, o := range page.Objects {
				if !yield(driver.Object{Key: o.Key, Size: o.Size, Version: driver.Version(o.ETag), ModTime: o.Modified}, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			after = page.Next
		}
	})
}

// listPage is one response of the service's listing.
type listPage struct {
	Objects []struct {
		Key      string    `json:"key"`
		ETag     string    `json:"etag"`
		Size     int64     `json:"size"`
		Modified time.Time `json:"modified"`
	} `json:"objects"`
	Next string `json:"next"` // the after of the next page; "" on the last
}

// page reads the page of the listing of prefix that follows after.
func (b *Bucket) page(op *driver.Op, prefix, after string) (*listPage, error) {
	q := url.Values{"prefix": {prefix}, "after": {after}}
	req, err := http.NewRequestWithContext(op.Context(), http.MethodGet, b.base+"?"+q.Encode(), nil)
	if err != nil {
		return nil, op.Fail(nil, err)
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, op.Fail(nil, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, b.fail(op, driver.Condition{}, resp)
	}
	var page listPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, op.Fail(nil, fmt.Errorf("decoding the listing: %w", err))
	}
	return &page, nil
}

// Delete removes key with one DELETE carrying the condition; a missing key
// is success.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.Capabilities(), Scheme, key, cond)
	if err != nil {
		return err
	}
	resp, err := b.do(op, http.MethodDelete, key, cond, nil)
	if err != nil {
		return op.Fail(nil, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return b.fail(op, cond, resp)
}
