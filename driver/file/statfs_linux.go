//go:build linux

package file

import "syscall"

// statfsType returns the file system type (f_type) of the file system
// holding path. Tests replace it.
var statfsType = func(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

// sharedFSMagic names, by statfs(2) f_type, the network, cluster and FUSE
// file systems, on which flock(2) may not exclude other machines.
var sharedFSMagic = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x01021997: "9p (v9fs)",
	0x65735546: "FUSE (s3fs, gcsfuse, rclone mount, sshfs, ...)",
	0x00c36400: "Ceph",
	0x5346414f: "AFS",
	0x6b414653: "AFS (kAFS)",
	0x73757245: "Coda",
	0x01161970: "GFS2",
	0x7461636f: "OCFS2",
	0x0bd00bd0: "Lustre",
	0x47504653: "GPFS",
	0x564c:     "NCP",
	0x20030528: "OrangeFS (PVFS2)",
	0x19830326: "FhGFS/BeeGFS",
	0xaad7aaea: "PanFS",
	0x013111a8: "IBRIX",
	0x6e667364: "nfsd",
}

// sharedFS returns the name of the shared file system holding dir, or ""
// for a local one.
func sharedFS(dir string) (string, error) {
	t, err := statfsType(dir)
	if err != nil {
		return "", err
	}
	return sharedFSMagic[t&0xffffffff], nil
}
