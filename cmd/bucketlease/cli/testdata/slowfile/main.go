// Command slowfile is bucketlease with one more scheme, slowfile, for the
// tests that must stop an acquire midway: slowfile:///abs/dir?delay=D is
// the bucket file:///abs/dir behind a link that takes D (a Go duration)
// before each request reaches it, as a distant service's round trip does.
package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/cli"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
)

func init() {
	driver.Register("slowfile", driver.Scheme{Open: open, Locate: file.Locate})
}

func main() { os.Exit(cli.Main(os.Args)) }

// open opens the file bucket u names, without its delay parameter, behind
// a link of that delay.
func open(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
	fu := *u
	q := fu.Query()
	delay, err := time.ParseDuration(q.Get("delay"))
	if err != nil {
		return nil, "", fmt.Errorf("slowfile: the delay parameter: %w", err)
	}
	q.Del("delay")
	fu.Scheme, fu.RawQuery = file.Scheme, q.Encode()
	b, prefix, err := file.OpenURL(ctx, &fu)
	if err != nil {
		return nil, "", err
	}
	return &slow{Bucket: b, delay: delay}, prefix, nil
}

// slow is a bucket whose every request waits delay before it is made.
type slow struct {
	driver.Bucket
	delay time.Duration
}

// wait waits out the delay, or ctx.
func (s *slow) wait(ctx context.Context) error {
	select {
	case <-time.After(s.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slow) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return nil, driver.Attrs{}, err
	}
	return s.Bucket.Get(ctx, key, opts)
}

func (s *slow) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return driver.Attrs{}, err
	}
	return s.Bucket.Put(ctx, key, data, opts)
}

func (s *slow) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, so *driver.StreamOptions) (driver.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return driver.Attrs{}, err
	}
	return s.Bucket.PutStream(ctx, key, r, opts, so)
}

func (s *slow) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Bucket.Delete(ctx, key, cond)
}

func (s *slow) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		if err := s.wait(ctx); err != nil {
			yield(driver.Object{}, err)
			return
		}
		for o, err := range s.Bucket.List(ctx, prefix) {
			if !yield(o, err) {
				return
			}
		}
	}
}
