package drivertest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// The checks of listing (Bucket.List), obligation 14 in docs/drivers.md.

// listAll returns every object List yields under prefix.
func listAll(ctx context.Context, b driver.Bucket, prefix string) ([]driver.Object, error) {
	var objs []driver.Object
	for o, err := range b.List(ctx, prefix) {
		if err != nil {
			return objs, fmt.Errorf("List %q: %s", prefix, outcome(err))
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// listed fails unless List of prefix yields exactly want, in order.
func listed(ctx context.Context, b driver.Bucket, prefix string, want map[string]driver.Object) error {
	objs, err := listAll(ctx, b, prefix)
	if err != nil {
		return err
	}
	var keys, wantKeys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)
	if !slices.IsSorted(keys) {
		return fmt.Errorf("List %q yielded keys out of lexical order", prefix)
	}
	if !slices.Equal(keys, wantKeys) {
		missing, extra := diff(wantKeys, keys), diff(keys, wantKeys)
		return fmt.Errorf("List %q yielded %d keys, want %d: missing %q, unexpected %q", prefix, len(keys), len(wantKeys), clipList(missing), clipList(extra))
	}
	for _, o := range objs {
		w := want[o.Key]
		if o.Size != w.Size {
			return fmt.Errorf("List %q: %q has size %d, want %d", prefix, o.Key, o.Size, w.Size)
		}
		if o.Version != w.Version {
			return fmt.Errorf("List %q: %q has version %q, but Put returned %q (List must give versions in the form Get does)", prefix, o.Key, o.Version, w.Version)
		}
		if o.ModTime.IsZero() {
			return fmt.Errorf("List %q: %q has no modification time", prefix, o.Key)
		}
	}
	return nil
}

func diff(a, b []string) []string {
	var d []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found && !slices.Contains(b, x) {
			d = append(d, x)
		}
	}
	return d
}

func clipList(l []string) []string {
	if len(l) > 5 {
		return append(l[:5:5], fmt.Sprintf("… %d more", len(l)-5))
	}
	return l
}

// putAll writes each key with its own body and returns what List should say.
func putAll(ctx context.Context, s *scope, names []string) (map[string]driver.Object, error) {
	want := map[string]driver.Object{}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		sem      = make(chan struct{}, 8)
	)
	for _, n := range names {
		k := s.key(n)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			data := []byte("object " + k)
			v, err := put(ctx, s.b, k, data, driver.Condition{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("setup: Put %q: %s", k, outcome(err))
				}
				return
			}
			want[k] = driver.Object{Key: k, Size: int64(len(data)), Version: v}
		}()
	}
	wg.Wait()
	return want, firstErr
}

// listPagedKeys is more than a service's page (1,000 keys on S3).
const listPagedKeys = 1003

func listPaged(ctx context.Context, s *scope) error {
	names := make([]string, listPagedKeys)
	for i := range names {
		names[i] = fmt.Sprintf("many/%05d", i)
	}
	want, err := putAll(ctx, s, names)
	if err != nil {
		return err
	}
	return listed(ctx, s.b, s.prefix+"/many/", want)
}

func listPrefixOfKey(ctx context.Context, s *scope) error {
	want, err := putAll(ctx, s, []string{"db1/LEASE", "db1/chunks/a", "db10/LEASE", "db1-old", "db2/LEASE"})
	if err != nil {
		return err
	}
	pick := func(names ...string) map[string]driver.Object {
		m := map[string]driver.Object{}
		for _, n := range names {
			m[s.prefix+"/"+n] = want[s.prefix+"/"+n]
		}
		return m
	}
	for prefix, names := range map[string][]string{
		"db1":       {"db1/LEASE", "db1/chunks/a", "db10/LEASE", "db1-old"},
		"db1/":      {"db1/LEASE", "db1/chunks/a"},
		"db1/c":     {"db1/chunks/a"},
		"db1/LEASE": {"db1/LEASE"},
		"db":        {"db1/LEASE", "db1/chunks/a", "db10/LEASE", "db1-old", "db2/LEASE"},
		"db3":       nil,
	} {
		if err := listed(ctx, s.b, s.prefix+"/"+prefix, pick(names...)); err != nil {
			return err
		}
	}
	return nil
}

func listOddKeys(ctx context.Context, s *scope) error {
	want, err := putAll(ctx, s, []string{"odd/a b", "odd/100%", "odd/%2F", "odd/%", "odd/ü/ñ", "odd/日本", "odd/a+b", "odd/q?x=1&y", "odd/#frag", "odd/~tilde"})
	if err != nil {
		return err
	}
	if err := listed(ctx, s.b, s.prefix+"/odd/", want); err != nil {
		return err
	}
	// A prefix with the odd characters in it is matched as it is written.
	sub := map[string]driver.Object{}
	for k, o := range want {
		if strings.HasPrefix(k, s.prefix+"/odd/%") {
			sub[k] = o
		}
	}
	return listed(ctx, s.b, s.prefix+"/odd/%", sub)
}

