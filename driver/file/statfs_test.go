//go:build linux

package file

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestSharedFSDetection: every network, cluster and FUSE file system type
// makes the bucket declare NoExclusion with a reason naming the file system
// and the parameter, unless the user trusts it; local types stay
// Conditional. statfs is replaced, so each magic number is tried here.
func TestSharedFSDetection(t *testing.T) {
	real := statfsType
	t.Cleanup(func() { statfsType = real })
	cases := []struct {
		magic  int64
		shared string // "" for local
	}{
		{0x6969, "NFS"},
		{0x517b, "SMB"},
		{0xff534d42, "CIFS"},
		{int64(int32(-0x00acb2be)), "CIFS"}, // f_type as a sign-extended 32-bit value
		{0xfe534d42, "SMB2"},
		{0x01021997, "9p"},
		{0x65735546, "FUSE"},
		{0x00c36400, "Ceph"},
		{0x0bd00bd0, "Lustre"},
		{0x47504653, "GPFS"},
		{0xef53, ""},     // ext2/3/4
		{0x01021994, ""}, // tmpfs
		{0x58465342, ""}, // xfs
		{0x9123683e, ""}, // btrfs
		{0x794c7630, ""}, // overlayfs
		{0x2fc12fc1, ""}, // zfs
	}
	for _, c := range cases {
		statfsType = func(string) (int64, error) { return c.magic, nil }
		b, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		caps := b.Capabilities()
		if c.shared == "" {
			if caps.Exclusion != driver.Conditional || caps.Reason != "" {
				t.Errorf("magic %#x (local): %+v, want Conditional", c.magic, caps)
			}
			continue
		}
		if caps.Exclusion != driver.NoExclusion || !strings.Contains(caps.Reason, c.shared) || !strings.Contains(caps.Reason, TrustParam+"=true") {
			t.Errorf("magic %#x (%s): %+v, want NoExclusion with a reason naming %s and %s", c.magic, c.shared, caps, c.shared, TrustParam)
		}
		// The user's assertion, in the Go API and in the URL.
		tb, err := OpenWith(t.TempDir(), Options{TrustNetworkFlock: true})
		if err != nil || tb.Capabilities().Exclusion != driver.Conditional {
			t.Errorf("magic %#x trusted: %v, %+v", c.magic, err, tb.Capabilities())
		}
		ub, _, err := OpenURL(context.Background(), &url.URL{Scheme: "file", Path: t.TempDir(), RawQuery: TrustParam + "=true"})
		if err != nil || ub.Capabilities().Exclusion != driver.Conditional {
			t.Errorf("magic %#x trusted by URL: %v", c.magic, err)
		}
		ub, _, err = OpenURL(context.Background(), &url.URL{Scheme: "file", Path: t.TempDir()})
		if err != nil || ub.Capabilities().Exclusion != driver.NoExclusion {
			t.Errorf("magic %#x by URL without the parameter: %v", c.magic, err)
		}
	}
	statfsType = func(string) (int64, error) { return 0, syscall.EIO }
	if _, err := Open(t.TempDir()); !errors.Is(err, syscall.EIO) {
		t.Errorf("a failing statfs: %v, want the error", err)
	}
}

// TestLocalFSStaysConditional uses the real statfs on the test's temporary
// directory (ext4 or the like) and on /dev/shm (tmpfs) where there is one:
// local file systems keep Conditional exclusion.
func TestLocalFSStaysConditional(t *testing.T) {
	dirs := []string{t.TempDir()}
	if d, err := os.MkdirTemp("/dev/shm", "bucketlease-test-*"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		kind, err := statfsType(d)
		if err != nil {
			t.Fatal(err)
		}
		if name, shared := sharedFSMagic[kind]; shared {
			t.Skipf("%s is on a %s file system; this test needs a local one", d, name)
		}
		b, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		if c := b.Capabilities(); c.Exclusion != driver.Conditional {
			t.Errorf("%s (f_type %#x): %+v, want Conditional", d, kind, c)
		}
	}
}

