// Package backupworker is the backup worker of the bucketlease examples,
// small enough to read in one sitting and whole enough to copy: the
// specification's worker under a held lease (BackupOnce), and the two
// readers every backup tool has, restore (RestoreLatest) and retention
// (Retain), which judge every version they read by its stamp so that a
// write a stale holder's request made after its lease had passed on is
// never restored and never kept.
//
// It works on keys relative to the prefix: the writer through the bucket
// lease.Lease.Bucket gives, the readers through one bucket.Open gives,
// judged by the lease object's status (admin.Inspect).
package backupworker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Manifest names the chunks of one restore point, in order.
type Manifest struct {
	Seq    int      `json:"seq"`
	Chunks []string `json:"chunks"`
}

// BackupOnce is the spec's worker, under a held lease: it streams each
// chunk with If-None-Match: * (a chunk is named by its content, so one
// that exists already is the same bytes), writes the manifest with
// If-None-Match: *, and moves LATEST with If-Match on the version it read.
// A stale holder's late write can then only add an orphan chunk or a
// manifest nothing points at; it never overwrites a restore point.
func BackupOnce(ctx context.Context, b *bucket.Bucket, seq int, chunks []io.Reader) error {
	m := Manifest{Seq: seq}
	for _, c := range chunks {
		var buf bytes.Buffer
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(&buf, h), c); err != nil {
			return err
		}
		key := "chunks/" + hex.EncodeToString(h.Sum(nil))[:16]
		_, err := b.Write(ctx, key, &buf, &bucket.PutOptions{If: bucket.IfAbsent()})
		if err != nil && !errors.Is(err, bucket.ErrPrecondition) {
			return err
		}
		m.Chunks = append(m.Chunks, key)
	}
	data, _ := json.Marshal(m)
	name := fmt.Sprintf("manifests/%08d.json", seq)
	if _, err := b.Put(ctx, name, data, &bucket.PutOptions{If: bucket.IfAbsent()}); err != nil {
		return err
	}
	cond := bucket.IfAbsent()
	if _, a, err := b.ReadAll(ctx, "LATEST", 1<<10); err == nil {
		cond = bucket.IfMatch(a.Version)
	} else if !errors.Is(err, bucket.ErrNotExist) {
		return err
	}
	_, err := b.Put(ctx, "LATEST", []byte(name), &bucket.PutOptions{If: cond})
	return err
}

// Retain keeps the newest keep manifests written in time and deletes every
// other manifest and every chunk that no kept manifest names. A manifest
// that a holder wrote after its lease had passed on (late, by its stamp
// and the eras st, the lease object's status, knows: admin.Status.LateRead)
// is never kept, so neither are the chunks only it names.
func Retain(ctx context.Context, b *bucket.Bucket, st admin.Status, keep int) error {
	names, chunks, err := list(ctx, b)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for i := len(names) - 1; i >= 0; i-- {
		m, late, err := readManifest(ctx, b, st, names[i])
		if err != nil {
			return err
		}
		if late || keep == 0 {
			if err := b.Delete(ctx, names[i], bucket.Condition{}); err != nil {
				return err
			}
			continue
		}
		keep--
		for _, c := range m.Chunks {
			kept[c] = true
		}
	}
	for _, c := range chunks {
		if !kept[c] {
			if err := b.Delete(ctx, c, bucket.Condition{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// RestoreLatest returns the newest restore point written in time: the
// manifest LATEST names, unless LATEST or that manifest was written late
// (a stale holder's If-Match on LATEST lands when nobody moved it since it
// read it), and then the newest manifest that was not. It reads the
// prefix through b and judges each version it reads by st, the lease
// object's status; the chunks it would read are named by their content.
func RestoreLatest(ctx context.Context, b *bucket.Bucket, st admin.Status) (Manifest, error) {
	names, _, err := list(ctx, b)
	if err != nil {
		return Manifest{}, err
	}
	data, a, err := b.ReadAll(ctx, "LATEST", 1<<10)
	switch _, late := st.LateRead("LATEST", a); {
	case errors.Is(err, bucket.ErrNotExist):
	case err != nil:
		return Manifest{}, err
	case !late && slices.Contains(names, string(data)):
		names = append(names, string(data)) // LATEST's, in time: the first to try
	}
	for i := len(names) - 1; i >= 0; i-- {
		m, late, err := readManifest(ctx, b, st, names[i])
		if err != nil || !late {
			return m, err
		}
	}
	return Manifest{}, errors.New("no restore point written in time")
}

// list returns the manifests under b, oldest first, and the chunks.
func list(ctx context.Context, b *bucket.Bucket) (manifests, chunks []string, err error) {
	for o, err := range b.List(ctx, "") {
		if err != nil {
			return nil, nil, err
		}
		switch {
		case strings.HasPrefix(o.Key, "manifests/"):
			manifests = append(manifests, o.Key)
		case strings.HasPrefix(o.Key, "chunks/"):
			chunks = append(chunks, o.Key)
		}
	}
	slices.Sort(manifests)
	return manifests, chunks, nil
}

// readManifest reads the manifest name and reports whether the version
// read was written late.
func readManifest(ctx context.Context, b *bucket.Bucket, st admin.Status, name string) (Manifest, bool, error) {
	data, a, err := b.ReadAll(ctx, name, 1<<20)
	if err != nil {
		return Manifest{}, false, err
	}
	if _, late := st.LateRead(name, a); late {
		return Manifest{}, true, nil
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, false, fmt.Errorf("manifest %s: %w", name, err)
	}
	return m, false, nil
}
