// Command bucketlease-kv is the bucketlease command with this module's kv
// driver linked in: every scheme of bucketlease's own drivers, and kv://.
package main

import (
	"os"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/cli"

	_ "example.com/thirdpartydriver/kv" // registers kv://
)

func main() { os.Exit(cli.Main(os.Args)) }
