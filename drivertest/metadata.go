package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// The checks of user metadata, obligation 16 in docs/drivers.md; skipped
// where the driver does not declare Capabilities.Metadata.

// noMetadata is the skip message where the driver declares no metadata.
const noMetadata = "the driver does not declare metadata (driver.Capabilities.Metadata is false): " +
	"it writes without PutOptions.Metadata, and a caller that needs it must not use it"

// printable is every printable ASCII byte, with the space inside: a value
// the portable rule allows, which no service may encode, trim or fold.
const printable = "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~ x"

// declaresMetadata returns skipped unless the driver declares metadata.
func (s *scope) declaresMetadata() error {
	if !s.raw.Capabilities().Metadata {
		return skipped{noMetadata}
	}
	return nil
}

// getMeta reads key under GetOptions{Metadata: true} and returns its body,
// version and the metadata reported (Attrs.Metadata; nil for none).
func getMeta(ctx context.Context, b driver.Bucket, key string) ([]byte, driver.Version, driver.Metadata, error) {
	rc, a, err := b.Get(ctx, key, driver.GetOptions{Metadata: true})
	if err != nil {
		return nil, "", nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return data, a.Version, a.Metadata, err
}

// holdsMeta fails unless key holds data with exactly metadata want (an
// empty want meaning none: reported as an empty, non-nil map).
func holdsMeta(ctx context.Context, b driver.Bucket, key string, data []byte, want driver.Metadata, what string) error {
	got, _, md, err := getMeta(ctx, b, key)
	if err != nil {
		return fmt.Errorf("Get of %s: %s", what, outcome(err))
	}
	if data != nil && !bytes.Equal(got, data) {
		return fmt.Errorf("Get of %s returned the body %q, want %q", what, clip(got), clip(data))
	}
	if md == nil {
		return fmt.Errorf("Get of %s under GetOptions.Metadata reported no metadata (Attrs.Metadata is nil): a driver that declares Metadata "+
			"reports it for every such Get that succeeds, an object with none as an empty, non-nil map", what)
	}
	if !maps.Equal(md, want) {
		return fmt.Errorf("Get of %s reported the metadata %s, want exactly %s%s", what, md, want, metaDiff(md, want))
	}
	return nil
}

// metaDiff says how got differs from want, for a message.
func metaDiff(got, want driver.Metadata) string {
	var why []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			why = append(why, fmt.Sprintf("%s is missing", k))
		} else if g != v {
			why = append(why, fmt.Sprintf("%s is %q, not %q", k, g, v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			why = append(why, fmt.Sprintf("%s was not written by this write (a stale key of an earlier version, or the driver's own)", k))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

// putMeta writes key with the metadata md (PutOptions.Metadata).
func putMeta(ctx context.Context, b driver.Bucket, key string, data []byte, cond driver.Condition, md driver.Metadata) (driver.Version, error) {
	a, err := b.Put(ctx, key, data, driver.PutOptions{If: cond, Metadata: md})
	return a.Version, err
}

// streamMeta streams the body read from r under key with the metadata md.
func streamMeta(ctx context.Context, b driver.Bucket, key string, r io.Reader, cond driver.Condition, md driver.Metadata) (driver.Version, error) {
	a, err := b.PutStream(ctx, key, r, driver.PutOptions{If: cond, Metadata: md}, streamOpts(nil))
	return a.Version, err
}

// metadataRoundtrip: a write's metadata comes back exactly, replaces the
// old, is empty without it, and never parts from its body.
func metadataRoundtrip(ctx context.Context, s *scope) error {
	if err := s.declaresMetadata(); err != nil {
		return err
	}
	k := s.key("obj")
	first := driver.Metadata{"epoch": "7", "instance": "host-1.4711", "ascii": printable}
	v, err := putMeta(ctx, s.b, k, []byte("one"), driver.IfAbsent(), first)
	if err != nil {
		return fmt.Errorf("Put IfAbsent with metadata%s: %s", first, outcome(err))
	}
	if err := holdsMeta(ctx, s.b, k, []byte("one"), first, "a write with metadata"); err != nil {
		return err
	}
	second := driver.Metadata{"epoch": "8", "writer": "b"}
	v, err = putMeta(ctx, s.b, k, []byte("two"), driver.IfMatch(v), second)
	if err != nil {
		return fmt.Errorf("Put IfMatch(current) with metadata%s: %s", second, outcome(err))
	}
	if err := holdsMeta(ctx, s.b, k, []byte("two"), second, "an overwrite with other metadata (it replaces the old metadata entirely)"); err != nil {
		return err
	}
	if _, err := put(ctx, s.b, k, []byte("three"), driver.IfMatch(v)); err != nil {
		return fmt.Errorf("Put IfMatch(current) without metadata: %s", outcome(err))
	}
	if err := holdsMeta(ctx, s.b, k, []byte("three"), driver.Metadata{}, "an overwrite without metadata (the old version's must not stay)"); err != nil {
		return err
	}
	k2 := s.key("plain")
	if _, err := seed(ctx, s.b, k2, []byte("plain")); err != nil {
		return err
	}
	if err := holdsMeta(ctx, s.b, k2, []byte("plain"), driver.Metadata{}, "an object written without metadata"); err != nil {
		return err
	}
	return concurrentReader(ctx, s, s.key("watched"))
}

// concurrentReader overwrites key with bodies whose metadata names them
// while another goroutine reads: each read must report its body's metadata,
// which a driver setting or reading metadata in a second request fails.
func concurrentReader(ctx context.Context, s *scope, k string) error {
	const writes = 6
	body := func(i int) []byte { return []byte("write " + strconv.Itoa(i)) }
	v, err := putMeta(ctx, s.b, k, body(0), driver.IfAbsent(), driver.Metadata{"n": "0"})
	if err != nil {
		return fmt.Errorf("Put IfAbsent with metadata: %s", outcome(err))
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var bad error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; first || !done.Load(); first = false {
			data, _, md, err := getMeta(ctx, s.b, k)
			if err != nil {
				if ctx.Err() == nil {
					bad = fmt.Errorf("a Get concurrent with overwrites: %s", outcome(err))
				}
				return
			}
			n, ok := strings.CutPrefix(string(data), "write ")
			if !ok || md == nil || md["n"] != n || len(md) != 1 {
				bad = fmt.Errorf("a Get concurrent with overwrites returned the body %q with the metadata %s (reported: %t): "+
					"each body was written with metadata naming it, so the metadata was set, or read, in another request than the body's", clip(data), md, md != nil)
				return
			}
		}
	}()
	var werr error
	for i := 1; i <= writes && werr == nil; i++ {
		v, werr = putMeta(ctx, s.b, k, body(i), driver.IfMatch(v), driver.Metadata{"n": strconv.Itoa(i)})
	}
	done.Store(true)
	wg.Wait()
	if werr != nil {
		return fmt.Errorf("Put IfMatch(current) with metadata, with a reader reading: %s", outcome(werr))
	}
	return bad
}

// metadataStreamed: a multi-part streamed write stores and replaces metadata.
func metadataStreamed(ctx context.Context, s *scope) error {
	if err := s.declaresMetadata(); err != nil {
		return err
	}
	k := s.key("big")
	old := driver.Metadata{"stale": "yes", "epoch": "1"}
	v0, err := putMeta(ctx, s.b, k, []byte("small"), driver.IfAbsent(), old)
	if err != nil {
		return fmt.Errorf("setup: Put IfAbsent with metadata: %s", outcome(err))
	}
	md := driver.Metadata{"epoch": "12", "instance": "streamer"}
	v, err := streamMeta(ctx, s.b, k, newBody(5, streamBig), driver.IfMatch(v0), md)
	if sk := notStreamed(err); sk != nil {
		return sk
	}
	if err != nil {
		return fmt.Errorf("PutStream IfMatch(current) of %d bytes with metadata: %s", streamBig, outcome(err))
	}
	if err := holdsBody(ctx, s.b, k, 5, streamBig, v); err != nil {
		return err
	}
	if err := holdsMeta(ctx, s.b, k, nil, md, "a streamed write of three parts with metadata"); err != nil {
		return err
	}
	// A body of one part, which a driver may send as one request.
	short := driver.Metadata{"epoch": "13"}
	if _, err := streamMeta(ctx, s.b, k, bytes.NewReader([]byte("short")), driver.IfMatch(v), short); err != nil {
		return fmt.Errorf("PutStream IfMatch(current) of a body shorter than one part with metadata: %s", outcome(err))
	}
	return holdsMeta(ctx, s.b, k, []byte("short"), short, "a streamed write of a body shorter than one part with metadata")
}

// metadataRefusedWrite: a refused write changes neither body nor metadata.
func metadataRefusedWrite(ctx context.Context, s *scope) error {
	if err := s.declaresMetadata(); err != nil {
		return err
	}
	k := s.key("obj")
	md := driver.Metadata{"epoch": "3", "instance": "holder"}
	v, err := putMeta(ctx, s.b, k, []byte("one"), driver.IfAbsent(), md)
	if err != nil {
		return fmt.Errorf("setup: Put IfAbsent with metadata: %s", outcome(err))
	}
	late := driver.Metadata{"epoch": "2", "instance": "late"}
	for _, c := range []struct {
		what string
		cond driver.Condition
	}{
		{"IfAbsent on the existing key", driver.IfAbsent()},
		{"IfMatch of a made-up version", driver.IfMatch(objects.FakeVersion(v))},
	} {
		_, err := putMeta(ctx, s.b, k, []byte("late"), c.cond, late)
		if !errors.Is(err, driver.ErrPrecondition) {
			return fmt.Errorf("Put %s with metadata: %s, want ErrPrecondition", c.what, outcome(err))
		}
		if err := holdsMeta(ctx, s.b, k, []byte("one"), md, "the object after a refused Put "+c.what+" under other metadata"); err != nil {
			return err
		}
		if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
			return fmt.Errorf("after a refused Put %s with metadata: %w", c.what, err)
		}
		_, err = streamMeta(ctx, s.b, k, newBody(6, streamBig), c.cond, late)
		if sk := notStreamed(err); sk != nil {
			continue
		}
		if !errors.Is(err, driver.ErrPrecondition) {
			return fmt.Errorf("PutStream %s with metadata: %s, want ErrPrecondition", c.what, outcome(err))
		}
		if err := holdsMeta(ctx, s.b, k, []byte("one"), md, "the object after a refused PutStream "+c.what+" under other metadata"); err != nil {
			return err
		}
		if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
			return fmt.Errorf("after a refused PutStream %s with metadata: %w", c.what, err)
		}
	}
	return nil
}

// metadataListed: a driver that declares ListMetadata lists each object's
// metadata, an empty map for none; one that does not lists nil.
func metadataListed(ctx context.Context, s *scope) error {
	if err := s.declaresMetadata(); err != nil {
		return err
	}
	listMeta := s.raw.Capabilities().ListMetadata
	want := map[string]driver.Metadata{
		s.key("l/a"): {"epoch": "4", "instance": "one"},
		s.key("l/b"): {},
		s.key("l/c"): {"ascii": printable},
	}
	for k, md := range want {
		if _, err := putMeta(ctx, s.b, k, []byte("x"), driver.IfAbsent(), md); err != nil {
			return fmt.Errorf("setup: Put IfAbsent with metadata: %s", outcome(err))
		}
	}
	// An overwrite: the listing shows the current version's metadata.
	over := s.key("l/a")
	_, v, _, err := getMeta(ctx, s.b, over)
	if err != nil {
		return fmt.Errorf("setup: Get: %s", outcome(err))
	}
	want[over] = driver.Metadata{"epoch": "5"}
	if _, err := putMeta(ctx, s.b, over, []byte("y"), driver.IfMatch(v), want[over]); err != nil {
		return fmt.Errorf("setup: Put IfMatch(current) with metadata: %s", outcome(err))
	}
	objs, err := listAll(ctx, s.b, s.prefix+"/l/")
	if err != nil {
		return err
	}
	seen := 0
	for _, o := range objs {
		md, ok := want[o.Key]
		if !ok {
			continue
		}
		seen++
		switch {
		case !listMeta && o.Metadata != nil:
			return fmt.Errorf("List yielded %s with the metadata %s, though the driver does not declare ListMetadata: "+
				"declare it, or list nil (\"not listed\")", o.Key, o.Metadata)
		case !listMeta:
		case o.Metadata == nil:
			return fmt.Errorf("List yielded %s with nil metadata (\"not listed\"), though the driver declares ListMetadata: "+
				"an object with none is listed with an empty, non-nil map", o.Key)
		case !maps.Equal(o.Metadata, md):
			return fmt.Errorf("List yielded %s with the metadata %s, want exactly %s%s", o.Key, o.Metadata, md, metaDiff(o.Metadata, md))
		}
	}
	if seen != len(want) {
		return fmt.Errorf("List yielded %d of the %d objects just written", seen, len(want))
	}
	if !listMeta {
		return skipped{"the driver does not declare ListMetadata (its listing does not carry user metadata; callers read it with Get), " +
			"and lists nil metadata, as it must"}
	}
	return nil
}

// invalidMetadata is metadata the portable rule refuses, with why.
var invalidMetadata = []struct {
	why string
	md  driver.Metadata
}{
	{"an uppercase key", driver.Metadata{"Epoch": "1"}},
	{"a key with '-'", driver.Metadata{"lease-epoch": "1"}},
	{"a key with '_'", driver.Metadata{"lease_epoch": "1"}},
	{"a key starting with a digit", driver.Metadata{"1epoch": "1"}},
	{"an empty key", driver.Metadata{"": "1"}},
	{"a key of 41 characters", driver.Metadata{strings.Repeat("k", 41): "1"}},
	{"a value with a newline", driver.Metadata{"epoch": "1\r\nx-amz-meta-injected: 1"}},
	{"a value with a non-ASCII character", driver.Metadata{"epoch": "é"}},
	{"a value of 257 bytes", driver.Metadata{"epoch": strings.Repeat("v", 257)}},
	{"more than 1 KiB in all", driver.Metadata{"a": strings.Repeat("v", 250), "b": strings.Repeat("v", 250),
		"c": strings.Repeat("v", 250), "d": strings.Repeat("v", 250), "e": strings.Repeat("v", 100)}},
}

// metadataInvalid: non-portable metadata gets ErrInvalidMetadata, no write.
func metadataInvalid(ctx context.Context, s *scope) error {
	if err := s.declaresMetadata(); err != nil {
		return err
	}
	k := s.key("new")
	old := s.key("old")
	md := driver.Metadata{"epoch": "1"}
	v, err := putMeta(ctx, s.b, old, []byte("old"), driver.IfAbsent(), md)
	if err != nil {
		return fmt.Errorf("setup: Put IfAbsent with metadata: %s", outcome(err))
	}
	for _, c := range invalidMetadata {
		if c.md.Validate() == nil {
			return fmt.Errorf("the check's own case %q passes driver.Metadata.Validate", c.why)
		}
		_, err := putMeta(ctx, s.b, k, []byte("new"), driver.IfAbsent(), c.md)
		if !errors.Is(err, driver.ErrInvalidMetadata) {
			return fmt.Errorf("Put IfAbsent under metadata with %s: %s, want ErrInvalidMetadata", c.why, outcome(err))
		}
		if err := absent(ctx, s.b, k); err != nil {
			return fmt.Errorf("after a Put refused for metadata with %s: %w", c.why, err)
		}
		_, err = putMeta(ctx, s.b, old, []byte("new"), driver.Condition{}, c.md)
		if !errors.Is(err, driver.ErrInvalidMetadata) {
			return fmt.Errorf("an unconditional Put over an existing key under metadata with %s: %s, want ErrInvalidMetadata", c.why, outcome(err))
		}
		if err := holdsMeta(ctx, s.b, old, []byte("old"), md, "an object after an overwrite refused for metadata with "+c.why); err != nil {
			return err
		}
		if err := unchanged(ctx, s.b, old, []byte("old"), v); err != nil {
			return fmt.Errorf("after an overwrite refused for metadata with %s: %w", c.why, err)
		}
		_, err = streamMeta(ctx, s.b, k, bytes.NewReader([]byte("new")), driver.IfAbsent(), c.md)
		if !errors.Is(err, driver.ErrInvalidMetadata) {
			return fmt.Errorf("PutStream IfAbsent under metadata with %s: %s, want ErrInvalidMetadata", c.why, outcome(err))
		}
		if err := absent(ctx, s.b, k); err != nil {
			return fmt.Errorf("after a PutStream refused for metadata with %s: %w", c.why, err)
		}
	}
	return nil
}

var metadataChecks = []check{
	check{
		name: "metadata-roundtrip",
		expect: "a driver that declares Metadata stores a Put's metadata (PutOptions.Metadata) with the object and reports exactly it for a Get " +
			"under GetOptions.Metadata (Attrs.Metadata); an overwrite replaces it entirely, one without metadata leaves none (an empty map), " +
			"and a reader concurrent with overwrites always sees a body with its own metadata",
		run: metadataRoundtrip,
	},
	check{
		name:   "metadata-streamed",
		expect: "a streamed write of three parts with metadata (PutOptions.Metadata), and one of a body shorter than a part, store their metadata, replacing the old version's",
		run:    metadataStreamed,
	},
	check{
		name:   "metadata-refused-write",
		expect: "a Put (and a PutStream) under other metadata refused under IfAbsent or IfMatch of a made-up version leaves the object's body, version and metadata as they were",
		run:    metadataRefusedWrite,
	},
	check{
		name: "metadata-listed",
		expect: "a driver that declares ListMetadata lists each object with exactly its current metadata (an empty map for none); " +
			"one that does not lists nil metadata",
		run: metadataListed,
	},
	check{
		name: "metadata-invalid",
		expect: "metadata outside the portable rule (driver.Metadata.Validate: an uppercase key, '-', '_', a newline, non-ASCII, too long) " +
			"is refused with ErrInvalidMetadata by Put and PutStream, and nothing is written",
		run: metadataInvalid,
	},
	check{
		applies: declaresExclusion,
		name:    "lease-stamps",
		area:    areaPut,
		expect: "every object written through Lease.Bucket, a Put and a streamed write, carries the lease's epoch and instance as metadata " +
			"(admin.Stamp), and the next holder's a greater epoch",
		run: leaseStamps,
	},
}
