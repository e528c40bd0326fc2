// Package exitcode holds the bucketlease command's exit codes and the
// error that carries one (With), so that the packages hold and put are
// built from can end the process with the code its help documents.
package exitcode
