//go:build unix

package file

import "strings"

// sharedFSNames names, by the type name BSD-derived systems report in
// statfs(2)'s f_fstypename, the file systems on which flock(2) may not
// exclude processes on other machines.
var sharedFSNames = map[string]string{
	"nfs":     "NFS",
	"smbfs":   "SMB",
	"cifs":    "CIFS",
	"afpfs":   "AFP",
	"webdav":  "WebDAV",
	"9p":      "9p",
	"macfuse": "FUSE (s3fs, gcsfuse, rclone mount, sshfs, ...)",
	"osxfuse": "FUSE (s3fs, gcsfuse, rclone mount, sshfs, ...)",
	"fusefs":  "FUSE (s3fs, gcsfuse, rclone mount, sshfs, ...)",
	"fuse":    "FUSE (s3fs, gcsfuse, rclone mount, sshfs, ...)",
	"ceph":    "Ceph",
	"afs":     "AFS",
}

// sharedFSByName returns the shared file system a type name stands for,
// or "" for a local one. Names like "fusefs.sshfs" count by their first
// part.
func sharedFSByName(name string) string {
	name = strings.ToLower(name)
	if n, ok := sharedFSNames[name]; ok {
		return n
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return sharedFSNames[name[:i]]
	}
	return ""
}
