// Command bucketlease takes, inspects, tests and breaks the advisory
// single-writer lease on an object-store prefix, on every service this
// module has a driver for. It is package cli (its documentation is there);
// importing cli registers the drivers.
package main

import (
	"os"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/cli"
)

func main() { os.Exit(cli.Main(os.Args)) }
