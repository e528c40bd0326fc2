package register

import "testing"

// ops: a tiny history. Each op is [call, return].
func TestCheck(t *testing.T) {
	put := func(c int, cond, ver, body string, call, ret int64, st, out string) Op {
		return Op{Client: c, Kind: Put, Cond: cond, Ver: ver, Body: body, Call: call, Return: ret, Status: st, OutVer: out}
	}
	get := func(c int, call, ret int64, st, ver, body string) Op {
		return Op{Client: c, Kind: Get, Call: call, Return: ret, Status: st, OutVer: ver, OutBody: body}
	}
	cases := []struct {
		name string
		ops  []Op
		want bool
	}{
		{"create, renew, read", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(0, Match, "v1", "b", 3, 4, OK, `"v2"`),
			get(1, 5, 6, OK, "v2", "b"),
		}, true},
		{"a refused create over an existing object", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(1, Absent, "", "b", 3, 4, Refused, ""),
			get(1, 5, 6, OK, "v1", "a"),
		}, true},
		{"a refusal reported as a success", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(1, Absent, "", "b", 3, 4, OK, "lie"),
			get(0, 5, 6, OK, "v1", "a"),
		}, false},
		{"a write that landed reported as refused", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(1, Match, "v1", "b", 3, 4, Refused, ""),
			get(0, 5, 6, OK, "v2", "b"),
		}, false},
		{"a lost answer: the write landed", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(1, Match, "v1", "b", 3, 4, Unknown, ""),
			get(0, 5, 6, OK, "v2", "b"),
			put(0, Match, "v2", "c", 7, 8, OK, "v3"),
		}, true},
		{"a lost answer: the write did not land", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(1, Match, "v1", "b", 3, 4, Unknown, ""),
			get(0, 5, 6, OK, "v1", "a"),
		}, true},
		{"a stale read after a newer one", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(0, Match, "v1", "b", 3, 4, OK, "v2"),
			get(1, 5, 6, OK, "v1", "a"),
		}, false},
		{"concurrent: the read may come first", []Op{
			put(0, Absent, "", "a", 1, 2, OK, "v1"),
			put(0, Match, "v1", "b", 3, 10, OK, "v2"),
			get(1, 4, 6, OK, "v1", "a"),
		}, true},
	}
	for _, c := range cases {
		if r := Check(c.ops, 0); r.Linearizable != c.want {
			t.Errorf("%s: linearizable %v, want %v", c.name, r.Linearizable, c.want)
		}
	}
}
