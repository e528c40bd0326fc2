// Command prog uses the lease as a program would, for
// TestShippedBinaryHasNoOldBehaviour: Acquire (and so its clean-up) and
// Break are reachable from main.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

func main() {
	ctx := context.Background()
	b := mem.New()
	l, err := lease.Acquire(ctx, b, "db1", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lease.Break(ctx, b, "db1", l.Version(), time.Now()))
}
