//go:build linux

package cli

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestDocsLateSession runs docs/cli.md's list --late session: host-a
// holds db4 and writes a chunk in time, then stops renewing (a paused VM);
// host-b takes the lease over, writes its own chunk and releases; then the
// request host-a sent before its pause lands, stamped with its epoch.
// list --late names that object alone, and exits 10.
func TestDocsLateSession(t *testing.T) {
	u, dir := fileURL(t)
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Capabilities().Metadata {
		t.Skip("this file system keeps no extended attributes, so the file driver stamps nothing")
	}
	ctx := context.Background()
	holder := func(id string) *lease.Lease {
		l, err := lease.Acquire(ctx, bucket.New(b, ""), leaseseam.With(&lease.Options{TTL: 3 * time.Second, InstanceID: id, Logger: slog.New(slog.DiscardHandler)}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, err := l.Bucket().Driver().Put(ctx, "chunks/"+id, []byte(id), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := holder("host-a")
	stamp := admin.Stamp{Epoch: a.Epoch(), Instance: admin.StampedInstance(a.InstanceID())}
	time.Sleep(5*time.Second + 500*time.Millisecond) // host-a is paused; its lease goes stale (TTL and the file driver's resolution)
	next := holder("host-b")
	time.Sleep(3 * time.Second) // more than the file driver's resolution
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "chunks/late", []byte("host-a wakes"), driver.PutOptions{Metadata: stamp.Metadata()}); err != nil {
		t.Fatal(err)
	}

	s := newSession(u, "file:///var/tmp/bl-doc/db4")
	s.bucketlease("list", u, "--late")
	var out bytes.Buffer
	errOut, code := runTo(t, "", &out, nil, "list", u, "--late")
	s.WriteString(out.String() + errOut)
	s.exit(code)
	if code != exitcode.Late || !bytes.Contains(out.Bytes(), []byte("chunks/late")) || bytes.Contains(out.Bytes(), []byte("chunks/host-")) {
		t.Fatalf("list --late: exit %d, %s%s; want chunks/late alone, exit %d", code, out.String(), errOut, exitcode.Late)
	}
	checkSession(t, s)
}
