//go:build darwin || freebsd

package file

import "syscall"

// statfsName returns the file system type name (f_fstypename) of the file
// system holding path. Tests replace it.
var statfsName = func(path string) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return "", err
	}
	b := make([]byte, 0, len(st.Fstypename))
	for _, c := range st.Fstypename {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b), nil
}

// sharedFS returns the name of the shared file system holding dir, or ""
// for a local one.
func sharedFS(dir string) (string, error) {
	name, err := statfsName(dir)
	if err != nil {
		return "", err
	}
	return sharedFSByName(name), nil
}
