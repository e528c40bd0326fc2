package cli_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/cli"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

// notes is the service of this example's driver: one bucket, in memory.
var notes = mem.New()

// The driver of notes://PREFIX registers its scheme from init, as a driver
// package does; a real one opens a client of its service from the URL.
func init() {
	driver.Register("notes", driver.Scheme{Open: func(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
		return notes, strings.Trim(u.Host+u.Path, "/"), nil
	}})
}

// Main runs the command with the drivers registered when it is called:
// this module's own, and notes://. A main package calls it with os.Args
// and exits with what it returns.
func Example() {
	notes.Put(context.Background(), "db1/greeting", []byte("hello from notes://\n"), driver.PutOptions{})

	code := cli.Main([]string{"bucketlease", "get", "notes://db1", "greeting"})
	fmt.Println("exit", code)
	// Output:
	// hello from notes://
	// exit 0
}