func listReadYourWrite(ctx context.Context, s *scope) error {
	k := s.key("fresh/obj")
	v, err := seed(ctx, s.b, k, []byte("one"))
	if err != nil {
		return err
	}
	if err := listed(ctx, s.b, s.prefix+"/fresh/", map[string]driver.Object{k: {Key: k, Size: 3, Version: v}}); err != nil {
		return fmt.Errorf("just after Put: %w", err)
	}
	v2, err := overwrite(ctx, s.b, k, []byte("second"), v)
	if err != nil {
		return err
	}
	if err := listed(ctx, s.b, s.prefix+"/fresh/", map[string]driver.Object{k: {Key: k, Size: 6, Version: v2}}); err != nil {
		return fmt.Errorf("just after an overwrite: %w", err)
	}
	if err := s.b.Delete(ctx, k, driver.Condition{}); err != nil {
		return fmt.Errorf("setup: Delete: %s", outcome(err))
	}
	if err := listed(ctx, s.b, s.prefix+"/fresh/", nil); err != nil {
		return fmt.Errorf("just after a Delete: %w", err)
	}
	return nil
}

// listNoncharKeys writes keys holding U+FFFE, U+FFFF (which XML 1.0 cannot
// carry) and U+FFFD: each must be refused (ErrInvalidKey) or listed back
// exactly, and nothing else listed.
func listNoncharKeys(ctx context.Context, s *scope) error {
	want := map[string]driver.Object{}
	for _, name := range []string{"nonchar/a-\ufffe", "nonchar/b-\uffff", "nonchar/c-\ufffd", "nonchar/d-\ufffe\uffff x+y"} {
		k := s.key(name)
		v, err := put(ctx, s.b, k, []byte(name), driver.IfAbsent())
		if errors.Is(err, driver.ErrInvalidKey) {
			continue
		}
		if err != nil {
			return fmt.Errorf("Put %q: %s; want success, or ErrInvalidKey if the driver refuses such keys", k, outcome(err))
		}
		want[k] = driver.Object{Key: k, Size: int64(len(name)), Version: v}
	}
	return listed(ctx, s.b, s.prefix+"/nonchar/", want)
}

// listInvalidPrefix lists prefixes no valid key can start with, which a
// driver must refuse rather than list as empty.
func listInvalidPrefix(ctx context.Context, s *scope) error {
	pl, pending := s.b.(multipart.PendingLister)
	_, rawPending := s.raw.(multipart.PendingLister)
	for _, p := range []struct{ why, tail string }{
		{"a control character", "ctl\x01"},
		{"a backslash", "back\\slash"},
		{"U+FFFF", "nonchar\uffff"},
		{"bad UTF-8", "utf8\xff"},
		{"more bytes than a key may have", strings.Repeat("p", 1024)},
	} {
		prefix := s.prefix + "/" + p.tail
		if err := refusedListing("List", p.why, s.b.List(ctx, prefix)); err != nil {
			return err
		}
		if pending && rawPending {
			if err := refusedListing("ListPending", p.why, pl.ListPending(ctx, prefix)); err != nil {
				return err
			}
		}
	}
	return nil
}

// refusedListing fails unless seq yields exactly one ErrInvalidKey.
func refusedListing[T any](op, why string, seq iter.Seq2[T, error]) error {
	n := 0
	for _, err := range seq {
		n++
		if n == 1 && !errors.Is(err, driver.ErrInvalidKey) {
			return fmt.Errorf("%s of a prefix holding %s: %s, want ErrInvalidKey", op, why, outcome(err))
		}
	}
	if n != 1 {
		return fmt.Errorf("%s of a prefix holding %s yielded %d pairs, want one error (ErrInvalidKey)", op, why, n)
	}
	return nil
}

var listChecks = []check{
	check{
		name:   "list-paged",
		expect: "List of a prefix with 1,003 keys (more than one page) yields each once, in lexical order, with the size and the version Put returned",
		run:    listPaged,
	},
	check{
		name:   "list-prefix-of-key",
		expect: "List's prefix is a plain string prefix: \"db1\" yields db1/…, db10/… and db1-old but not db2/…; \"db1/\" only db1/…",
		run:    listPrefixOfKey,
	},
	check{
		name:   "list-odd-keys",
		expect: "keys with spaces, unicode, %, +, ?, # and ~ are listed exactly as written, and a prefix holding % matches as written",
		run:    listOddKeys,
	},
	check{
		name:   "list-read-your-write",
		expect: "a key written just before is listed with its version; an overwrite shows the new version, a Delete removes it",
		run:    listReadYourWrite,
	},
	check{
		name:   "list-invalid-prefix",
		expect: "List (and ListPending) of a prefix no valid key can start with (a control character, a backslash, U+FFFF, bad UTF-8, too long) yields one error, ErrInvalidKey, and nothing else",
		run:    listInvalidPrefix,
	},
	check{
		name:   "list-nonchar-keys",
		expect: "keys holding U+FFFE or U+FFFF (which XML 1.0 cannot carry) are refused at Put (ErrInvalidKey) or listed back exactly, and nothing is listed that was not written",
		run:    listNoncharKeys,
	},
}
