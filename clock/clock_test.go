package clock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestFakeFiresTimersInOrderAtTheirTimes(t *testing.T) {
	c := clock.NewFake(t0)
	start := c.Mono()
	var fired []time.Duration
	var walls []time.Time
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		c.AfterFunc(d, func() {
			fired = append(fired, c.Mono()-start)
			walls = append(walls, c.Wall())
		})
	}
	c.Advance(2500 * time.Millisecond)
	if len(fired) != 2 || fired[0] != time.Second || fired[1] != 2*time.Second {
		t.Fatalf("fired at %v", fired)
	}
	if !walls[0].Equal(t0.Add(time.Second)) {
		t.Fatalf("wall clock at the first timer: %v", walls[0])
	}
	c.Advance(time.Second)
	if len(fired) != 3 || c.Timers() != 0 {
		t.Fatalf("fired at %v, %d left", fired, c.Timers())
	}
}

func TestFakeStop(t *testing.T) {
	c := clock.NewFake(t0)
	ran := false
	stop := c.AfterFunc(time.Second, func() { ran = true })
	if !stop() || stop() {
		t.Fatal("stop should report true once")
	}
	c.Advance(time.Hour)
	if ran {
		t.Fatal("a stopped timer ran")
	}
}

func TestFakeClocksMoveSeparately(t *testing.T) {
	c := clock.NewFake(t0)
	ran := false
	c.AfterFunc(time.Second, func() { ran = true })
	mono := c.Mono()
	c.AdvanceWall(time.Hour) // a suspended machine: wall moves, monotonic does not
	if ran || c.Mono() != mono || !c.Wall().Equal(t0.Add(time.Hour)) {
		t.Fatalf("AdvanceWall: ran=%v mono moved %v wall %v", ran, c.Mono()-mono, c.Wall())
	}
	c.AdvanceWall(-2 * time.Hour)
	if !c.Wall().Equal(t0.Add(-time.Hour)) {
		t.Fatalf("a backward step: wall %v", c.Wall())
	}
	c.AdvanceMono(time.Second)
	if !ran || !c.Wall().Equal(t0.Add(-time.Hour)) {
		t.Fatalf("AdvanceMono: ran=%v wall %v", ran, c.Wall())
	}
}

func TestTimerScheduledByATimerFires(t *testing.T) {
	c := clock.NewFake(t0)
	n := 0
	var tick func()
	tick = func() {
		n++
		c.AfterFunc(time.Second, tick)
	}
	c.AfterFunc(time.Second, tick)
	c.Advance(10 * time.Second)
	if n != 10 {
		t.Fatalf("a self-rearming timer fired %d times in 10 s, want 10", n)
	}
}

func TestSleep(t *testing.T) {
	c := clock.NewFake(t0)
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), c, time.Minute) }()
	for c.Timers() == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, c, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with a cancelled context: %v", err)
	}
	if c.Timers() != 0 {
		t.Fatal("a cancelled Sleep left its timer behind")
	}
}

func TestSystem(t *testing.T) {
	var c clock.System
	m1 := c.Mono()
	if err := clock.Sleep(context.Background(), c, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if c.Mono() <= m1 {
		t.Fatal("the monotonic clock did not advance")
	}
	if w := c.Wall(); w.Round(0) != w {
		t.Fatal("Wall carries a monotonic reading")
	}
}

func TestFakeClockPanicsOnARunawayTimer(t *testing.T) {
	c := clock.NewFake(time.Unix(0, 0))
	var rearm func()
	rearm = func() { c.AfterFunc(0, rearm) } // never lets the clock move
	c.AfterFunc(time.Second, rearm)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "re-arming itself") {
			t.Fatalf("a runaway timer: recovered %v, want a panic that names the cause", r)
		}
	}()
	c.Advance(2 * time.Second)
}

func TestOffsetMovesOnlyTheWallClock(t *testing.T) {
	f := clock.NewFake(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	o := clock.Offset{Clock: f, D: time.Hour}
	if got, want := o.Wall(), f.Wall().Add(time.Hour); !got.Equal(want) {
		t.Fatalf("Wall = %v, want %v", got, want)
	}
	f.Advance(time.Second)
	if o.Mono() != f.Mono() {
		t.Fatalf("Mono = %v, want %v", o.Mono(), f.Mono())
	}
	fired := make(chan struct{})
	o.AfterFunc(time.Second, func() { close(fired) })
	f.Advance(time.Second)
	<-fired
}
