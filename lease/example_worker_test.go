package lease_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

// manifest names the chunks of one restore point, in order.
type manifest struct {
	Seq    int      `json:"seq"`
	Chunks []string `json:"chunks"`
}

// backupOnce is the spec's worker, under a held lease: it streams each
// chunk with If-None-Match: * (a chunk is named by its content, so one
// that exists already is the same bytes), writes the manifest with
// If-None-Match: *, and moves LATEST with If-Match on the version it read.
// A stale holder's late write can then only add an orphan chunk or a
// manifest nothing points at; it never overwrites a restore point.
func backupOnce(ctx context.Context, b driver.Bucket, seq int, chunks []io.Reader) error {
	m := manifest{Seq: seq}
	for _, c := range chunks {
		var buf bytes.Buffer
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(&buf, h), c); err != nil {
			return err
		}
		key := "chunks/" + hex.EncodeToString(h.Sum(nil))[:16]
		_, err := driver.PutStream(ctx, b, key, &buf, driver.IfAbsent(), nil)
		if err != nil && !errors.Is(err, driver.ErrPrecondition) {
			return err
		}
		m.Chunks = append(m.Chunks, key)
	}
	data, _ := json.Marshal(m)
	name := fmt.Sprintf("manifests/%08d.json", seq)
	if _, err := b.Put(ctx, name, data, driver.IfAbsent()); err != nil {
		return err
	}
	cond := driver.IfAbsent()
	if _, v, err := driver.ReadAll(ctx, b, "LATEST", 1<<10); err == nil {
		cond = driver.IfMatch(v)
	} else if !errors.Is(err, driver.ErrNotExist) {
		return err
	}
	_, err := b.Put(ctx, "LATEST", []byte(name), cond)
	return err
}

// retain keeps the newest keep manifests written in time and deletes every
// other manifest and every chunk that no kept manifest names. A manifest
// that a holder wrote after its lease had passed on (late, by its stamp
// and the eras of the lease object: Status.Eras) is never kept, so
// neither are the chunks only it names.
func retain(ctx context.Context, b driver.Bucket, eras []lease.Era, keep int) error {
	var manifests, chunks []string
	for o, err := range driver.List(ctx, b, "") {
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(o.Key, "manifests/") && late(eras, o):
			if err := b.Delete(ctx, o.Key, driver.Condition{}); err != nil {
				return err
			}
		case strings.HasPrefix(o.Key, "manifests/"):
			manifests = append(manifests, o.Key)
		case strings.HasPrefix(o.Key, "chunks/"):
			chunks = append(chunks, o.Key)
		}
	}
	slices.Sort(manifests)
	kept := map[string]bool{}
	for i, name := range manifests {
		if i < len(manifests)-keep {
			if err := b.Delete(ctx, name, driver.Condition{}); err != nil {
				return err
			}
			continue
		}
		data, _, err := driver.ReadAll(ctx, b, name, 1<<20)
		if err != nil {
			return err
		}
		var m manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("manifest %s: %w", name, err)
		}
		for _, c := range m.Chunks {
			kept[c] = true
		}
	}
	for _, c := range chunks {
		if !kept[c] {
			if err := b.Delete(ctx, c, driver.Condition{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// late reports whether o, as listed with its metadata, was written by a
// holder whose lease had passed on (lease.LateBy). Unstamped objects are
// not late: this worker writes every object under the lease.
func late(eras []lease.Era, o driver.Object) bool {
	st, ok := lease.StampOf(o.Metadata)
	_, _, l := lease.LateBy(eras, st, o.ModTime)
	return ok && l
}

// restoreLatest returns the newest restore point written in time: the
// manifest LATEST names, unless LATEST or that manifest was written late
// (a stale holder's If-Match on LATEST lands when nobody moved it since it
// read it), and then the newest manifest that was not. It reads the
// prefix through b (keys relative to it) and judges by eras
// (Status.Eras); the chunks it would read are named by their content.
func restoreLatest(ctx context.Context, b driver.Bucket, eras []lease.Era) (manifest, error) {
	byName := map[string]driver.Object{}
	var names []string
	for o, err := range driver.List(ctx, b, "") {
		if err != nil {
			return manifest{}, err
		}
		byName[o.Key] = o
		if strings.HasPrefix(o.Key, "manifests/") && !late(eras, o) {
			names = append(names, o.Key)
		}
	}
	slices.Sort(names)
	if l, ok := byName["LATEST"]; ok && !late(eras, l) {
		data, _, err := driver.ReadAll(ctx, b, "LATEST", 1<<10)
		if err != nil {
			return manifest{}, err
		}
		if name := string(data); slices.Contains(names, name) {
			names = append(names, name) // LATEST's, in time: the one to restore
		}
	}
	if len(names) == 0 {
		return manifest{}, errors.New("no restore point written in time")
	}
	data, _, err := driver.ReadAll(ctx, b, names[len(names)-1], 1<<20)
	if err != nil {
		return manifest{}, err
	}
	var m manifest
	return m, json.Unmarshal(data, &m)
}

// Example_backupWorker is a small backup worker under the lease: three
// backups of two chunks each (one chunk shared by all), streamed through
// the fenced bucket, then a retention pass that keeps the newest two.
func Example_backupWorker() {
	ctx := context.Background()
	bucket := mem.New()
	l, err := lease.Acquire(ctx, bucket, "db1", &lease.Options{InstanceID: "worker-a",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(context.WithoutCancel(ctx))
	work, stop := l.Fence(ctx)
	defer stop()
	go l.Keep(work)

	b := l.Bucket() // keys relative to db1/, writes fenced
	for seq := 1; seq <= 3; seq++ {
		chunks := []io.Reader{strings.NewReader("the shared base"), strings.NewReader(fmt.Sprintf("changes of day %d", seq))}
		if err := backupOnce(work, b, seq, chunks); err != nil {
			fmt.Println("backup:", err)
			return
		}
	}
	st, err := lease.Inspect(ctx, bucket, "db1", time.Now())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := retain(work, b, st.Eras(), 2); err != nil {
		fmt.Println("retention:", err)
		return
	}
	for o, err := range driver.List(ctx, bucket, "db1/") {
		if err != nil {
			fmt.Println(err)
			return
		}
		if strings.HasPrefix(o.Key, "db1/chunks/") {
			o.Key = "db1/chunks/…"
		}
		fmt.Println(o.Key)
	}
	latest, _, _ := driver.ReadAll(ctx, b, "LATEST", 1<<10)
	fmt.Println("LATEST ->", string(latest))
	// Output:
	// db1/LATEST
	// db1/LEASE
	// db1/chunks/…
	// db1/chunks/…
	// db1/chunks/…
	// db1/manifests/00000002.json
	// db1/manifests/00000003.json
	// LATEST -> manifests/00000003.json
}
