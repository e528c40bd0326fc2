package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

func TestMetadataValidate(t *testing.T) {
	good := []driver.Metadata{
		nil,
		{},
		{"epoch": "7", "instance": "host-1.4711"},
		{"a": "x", strings.Repeat("k", 40): strings.Repeat("v", 256)},
		{"v2": "a b=c;d/e:f,g\"h'\\"},
	}
	for _, md := range good {
		if err := md.Validate(); err != nil {
			t.Errorf("%s: %v", md, err)
		}
	}
	bad := map[string]driver.Metadata{
		"does not start with a lowercase letter": {"Epoch": "1"},
		"holds \"-\"":                            {"lease-epoch": "1"},
		"holds \"_\"":                            {"lease_epoch": "1"},
		"is empty":                               {"": "1"},
		"41 characters":                          {strings.Repeat("k", 41): "1"},
		"outside printable ASCII":                {"epoch": "é"},
		"257 bytes":                              {"epoch": strings.Repeat("v", 257)},
		"leading or trailing space":              {"epoch": " 1"},
		"is empty, which":                        {"epoch": ""},
		"more than 1024":                         {"a": strings.Repeat("v", 256), "b": strings.Repeat("v", 256), "c": strings.Repeat("v", 256), "d": strings.Repeat("v", 256)},
	}
	for want, md := range bad {
		err := md.Validate()
		if !errors.Is(err, driver.ErrInvalidMetadata) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrInvalidMetadata saying %q", md, err, want)
		}
	}
}

func TestMetadataThroughContext(t *testing.T) {
	ctx := context.Background()
	if driver.MetadataToWrite(ctx) != nil || driver.MetadataWanted(ctx) {
		t.Fatal("a bare context carries metadata")
	}
	md := driver.Metadata{"epoch": "1"}
	wctx := driver.WithMetadata(ctx, md)
	md["epoch"] = "2" // WithMetadata copied it
	if got := driver.MetadataToWrite(wctx); got["epoch"] != "1" {
		t.Errorf("MetadataToWrite = %s", got)
	}
	var got driver.Metadata
	rctx := driver.WithMetadataReport(ctx, func(m driver.Metadata) { got = m })
	if !driver.MetadataWanted(rctx) {
		t.Error("MetadataWanted is false under WithMetadataReport")
	}
	driver.ReportMetadata(rctx, nil)
	if got == nil || len(got) != 0 {
		t.Errorf("a nil report arrived as %#v, want an empty map", got)
	}
	if driver.MetadataWanted(driver.WithMetadataReport(rctx, nil)) {
		t.Error("a nil report still wants metadata")
	}
	if l := driver.LowerMetadata(map[string]string{"Epoch": "3"}); l["epoch"] != "3" || len(l) != 1 {
		t.Errorf("LowerMetadata = %s", l)
	}
}

// TestBeginRefusesInvalidMetadata: a driver that declares metadata refuses
// invalid metadata before sending anything; one that does not ignores it.
func TestBeginRefusesInvalidMetadata(t *testing.T) {
	ctx := driver.WithMetadata(context.Background(), driver.Metadata{"Bad": "1"})
	caps := driver.Capabilities{Exclusion: driver.Conditional, Metadata: true}
	if _, err := driver.Begin(ctx, caps, "x", driver.OpPut, "k", driver.Condition{}); !errors.Is(err, driver.ErrInvalidMetadata) {
		t.Errorf("Begin: %v, want ErrInvalidMetadata", err)
	}
	caps.Metadata = false
	if _, err := driver.Begin(ctx, caps, "x", driver.OpPut, "k", driver.Condition{}); err != nil {
		t.Errorf("Begin without the capability: %v", err)
	}
}
