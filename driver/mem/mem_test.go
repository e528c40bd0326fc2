package mem_test

import (
	"context"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
)

func TestConformance(t *testing.T) {
	var b mem.Bucket // the zero value is ready to use
	drivertest.Run(t, &b, drivertest.Options{BucketFaults: true})
}

func TestEveryWriteGetsANewVersion(t *testing.T) {
	b := mem.New()
	seen := map[driver.Version]bool{}
	for range 10000 {
		a, err := b.Put(context.Background(), "k", []byte("same"), driver.PutOptions{})
		v := a.Version
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] || v == "" {
			t.Fatalf("version %q given twice", v)
		}
		seen[v] = true
	}
}
