// Package backupworker is the backup worker of the bucketlease examples,
// small enough to read in one sitting and whole enough to copy: the
// specification's worker under a held lease (BackupOnce), and the two
// readers every backup tool has, restore (RestoreLatest) and retention
// (Retain), which judge every object by its stamp so that a write a stale
// holder's request made after its lease had passed on is never restored
// and never kept.
//
// It works on keys relative to the prefix, through the bucket
// lease.Lease.Bucket gives; the readers take the lease object's status
// (admin.Inspect), whose eras they judge by.
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

	"github.com/mushroomdb/bucketlease/driver"
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
func BackupOnce(ctx context.Context, b driver.Bucket, seq int, chunks []io.Reader) error {
	m := Manifest{Seq: seq}
	for _, c := range chunks {
		var buf bytes.Buffer
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(&buf, h), c); err != nil {
			return err
		}
		key := "chunks/" + hex.EncodeToString(h.Sum(nil))[:16]
		_, err := b.PutStream(ctx, key, &buf, driver.PutOptions{If: driver.IfAbsent()}, nil)
		if err != nil && !errors.Is(err, driver.ErrPrecondition) {
			return err
		}
		m.Chunks = append(m.Chunks, key)
	}
	data, _ := json.Marshal(m)
	name := fmt.Sprintf("manifests/%08d.json", seq)
	if _, err := b.Put(ctx, name, data, driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		return err
	}
	cond := driver.IfAbsent()
	if _, a, err := driver.ReadAll(ctx, b, "LATEST", 1<<10, driver.GetOptions{}); err == nil {
		cond = driver.IfMatch(a.Version)
	} else if !errors.Is(err, driver.ErrNotExist) {
		return err
	}
	_, err := b.Put(ctx, "LATEST", []byte(name), driver.PutOptions{If: cond})
	return err
}

// Retain keeps the newest keep manifests written in time and deletes every
// other manifest and every chunk that no kept manifest names. A manifest
// that a holder wrote after its lease had passed on (late, by its stamp
// and the eras st, the lease object's status, knows: admin.Status.Late)
// is never kept, so neither are the chunks only it names.
func Retain(ctx context.Context, b driver.Bucket, st admin.Status, keep int) error {
	var manifests, chunks []string
	for o, err := range b.List(ctx, "") {
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(o.Key, "manifests/"):
			late, err := isLate(ctx, b, st, o)
			switch {
			case err != nil:
				return err
			case late:
				if err := b.Delete(ctx, o.Key, driver.Condition{}); err != nil {
					return err
				}
			default:
				manifests = append(manifests, o.Key)
			}
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
		m, err := readManifest(ctx, b, name)
		if err != nil {
			return err
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

// isLate reports whether o, as listed, was written by a holder whose lease
// had passed on. Status.Late reads the object's stamp from the listing, or
// with a Get where the service lists no metadata (the S3 family): judging
// by the listing alone would find nothing late there. Unstamped objects
// are not late: this worker writes every object under the lease. Only
// manifests and LATEST are judged; a chunk is named by its content and
// judged by the manifests that name it.
func isLate(ctx context.Context, b driver.Bucket, st admin.Status, o driver.Object) (bool, error) {
	_, late, err := st.Late(ctx, b, o)
	return late, err
}

// RestoreLatest returns the newest restore point written in time: the
// manifest LATEST names, unless LATEST or that manifest was written late
// (a stale holder's If-Match on LATEST lands when nobody moved it since it
// read it), and then the newest manifest that was not. It reads the
// prefix through b (keys relative to it) and judges by st, the lease
// object's status; the chunks it would read are named by their content.
func RestoreLatest(ctx context.Context, b driver.Bucket, st admin.Status) (Manifest, error) {
	var names []string
	latest := false // LATEST is there, written in time
	for o, err := range b.List(ctx, "") {
		if err != nil {
			return Manifest{}, err
		}
		if !strings.HasPrefix(o.Key, "manifests/") && o.Key != "LATEST" {
			continue
		}
		late, err := isLate(ctx, b, st, o)
		switch {
		case err != nil:
			return Manifest{}, err
		case late:
		case o.Key == "LATEST":
			latest = true
		default:
			names = append(names, o.Key)
		}
	}
	slices.Sort(names)
	if latest {
		data, _, err := driver.ReadAll(ctx, b, "LATEST", 1<<10, driver.GetOptions{})
		if err != nil {
			return Manifest{}, err
		}
		if name := string(data); slices.Contains(names, name) {
			names = append(names, name) // LATEST's, in time: the one to restore
		}
	}
	if len(names) == 0 {
		return Manifest{}, errors.New("no restore point written in time")
	}
	return readManifest(ctx, b, names[len(names)-1])
}

func readManifest(ctx context.Context, b driver.Bucket, name string) (Manifest, error) {
	data, _, err := driver.ReadAll(ctx, b, name, 1<<20, driver.GetOptions{})
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("manifest %s: %w", name, err)
	}
	return m, nil
}
