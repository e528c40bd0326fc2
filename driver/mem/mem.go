// Package mem is an in-process bucket with real compare-and-swap, for tests,
// demos and the simulator. Importing it registers the scheme "mem":
//
//	mem://NAME/prefix
//
// opens the process-wide bucket NAME, created empty on first use. The URL
// takes no query parameters.
package mem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// Scheme is the URL scheme this package registers.
const Scheme = "mem"

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for mem:// URLs: the named bucket
// and the prefix.
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	return u.Host, u.Path, "", nil
}

// named holds the buckets opened by URL, shared by name within the process.
var named sync.Map // string -> *Bucket

var _ driver.Bucket = (*Bucket)(nil)

// OpenURL is the Open of the driver.Scheme for mem://NAME/prefix URLs, which
// init registers; a program may register it under a scheme of its own too.
func OpenURL(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
	if _, err := driver.Params(u); err != nil {
		return nil, "", err
	}
	if u.Host == "" {
		return nil, "", errors.New("the URL names no bucket; use mem://NAME/prefix")
	}
	b, _ := named.LoadOrStore(u.Host, New())
	return b.(*Bucket), strings.Trim(u.Path, "/"), nil
}

type object struct {
	data    []byte
	version driver.Version
	mod     time.Time
	meta    driver.Metadata // a copy, never nil
}

// Bucket is an in-memory bucket; the zero value is empty and ready to use.
// A version is a bijective scramble of a write counter: unique and
// reproducible but, like an ETag, no guide to the next.
type Bucket struct {
	// Now, if set, is the service's clock (default time.Now); one that
	// returns the zero time makes the bucket report no service time.
	Now func() time.Time
	// Resolution, if set, truncates the times the bucket stamps and
	// reports to multiples of it, as HTTP dates are truncated to whole
	// seconds, and is reported with them. Default 0: exact times.
	Resolution time.Duration

	mu      sync.Mutex
	objects map[string]object
	writes  uint64
}

// now reads the service's clock.
func (b *Bucket) now() time.Time {
	t := time.Now()
	if b.Now != nil {
		t = b.Now()
	}
	return t.Round(0).Truncate(b.Resolution)
}

// New returns an empty bucket.
func New() *Bucket { return &Bucket{} }

// Capabilities declares Conditional exclusion, a conditional Delete, and
// metadata: each version keeps a copy of the metadata it was written
// with, which Get returns and List lists.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true, Metadata: true, ListMetadata: true}
}

// Get returns a copy of the object's bytes and its version, and a copy of
// its metadata under opts.Metadata.
func (b *Bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, Scheme, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	b.mu.Lock()
	o, ok := b.objects[key]
	now := b.now()
	b.mu.Unlock()
	if !ok {
		return nil, driver.Attrs{Time: b.time(now, time.Time{})}, op.Fail(driver.ErrNotExist, nil)
	}
	a := driver.Attrs{Version: o.version, Time: b.time(now, o.mod)}
	if opts.Metadata {
		a.Metadata = maps.Clone(o.meta)
	}
	return io.NopCloser(bytes.NewReader(o.data)), a, nil
}

// time is what an answer given at now says of the service's clock: nothing
// where Now returns the zero time.
func (b *Bucket) time(now, mod time.Time) driver.ServiceTime {
	if now.IsZero() {
		return driver.ServiceTime{}
	}
	return driver.ServiceTime{Date: now, Modified: mod, Resolution: b.Resolution}
}

// check reports whether cond holds for the current state of key; b.mu is held.
func (b *Bucket) check(key string, cond driver.Condition) bool {
	o, exists := b.objects[key]
	if cond == driver.IfAbsent() {
		return !exists
	}
	if v, ok := cond.Match(); ok {
		return exists && o.version == v
	}
	return true
}

// Put stores a copy of data, with a copy of opts.Metadata, if opts.If
// holds.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), Scheme, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	return b.commit(op, key, opts.If, bytes.Clone(data))
}

// commit stores data (which the bucket now owns) under key if cond holds,
// unless op's context has ended.
func (b *Bucket) commit(op *driver.Op, key string, cond driver.Condition, data []byte) (driver.Attrs, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := op.Context().Err(); err != nil {
		return driver.Attrs{}, op.Fail(nil, err)
	}
	now := b.now()
	st := b.time(now, time.Time{})
	if !b.check(key, cond) {
		return driver.Attrs{Time: st}, op.Fail(driver.ErrPrecondition, nil)
	}
	if b.objects == nil {
		b.objects = make(map[string]object)
	}
	b.writes++
	v := driver.Version(fmt.Sprintf("%016x", mix(b.writes)))
	meta := maps.Clone(op.Metadata)
	if meta == nil {
		meta = driver.Metadata{}
	}
	b.objects[key] = object{data: data, version: v, mod: now, meta: meta}
	return driver.Attrs{Version: v, Time: st}, nil
}

// PutStream reads r in parts, calling opts.Allow before each and before
// the commit, and stores the body if cond holds at the commit; on failure
// nothing is stored.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, po driver.PutOptions, opts *driver.StreamOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), Scheme, key, po)
	if err != nil {
		return driver.Attrs{}, err
	}
	fail := func(kind, cause error) error {
		return op.Fail(kind, &multipart.UploadError{Err: cause, Staged: true, Aborted: true, Upload: "in memory"})
	}
	var data []byte
	part := make([]byte, opts.Size())
	for no := 1; ; no++ {
		if err := opts.Allow(); err != nil {
			return driver.Attrs{}, fail(nil, fmt.Errorf("MayStart refused part %d: %w", no, err))
		}
		n, err := multipart.ReadPart(ctx, r, part)
		data = append(data, part[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return driver.Attrs{}, fail(nil, fmt.Errorf("reading the body: %w", err))
		}
	}
	if err := opts.Allow(); err != nil {
		return driver.Attrs{}, fail(nil, fmt.Errorf("MayStart refused the commit: %w", err))
	}
	v, err := b.commit(op, key, po.If, data)
	if err != nil {
		var oe *driver.OpError
		if errors.As(err, &oe) {
			cause := oe.Err
			if cause == nil {
				cause = errors.New("the condition did not hold at the commit")
			}
			oe.Err = &multipart.UploadError{Err: cause, Staged: true, Aborted: true, Upload: "in memory"}
		}
	}
	return v, err
}

// List yields the objects whose keys start with prefix, in lexical order,
// as they are when the iteration starts.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, Scheme, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
		b.mu.Lock()
		var objs []driver.Object
		for k, o := range b.objects {
			if strings.HasPrefix(k, prefix) {
				objs = append(objs, driver.Object{Key: k, Size: int64(len(o.data)), Version: o.version, ModTime: o.mod, Metadata: maps.Clone(o.meta)})
			}
		}
		b.mu.Unlock()
		slices.SortFunc(objs, func(a, b driver.Object) int { return strings.Compare(a.Key, b.Key) })
		for _, o := range objs {
			if err := ctx.Err(); err != nil {
				yield(driver.Object{}, op.Fail(nil, err))
				return
			}
			if !yield(o, nil) {
				return
			}
		}
	})
}

// Delete removes key if cond holds.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.Capabilities(), Scheme, key, cond)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.check(key, cond) {
		return op.Fail(driver.ErrPrecondition, nil)
	}
	delete(b.objects, key)
	return nil
}

// mix is the splitmix64 finaliser, a bijection on uint64.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
