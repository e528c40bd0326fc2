package metadata_test

import (
	"testing"

	"github.com/mushroomdb/bucketlease/driver/internal/metadata"
)

func TestLower(t *testing.T) {
	if l := metadata.Lower(map[string]string{"Epoch": "3"}); l["epoch"] != "3" || len(l) != 1 {
		t.Errorf("LowerMetadata = %s", l)
	}
	if l := metadata.Lower(nil); l == nil || len(l) != 0 {
		t.Errorf("LowerMetadata(nil) = %#v, want an empty map", l)
	}
}
