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

// TestBeginPutCarriesTheMetadata: a driver that declares metadata gets a
// copy of the write's metadata on its Op, which a later change to the
// caller's map does not reach; one that does not declare it gets none.
func TestBeginPutCarriesTheMetadata(t *testing.T) {
	ctx := context.Background()
	caps := driver.Capabilities{Exclusion: driver.Conditional, Metadata: true}
	md := driver.Metadata{"epoch": "1"}
	op, err := driver.BeginPut(ctx, caps, "x", "k", driver.PutOptions{If: driver.IfAbsent(), Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	md["epoch"] = "2"
	if op.Metadata["epoch"] != "1" || len(op.Metadata) != 1 {
		t.Errorf("op.Metadata = %s, want a copy of epoch=1", op.Metadata)
	}
	var oe *driver.OpError
	if !errors.As(op.Fail(nil, errors.New("x")), &oe) || oe.Op != "put" || oe.Key != "k" || oe.Cond != driver.IfAbsent() {
		t.Errorf("BeginPut's Op fails as %v, want put \"k\" IfAbsent", oe)
	}
	if op, err := driver.BeginPut(ctx, caps, "x", "k", driver.PutOptions{}); err != nil || op.Metadata != nil {
		t.Errorf("a write with no metadata: %v, op.Metadata = %#v, want nil", err, op.Metadata)
	}
	caps.Metadata = false
	if op, err := driver.BeginPut(ctx, caps, "x", "k", driver.PutOptions{Metadata: md}); err != nil || op.Metadata != nil {
		t.Errorf("without the capability: %v, op.Metadata = %s, want none", err, op.Metadata)
	}
}

// TestBeginPutRefusesInvalidMetadata: a driver that declares metadata
// refuses invalid metadata before sending anything; one that does not
// ignores it. BeginPut applies Begin's rules too.
func TestBeginPutRefusesInvalidMetadata(t *testing.T) {
	ctx := context.Background()
	bad := driver.PutOptions{Metadata: driver.Metadata{"Bad": "1"}}
	caps := driver.Capabilities{Exclusion: driver.Conditional, Metadata: true}
	_, err := driver.BeginPut(ctx, caps, "x", "k", bad)
	var oe *driver.OpError
	if !errors.Is(err, driver.ErrInvalidMetadata) || !errors.As(err, &oe) || oe.Key != "k" || oe.Op != "put" {
		t.Errorf("BeginPut: %v, want ErrInvalidMetadata in an OpError naming put k", err)
	}
	if _, err := driver.BeginPut(ctx, caps, "x", "/k", driver.PutOptions{}); !errors.Is(err, driver.ErrInvalidKey) {
		t.Errorf("BeginPut of an invalid key: %v, want ErrInvalidKey", err)
	}
	if _, err := driver.BeginPut(ctx, caps, "x", "k", driver.PutOptions{If: driver.IfMatch("")}); !errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("BeginPut under IfMatch of the empty version: %v, want ErrPrecondition", err)
	}
	caps.Metadata = false
	if _, err := driver.BeginPut(ctx, caps, "x", "k", bad); err != nil {
		t.Errorf("BeginPut without the capability: %v", err)
	}
}
