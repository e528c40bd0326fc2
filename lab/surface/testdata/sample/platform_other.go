//go:build !linux

package sample

// Platform is declared for Linux in platform_linux.go.
func Platform() Info { return Info{OS: "other"} }

// Info names the system.
type Info struct{ OS string }
