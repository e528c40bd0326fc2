// Package mem is an in-process bucket with real compare-and-swap, for tests,
// demos and the simulator. Importing it registers the scheme "mem":
//
//	mem://NAME/prefix
//
// opens the process-wide bucket NAME (created empty on first use), so that
// every Open of one NAME inside a process shares its objects. Nothing
// survives the process. The URL takes no query parameters.
package mem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	"github.com/mushroomdb/bucketlease/driver"
)

// Scheme is the URL scheme this package registers.
const Scheme = "mem"

func init() { driver.Register(Scheme, OpenURL) }

// named holds the buckets opened by URL, shared by name within the process.
var named sync.Map // string -> *Bucket

// OpenURL is the driver.Opener for mem://NAME/prefix URLs, which init
// registers with driver.Register; a custom driver.Mux can register it too.
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
}

// Bucket is an in-memory bucket. The zero value is an empty bucket ready to
// use; it must not be copied after first use. Every write gets a new
// version: 16 hex digits, a bijective scramble of a write counter, so that
// versions are unique and reproducible but, like real ETags, say nothing
// about which comes next.
type Bucket struct {
	mu      sync.Mutex
	objects map[string]object
	writes  uint64
}

// New returns an empty bucket.
func New() *Bucket { return &Bucket{} }

// Capabilities declares Conditional exclusion and a conditional Delete.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
}

// Get returns a copy of the object's bytes and its version.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), Scheme, driver.OpGet, key, driver.Condition{})
	if err != nil {
		return nil, "", err
	}
	b.mu.Lock()
	o, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		return nil, "", op.Fail(driver.ErrNotExist, nil)
	}
	return io.NopCloser(bytes.NewReader(o.data)), o.version, nil
}

// check reports whether cond holds for the current state of key; b.mu is held.
func (b *Bucket) check(key string, cond driver.Condition) bool {
	o, exists := b.objects[key]
	if cond.Absent() {
		return !exists
	}
	if v, ok := cond.Match(); ok {
		return exists && o.version == v
	}
	return true
}

// Put stores a copy of data if cond holds.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), Scheme, driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.check(key, cond) {
		return "", op.Fail(driver.ErrPrecondition, nil)
	}
	if b.objects == nil {
		b.objects = make(map[string]object)
	}
	b.writes++
	v := driver.Version(fmt.Sprintf("%016x", mix(b.writes)))
	b.objects[key] = object{data: bytes.Clone(data), version: v}
	return v, nil
}

// Delete removes key if cond holds.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.Begin(ctx, b.Capabilities(), Scheme, driver.OpDelete, key, cond)
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
