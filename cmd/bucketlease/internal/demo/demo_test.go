package demo

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// storyLine is one line of the demo's timeline.
type storyLine struct {
	at   time.Duration
	who  string
	what string
}

var lineRE = regexp.MustCompile(`^\s+(\d+):(\d\d)  (alpha|beta)\s+(.*)$`)

func parseStory(t *testing.T, out string) []storyLine {
	t.Helper()
	var lines []storyLine
	for _, l := range strings.Split(out, "\n") {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		mins, secs := atoi(m[1]), atoi(m[2])
		lines = append(lines, storyLine{at: time.Duration(mins*60+secs) * time.Second, who: m[3], what: m[4]})
	}
	return lines
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// find returns the index of the first line at or after from whose text
// contains what, or -1.
func find(lines []storyLine, from int, what string) int {
	for i := from; i < len(lines); i++ {
		if strings.Contains(lines[i].what, what) {
			return i
		}
	}
	return -1
}

// TestDemoStory runs the demo and checks its plot: one winner, a refusal
// naming it, a fence strictly before the takeover, a takeover no earlier
// than a TTL after the last renewal, and the old holder learning it lost.
func TestDemoStory(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	lines := parseStory(t, out.String())
	step := func(from int, what string) storyLine {
		t.Helper()
		i := find(lines, from, what)
		if i < 0 {
			t.Fatalf("the demo lacks %q after line %d:\n%s", what, from, out.String())
		}
		return lines[i]
	}
	acquired := step(0, "ACQUIRED")
	holder := acquired.who
	other := map[string]string{"alpha": "beta", "beta": "alpha"}[holder]
	refusal := step(0, "refused: the lease is held by "+holder)
	if refusal.who != other || refusal.at != 0 || acquired.at != 0 {
		t.Errorf("start: %+v then %+v; want both at 0:00, the other refused", acquired, refusal)
	}
	renewed := step(0, "renewed (a write with If-Match")
	fenced := step(0, "FENCED")
	tookOver := step(0, "TOOK OVER the lease from "+holder)
	lost := step(0, "LOST the lease")
	if fenced.who != holder || tookOver.who != other || lost.who != holder {
		t.Errorf("wrong actors: fenced %s, took over %s, lost %s; holder %s", fenced.who, tookOver.who, lost.who, holder)
	}
	if !(fenced.at < tookOver.at) {
		t.Errorf("the takeover (%v) came before the holder fenced itself (%v)", tookOver.at, fenced.at)
	}
	if tookOver.at-renewed.at < 30*time.Second {
		t.Errorf("taken over %v after the last renewal, before a whole TTL", tookOver.at-renewed.at)
	}
	if fenced.at-renewed.at != 20*time.Second {
		t.Errorf("fenced %v after the last renewal, want two thirds of the TTL (20s)", fenced.at-renewed.at)
	}
	if !(lost.at > tookOver.at) {
		t.Errorf("the old holder learnt it lost (%v) before the takeover (%v)", lost.at, tookOver.at)
	}
	iFenced, iTook := find(lines, 0, "FENCED"), find(lines, 0, "TOOK OVER")
	if iFenced > iTook {
		t.Errorf("the story tells the takeover before the fence")
	}
	if !strings.Contains(out.String(), "Renew returned lease.ErrLost") {
		t.Errorf("the demo does not show Renew returning ErrLost:\n%s", out.String())
	}
	step(0, "released the lease")
}
