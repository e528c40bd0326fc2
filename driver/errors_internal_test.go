package driver

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestWithContext(t *testing.T) {
	sdk := errors.New("request send failed: use of closed network connection")
	ctx, cancel := context.WithCancel(context.Background())
	if withContext(ctx, sdk) != sdk {
		t.Fatal("a live context changed the error")
	}
	cancel()
	err := withContext(ctx, sdk)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, sdk) {
		t.Fatalf("%v: lost the cancellation or the SDK's error", err)
	}
	already := fmt.Errorf("wrapped: %w", context.Canceled)
	if withContext(ctx, already) != already {
		t.Fatal("an error that already matches was wrapped again")
	}
	if withContext(ctx, nil) != nil {
		t.Fatal("nil became an error")
	}
}

func TestCheckVersion(t *testing.T) {
	for _, ok := range []Version{`"9b2cf535f27731c974343645a3985328"`, "9b2cf535f27731c9", "1700000000000009", `"0x8DCBA9F00FF"`, `"abc-2"`} {
		if err := checkVersion(ok); err != nil {
			t.Errorf("CheckVersion(%q): %v", ok, err)
		}
	}
	for _, bad := range []Version{"", `""`, "*", `"*"`, `"a","b"`, "a,b", `W/"a"`, `"a`, `a"`, "a b", `"a"b"`, "\x00"} {
		if err := checkVersion(bad); !errors.Is(err, ErrPrecondition) {
			t.Errorf("CheckVersion(%q) = %v, want ErrPrecondition", bad, err)
		}
	}
}
