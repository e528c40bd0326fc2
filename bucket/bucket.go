package bucket

import (
	"context"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Bucket is one prefix of a bucket. It is safe for concurrent use.
type Bucket struct {
	d      driver.Bucket
	prefix string // "" or ending in "/"
	owned  bool   // Close closes d
}

// Open opens the bucket a URL names (s3://bucket/prefix?region=…, file://…;
// the schemes of the drivers the program imports) and returns it scoped to
// the URL's prefix. Close it when done.
func Open(ctx context.Context, rawURL string) (*Bucket, error) {
	d, prefix, err := location.Open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	b := New(d, prefix)
	b.owned = true
	return b, nil
}

// New returns d scoped to prefix: the key k of the Bucket is prefix/k in d.
// Closing the Bucket does not close d.
func New(d driver.Bucket, prefix string) *Bucket {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Bucket{d: d, prefix: prefix}
}

// Prefix returns the prefix the Bucket is scoped to, without a trailing
// slash ("" for the whole bucket).
func (b *Bucket) Prefix() string { return strings.TrimSuffix(b.prefix, "/") }

// Exclusion says how strongly the store enforces a write's condition:
// Conditional where two writers racing on one key cannot both win.
func (b *Bucket) Exclusion() Exclusion { return b.d.Capabilities().Exclusion }

// Driver returns the driver's Bucket underneath, whose keys are full keys,
// for what this package does not offer.
func (b *Bucket) Driver() driver.Bucket { return b.d }

// Close releases what Open created (an SDK client and its connections). It
// does nothing for a Bucket made by New.
func (b *Bucket) Close() error {
	if !b.owned {
		return nil
	}
	return location.Close(b.d)
}

// Attrs is what a read or a write learned about an object.
type Attrs struct {
	// Version is the version read or written, the one IfMatch names.
	Version Version
	// Metadata is the object's metadata, read by Get: empty for an object
	// stored with none, nil where the store keeps no metadata.
	Metadata Metadata
	// Modified is when the object was last written, on the store's clock,
	// as Get read it; zero where the store does not say.
	Modified time.Time
}

// PutOptions is what a write sends beyond the key and the body. A nil
// *PutOptions writes unconditionally, without metadata.
type PutOptions struct {
	// If is the write's condition: IfAbsent, IfMatch(v), or the zero
	// Condition for none.
	If Condition
	// Metadata is stored with the object, atomically, where the store keeps
	// metadata (see Metadata.Validate for what is portable).
	Metadata Metadata
	// PartSize and Concurrency bound a streamed write (Write): it holds at
	// most PartSize × Concurrency bytes of the body at once. Zero means
	// 16 MiB and 4.
	PartSize    int64
	Concurrency int
}

func (o *PutOptions) driver() driver.PutOptions {
	if o == nil {
		return driver.PutOptions{}
	}
	return driver.PutOptions{If: o.If, Metadata: o.Metadata}
}

// Get returns the body of key, which the caller reads and closes, and its
// Attrs, both of one version. A missing key is ErrNotExist.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error) {
	rc, a, err := b.d.Get(ctx, b.prefix+key, driver.GetOptions{Metadata: true})
	if err != nil {
		return nil, Attrs{}, err
	}
	return rc, Attrs{Version: a.Version, Metadata: a.Metadata, Modified: a.Time.Modified}, nil
}

// ReadAll reads key whole, refusing a body longer than limit bytes with
// ErrTooLarge, so that a corrupt or hostile object cannot exhaust memory.
func (b *Bucket) ReadAll(ctx context.Context, key string, limit int64) ([]byte, Attrs, error) {
	data, a, err := objects.ReadAll(ctx, b.d, b.prefix+key, limit, driver.GetOptions{Metadata: true})
	if err != nil {
		return nil, Attrs{}, err
	}
	return data, Attrs{Version: a.Version, Metadata: a.Metadata, Modified: a.Time.Modified}, nil
}

// Put stores data under key in one request if opts.If holds, and returns the
// version it created. A condition that does not hold is ErrPrecondition,
// with the object left as it was; a write whose outcome is unknown (its
// answer was lost after a retry) is ErrOutcomeUnknown: read the key back.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts *PutOptions) (Attrs, error) {
	a, err := b.d.Put(ctx, b.prefix+key, data, opts.driver())
	if err != nil {
		return Attrs{}, err
	}
	return Attrs{Version: a.Version}, nil
}

// Write stores the body read from r until io.EOF under key, streamed in
// parts, if opts.If holds when it is committed. It is whole or absent: on
// any failure (ctx ended, r failed, the condition refused) it removes what
// it had staged before it returns, and no object is written.
func (b *Bucket) Write(ctx context.Context, key string, r io.Reader, opts *PutOptions) (Attrs, error) {
	var s *driver.StreamOptions
	if opts != nil {
		s = &driver.StreamOptions{PartSize: opts.PartSize, Concurrency: opts.Concurrency}
	}
	a, err := b.d.PutStream(ctx, b.prefix+key, r, opts.driver(), s)
	if err != nil {
		return Attrs{}, err
	}
	return Attrs{Version: a.Version}, nil
}

// Delete removes key if cond holds (the zero Condition: always). Deleting a
// missing key unconditionally succeeds; under IfMatch it is ErrPrecondition.
// A store that cannot delete conditionally refuses IfMatch with
// ErrUnsupported rather than ignore it.
func (b *Bucket) Delete(ctx context.Context, key string, cond Condition) error {
	return b.d.Delete(ctx, b.prefix+key, cond)
}

// List yields the objects whose keys start with prefix, in lexical order of
// key, with keys relative to the Bucket's prefix. A failure is yielded once,
// as the last pair's error.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		for o, err := range b.d.List(ctx, b.prefix+prefix) {
			o.Key = strings.TrimPrefix(o.Key, b.prefix)
			if !yield(o, err) || err != nil {
				return
			}
		}
	}
}
