//go:build unix

package file_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// Writes into a directory that a Delete of a neighbour prunes at the same
// moment (it removed the directory it emptied) still land: the lease's
// scratch key beside LEASE, deleted while LEASE is written, is the case.
func TestWriteBesideAPruningDelete(t *testing.T) {
	b, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const rounds = 300
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				key := fmt.Sprintf("a/b/c/k%d-%d", w, i)
				if _, err := b.Put(ctx, key, []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
					errs <- fmt.Errorf("put %s: %w", key, err)
					return
				}
				if err := b.Delete(ctx, key, driver.Condition{}); err != nil {
					errs <- fmt.Errorf("delete %s: %w", key, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