// TestLeaseRefusesSharedFS: on a shared file system the lease fails closed.
func TestLeaseRefusesSharedFS(t *testing.T) {
	real := statfsType
	t.Cleanup(func() { statfsType = real })
	statfsType = func(string) (int64, error) { return 0x6969, nil }
	b, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = lease.Acquire(context.Background(), bucket.New(b, "db1"), leaseseam.With(&lease.Options{InstanceID: "a"}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
	if !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("Acquire on NFS: %v, want ErrPreconditionsIgnored", err)
	}
	if !strings.Contains(b.Capabilities().Reason, "NFS") {
		t.Fatalf("the reason %q does not name the file system", b.Capabilities().Reason)
	}
	if strings.Contains(err.Error(), b.Capabilities().Reason) {
		t.Logf("the lease prints the reason: %v", err)
	}
}

// TestSharedFSByName: the type names BSD-derived systems (macOS, FreeBSD)
// report.
func TestSharedFSByName(t *testing.T) {
	for name, want := range map[string]string{"nfs": "NFS", "smbfs": "SMB", "macfuse": "FUSE", "fusefs.sshfs": "FUSE",
		"webdav": "WebDAV", "afpfs": "AFP", "apfs": "", "hfs": "", "ufs": "", "zfs": "", "tmpfs": "", "devfs": ""} {
		got := sharedFSByName(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("sharedFSByName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestServiceTimeOnlyOnALocalFS: on a local file system a Put and a Get
// return this machine's clock, the Get with the object's date (dateOf: the
// file's change time, stamped at the commit), and so does a refused Put
// and a Get of a missing key; on a network file system (NFS, even trusted)
// none, since its mtime is the server's clock and each machine sharing it
// has a clock of its own.
func TestServiceTimeOnlyOnALocalFS(t *testing.T) {
	real := statfsType
	t.Cleanup(func() { statfsType = real })
	for _, tc := range []struct {
		name   string
		magic  int64
		report bool
	}{{"local", 0xef53, true}, {"NFS", 0x6969, false}} {
		t.Run(tc.name, func(t *testing.T) {
			statfsType = func(string) (int64, error) { return tc.magic, nil }
			b, err := OpenWith(t.TempDir(), Options{TrustNetworkFlock: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			var got []driver.ServiceTime
			pa, err := b.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pa.Time)
			rc, ga, err := b.Get(ctx, "k", driver.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rc.Close()
			got = append(got, ga.Time)
			ra, err := b.Put(ctx, "k", []byte("y"), driver.PutOptions{If: driver.IfAbsent()})
			if !errors.Is(err, driver.ErrPrecondition) {
				t.Fatalf("a second Put IfAbsent: %v, want ErrPrecondition", err)
			}
			got = append(got, ra.Time)
			_, ma, err := b.Get(ctx, "missing", driver.GetOptions{})
			if !errors.Is(err, driver.ErrNotExist) {
				t.Fatalf("a Get of a missing key: %v, want ErrNotExist", err)
			}
			got = append(got, ma.Time)
			st, err := os.Stat(b.root + "/k")
			if err != nil {
				t.Fatal(err)
			}
			for i, what := range []string{"the Put", "the Get", "the refused Put", "the Get of a missing key"} {
				switch {
				case !tc.report && got[i] != (driver.ServiceTime{}):
					t.Errorf("%s on %s returned the time %+v, want none", what, tc.name, got[i])
				case tc.report && (got[i].Date.IsZero() || got[i].Resolution != b.resolution):
					t.Errorf("%s returned the time %+v, want this machine's clock with a resolution of %v", what, got[i], b.resolution)
				}
			}
			if tc.report && !got[1].Modified.Equal(dateOf(st, true)) {
				t.Errorf("the Get returned the object's date %v, want %v", got[1].Modified, dateOf(st, true))
			}
			if !got[0].Modified.IsZero() || !got[2].Modified.IsZero() {
				t.Errorf("a Put returned a modification time: %+v, %+v", got[0], got[2])
			}
		})
	}
}
