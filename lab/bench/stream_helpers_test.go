package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

// TestBody checks that a Body has exactly its length, repeats no byte
// pattern shorter than its block, and offers no way to learn its size.
func TestBody(t *testing.T) {
	r := Body(3<<20 + 7)
	switch r.(type) {
	case *bytes.Reader, io.Seeker, interface{ Len() int }, interface{ Size() int64 }:
		t.Fatalf("Body is a %T, whose size can be learnt", r)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil || n != 3<<20+7 {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: %d, %v", n, err)
	}
	a, _ := io.ReadAll(Body(1 << 20))
	if !bytes.Equal(a, bodyBlock) || bytes.Equal(a[:1024], a[1024:2048]) {
		t.Error("the body is not the random block")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "64MiB": 64 << 20, "512KiB": 512 << 10, "1000": 1000, " 8 MiB ": 8 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1TB", "x"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestQuantile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i + 1)
	}
	if q := quantile(ds, 0.99); q != 99 {
		t.Errorf("p99 of 1..100 = %v", q)
	}
	if q := quantile(ds[:9], 0.99); q != 9 {
		t.Errorf("p99 of 1..9 = %v, want the largest", q)
	}
	if q := quantile(ds[:4], 0.5); q != 2 {
		t.Errorf("p50 of 1..4 = %v", q)
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing")
	}
}

// TestInterleaveStreamsMem runs the streaming pair on the in-memory driver,
// through a lease on both sides: the alternation, fresh keys, the clean-up
// and the heap sampler (which must see the parts' buffers).
func TestInterleaveStreamsMem(t *testing.T) {
	b := mem.New()
	var order []string
	side := func(name string, op StreamOp) StreamOp {
		return func(ctx context.Context, key string, r io.Reader) error {
			order = append(order, name+":"+key)
			return op(ctx, key, r)
		}
	}
	p := fencedPair(t, "mem", b, driver.MinPartSize, 2, func(ctx context.Context, key string, r io.Reader) error {
		_, err := b.PutStream(ctx, key, r, driver.PutOptions{If: driver.IfAbsent()}, streamOpts(driver.MinPartSize, 2))
		return err
	})
	p.Driver, p.Raw = side("d", p.Driver), side("r", p.Raw)
	res, err := InterleaveStreams(t.Context(), p, 2, 3*driver.MinPartSize)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"d:d-stream/0001", "r:r-stream/0002", "r:r-stream/0003", "d:d-stream/0004"}
	if len(order) != 4 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] || order[3] != want[3] {
		t.Errorf("calls %v, want %v", order, want)
	}
	for o, err := range b.List(t.Context(), "") {
		if err != nil {
			t.Fatal(err)
		}
		if o.Key != "lease/LEASE" {
			t.Errorf("%s left behind", o.Key)
		}
	}
	if res.Rounds != 2 || res.DriverRate <= 0 || res.RawRate <= 0 || res.Ratio() <= 0 || res.PairedRatio <= 0 {
		t.Errorf("%+v", res)
	}
	if res.DriverHeap < driver.MinPartSize {
		t.Errorf("peak heap growth %d B during a write that holds parts of %d B", res.DriverHeap, driver.MinPartSize)
	}

	boom := errors.New("boom")
	p.Raw = func(context.Context, string, io.Reader) error { return boom }
	if _, err := InterleaveStreams(t.Context(), p, 3, 10); !errors.Is(err, boom) {
		t.Errorf("err %v, want boom", err)
	}
}

// TestLink sends 1 MiB each way through a Link and checks it arrives
// intact, and that the link counted it. Nothing is timed.
func TestLink(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		c, err := echo.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	l, err := StartLink(echo.Addr().String(), 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, _ := io.ReadAll(Body(1 << 20))
	go c.Write(want)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Error("the bytes changed on the link")
	}
	if up, down := l.Carried(); up != 1<<20 || down != 1<<20 {
		t.Errorf("carried %d up, %d down", up, down)
	}
	if _, err := StartLink("192.0.2.1:80", 1); err == nil {
		t.Error("a link to a host off loopback was started")
	}
}

// TestRenewUnderLoadMem runs the renewal harness for a second on the
// in-memory driver: the leases renew, none is fenced, uploads commit and
// are deleted.
func TestRenewUnderLoadMem(t *testing.T) {
	b := mem.New()
	res, err := RenewUnderLoad(t.Context(), b, "t", RenewLoad{
		TTLs: []time.Duration{3 * time.Second, 2 * time.Second}, Hold: 2 * time.Second,
		Writers: 2, Body: 2*driver.MinPartSize + 1, Offered: 256 << 20,
		Stream: driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Leases) != 2 || res.Committed == 0 {
		t.Fatalf("%+v", res)
	}
	for _, l := range res.Leases {
		if l.Spurious != 0 || l.Renewals == 0 || l.P99 <= 0 || l.P99 > l.Max {
			t.Errorf("%v", l)
		}
	}
	for o, err := range b.List(context.Background(), "t/") {
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix([]byte(o.Key), []byte("/LEASE")) {
			t.Errorf("%s left behind", o.Key)
		}
	}
}
