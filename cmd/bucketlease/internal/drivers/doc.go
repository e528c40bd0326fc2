// Package drivers links every driver of this module into the command, so
// that every scheme works in the installed binary; the file driver is
// Unix-only (drivers_unix.go). Importing it registers them.
package drivers
