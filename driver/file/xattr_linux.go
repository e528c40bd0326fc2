//go:build linux

package file

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mushroomdb/bucketlease/driver"
)

// xattrPrefix is the name under which each key of an object's metadata
// (driver.PutOptions.Metadata) is kept: user.bucketlease.KEY, an extended
// attribute of the object's file.
const xattrPrefix = "user.bucketlease."

// probeMetadata reports why the file system holding dir cannot keep the
// object metadata as extended attributes, or nil if it can: it sets a user
// extended attribute on a new file in dir and reads it back.
func probeMetadata(dir string) error {
	f, err := os.CreateTemp(dir, "xattr-probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := setMetadata(f, driver.Metadata{"probe": "1"}); err != nil {
		return err
	}
	md, err := readMetadata(f)
	if err != nil {
		return err
	}
	if md["probe"] != "1" {
		return fmt.Errorf("the extended attribute %sprobe set on %s read back as %q", xattrPrefix, f.Name(), md["probe"])
	}
	return nil
}

// setMetadata stores md on f, one extended attribute per key.
func setMetadata(f *os.File, md driver.Metadata) error {
	for k, v := range md {
		if err := unix.Fsetxattr(int(f.Fd()), xattrPrefix+k, []byte(v), 0); err != nil {
			return fmt.Errorf("setting the extended attribute %s%s on %s: %w", xattrPrefix, k, f.Name(), err)
		}
	}
	return nil
}

// readMetadata returns the metadata stored on f: its user.bucketlease.*
// extended attributes, an empty Metadata for none.
func readMetadata(f *os.File) (driver.Metadata, error) {
	fd := int(f.Fd())
	var names []byte
	for size := 1024; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Flistxattr(fd, buf)
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return driver.Metadata{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing the extended attributes of %s: %w", f.Name(), err)
		}
		names = buf[:n]
		break
	}
	md := driver.Metadata{}
	for _, name := range bytes.Split(names, []byte{0}) {
		key, ok := strings.CutPrefix(string(name), xattrPrefix)
		if !ok {
			continue
		}
		buf := make([]byte, 256+1) // a portable value is at most 256 bytes
		n, err := unix.Fgetxattr(fd, string(name), buf)
		if errors.Is(err, unix.ENODATA) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading the extended attribute %s of %s: %w", name, f.Name(), err)
		}
		md[key] = string(buf[:n])
	}
	return md, nil
}
