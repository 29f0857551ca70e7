package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRoundCases(t *testing.T) {
	c := testCluster(uniform("n", 4, 4, "a100", fullMesh(12))...)
	type want struct {
		action  Action
		devices []string
		code    ReasonCode // of the unplaced entry, if any
	}
	tests := []struct {
		name    string
		p       Chooser
		cur     []Assignment
		faults  []string
		targets []Target
		want    map[string]want
	}{
		{
			name:    "grow onto a second node within max nodes",
			cur:     []Assignment{{Job: "g", Devices: []string{"n-000/0", "n-000/1", "n-000/2"}}, {Job: "x", Devices: []string{"n-000/3"}}},
			targets: []Target{{Job: "g", Type: "a100", Count: 5, MaxNodes: 2}, {Job: "x", Type: "a100", Count: 1}},
			want: map[string]want{
				"g": {Grow, []string{"n-000/0", "n-000/1", "n-000/2", "n-001/0", "n-001/1"}, 0},
				"x": {Keep, []string{"n-000/3"}, 0},
			},
		},
		{
			name: "grow that would share with a distributed job moves instead",
			cur: []Assignment{
				{Job: "g", Devices: []string{"n-000/0", "n-000/1"}},
				{Job: "d", Devices: []string{"n-000/2", "n-000/3", "n-001/0", "n-001/1"}},
			},
			targets: []Target{{Job: "g", Type: "a100", Count: 6}, {Job: "d", Type: "a100", Count: 4}},
			want: map[string]want{
				"g": {Move, []string{"n-002/0", "n-002/1", "n-002/2", "n-002/3", "n-003/0", "n-003/1"}, 0},
				"d": {Keep, []string{"n-000/2", "n-000/3", "n-001/0", "n-001/1"}, 0},
			},
		},
		{
			name: "interference allowed: grow in place",
			p:    Chooser{AllowInterference: true},
			cur: []Assignment{
				{Job: "g", Devices: []string{"n-000/0", "n-000/1"}},
				{Job: "d", Devices: []string{"n-000/2", "n-000/3", "n-001/0", "n-001/1"}},
			},
			targets: []Target{{Job: "g", Type: "a100", Count: 6}, {Job: "d", Type: "a100", Count: 4}},
			want: map[string]want{
				"g": {Grow, []string{"n-000/0", "n-000/1", "n-002/0", "n-002/1", "n-002/2", "n-002/3"}, 0},
			},
		},
		{
			name:    "too many nodes: re-placed on one",
			cur:     []Assignment{{Job: "m", Devices: []string{"n-000/0", "n-001/0"}}},
			targets: []Target{{Job: "m", Type: "a100", Count: 2, MaxNodes: 1}},
			want:    map[string]want{"m": {Move, []string{"n-000/0", "n-000/1"}, 0}},
		},
		{
			name:    "grow that cannot fit keeps its devices",
			cur:     []Assignment{{Job: "g", Devices: []string{"n-000/0"}}, {Job: "f", Devices: []string{"n-001/0", "n-001/1", "n-001/2", "n-001/3", "n-002/0", "n-002/1", "n-002/2", "n-002/3", "n-003/0", "n-003/1", "n-003/2", "n-003/3"}}},
			targets: []Target{{Job: "g", Type: "a100", Count: 5}, {Job: "f", Type: "a100", Count: 12}},
			want:    map[string]want{"g": {Keep, []string{"n-000/0"}, ReasonCapacity}},
		},
		{
			name:    "faulty device: moved next to the healthy ones",
			cur:     []Assignment{{Job: "h", Devices: []string{"n-000/0", "n-000/1"}}},
			faults:  []string{"n-000/1"},
			targets: []Target{{Job: "h", Type: "a100", Count: 2}},
			want:    map[string]want{"h": {Move, []string{"n-000/0", "n-000/2"}, 0}},
		},
		{
			name:   "faulty device and no room: stopped",
			faults: []string{"n-000/1"},
			cur: []Assignment{{Job: "h", Devices: []string{"n-000/0", "n-000/1", "n-000/2", "n-000/3"}},
				{Job: "f", Devices: []string{"n-001/0", "n-001/1", "n-001/2", "n-001/3", "n-002/0", "n-002/1", "n-002/2", "n-002/3", "n-003/0", "n-003/1", "n-003/2", "n-003/3"}}},
			targets: []Target{{Job: "h", Type: "a100", Count: 4, MaxNodes: 1}, {Job: "f", Type: "a100", Count: 12}},
			want:    map[string]want{"h": {Stop, nil, ReasonCapacity}, "f": {Keep, nil, 0}},
		},
		{
			name: "growth in place before moves",
			cur: []Assignment{
				{Job: "g", Devices: []string{"n-000/0", "n-000/1"}},
				{Job: "r", Devices: []string{"n-002/0", "n-003/0"}},
			},
			targets: []Target{{Job: "g", Type: "a100", Count: 4}, {Job: "r", Type: "a100", Count: 2, MaxNodes: 1}},
			want: map[string]want{
				"g": {Grow, []string{"n-000/0", "n-000/1", "n-000/2", "n-000/3"}, 0},
				"r": {Move, []string{"n-001/0", "n-001/1"}, 0},
			},
		},
		{
			name:    "count zero stops",
			cur:     []Assignment{{Job: "s", Devices: []string{"n-000/0"}}},
			targets: []Target{{Job: "s", Type: "a100", Count: 0}},
			want:    map[string]want{"s": {Stop, nil, 0}},
		},
		{
			name:    "new gangs largest first",
			targets: []Target{{Job: "small", Type: "a100", Count: 1}, {Job: "big", Type: "a100", Count: 8}, {Job: "mid", Type: "a100", Count: 4}},
			want: map[string]want{
				"big":   {Start, []string{"n-000/0", "n-000/1", "n-000/2", "n-000/3", "n-001/0", "n-001/1", "n-001/2", "n-001/3"}, 0},
				"mid":   {Start, []string{"n-002/0", "n-002/1", "n-002/2", "n-002/3"}, 0},
				"small": {Start, []string{"n-003/0"}, 0},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustState(t, c, tc.cur...)
			if _, err := s.Fault(tc.faults); err != nil {
				t.Fatal(err)
			}
			res, err := tc.p.Round(s, tc.targets)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Decision{}
			for _, d := range res.Decisions {
				got[d.Job] = d
			}
			unplaced := map[string]Reason{}
			for _, u := range res.Unplaced {
				unplaced[u.Target.Job] = u.Reason
			}
			for job, w := range tc.want {
				d, ok := got[job]
				if !ok {
					t.Fatalf("%s: no decision; have %+v", job, res.Decisions)
				}
				if d.Action != w.action || (w.devices != nil && !slices.Equal(d.Devices, w.devices)) {
					t.Errorf("%s: %v %v, want %v %v (reason %+v)", job, d.Action, d.Devices, w.action, w.devices, d.Reason)
				}
				if unplaced[job].Code != w.code {
					t.Errorf("%s: unplaced code %v, want %v", job, unplaced[job].Code, w.code)
				}
			}
		})
	}
}

func TestRoundErrors(t *testing.T) {
	c := testCluster(uniform("n", 2, 4, "a100", nil)...)
	s := mustState(t, c)
	for name, tc := range map[string]struct {
		targets []Target
		want    error
	}{
		"empty job":     {[]Target{{Type: "a100", Count: 1}}, ErrInvalid},
		"repeated job":  {[]Target{{Job: "a", Type: "a100", Count: 1}, {Job: "a", Type: "a100", Count: 2}}, ErrInvalid},
		"negative":      {[]Target{{Job: "a", Type: "a100", Count: -1}}, ErrInvalid},
		"negative max":  {[]Target{{Job: "a", Type: "a100", Count: 1, MaxNodes: -2}}, ErrInvalid},
		"unknown type":  {[]Target{{Job: "a", Type: "tpu", Count: 1}}, ErrUnknownType},
		"too big":       {[]Target{{Job: "a", Type: "a100", Count: 9}}, ErrImpossible},
		"too big nodes": {[]Target{{Job: "a", Type: "a100", Count: 5, MaxNodes: 1}}, ErrImpossible},
	} {
		if _, err := Round(s, tc.targets); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
	if _, err := (&Chooser{Strategy: 7}).Round(s, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad strategy: %v", err)
	}
}

// TestRoundOrderIndependent: the order of targets does not change the
// result.
func TestRoundOrderIndependent(t *testing.T) {
	s, targets := roundInputSmall(t)
	want, err := Round(s, targets)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 5 {
		rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
		got, err := Round(s, targets)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got.Decisions, want.Decisions, func(a, b Decision) bool {
			return a.Job == b.Job && a.Action == b.Action && slices.Equal(a.Devices, b.Devices)
		}) || len(got.Unplaced) != len(want.Unplaced) {
			t.Fatal("target order changed the round")
		}
	}
}

func roundInputSmall(t *testing.T) (*State, []Target) {
	s := mustState(t, benchCluster(64))
	rng := rand.New(rand.NewPCG(1, 1))
	jobs := fill(t, s, rng, 0.7, "j")
	var targets []Target
	for _, job := range jobs {
		a, _ := s.Assignment(job)
		ty, _ := s.TypeOf(a)
		tg := Target{Job: job, Type: ty, Count: len(a.Devices)}
		if rng.IntN(4) == 0 {
			tg.Count = tg.Count*2 + 1
		}
		if s.ix.limit(s.ix.typeNum[tg.Type], &Request{Count: tg.Count}) >= tg.Count {
			targets = append(targets, tg)
		}
	}
	return s, targets
}

func TestRoundResultJSON(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "t4", 2, nil})
	s := mustState(t, c, Assignment{Job: "a", Devices: []string{"n0/0"}})
	res, err := Round(s, []Target{{Job: "a", Type: "t4", Count: 2}, {Job: "b", Type: "t4", Count: 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"decisions":[{"job":"a","action":"grow","type":"t4","devices":["n0/0","n0/1"],"previous":["n0/0"],"reason":{"code":"none"}}],"unplaced":[{"target":{"job":"b","type":"t4","count":1},"reason":{"code":"capacity","text":"0 free t4 devices, 1 asked"}}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back RoundResult
	if err := json.Unmarshal(b, &back); err != nil || back.Decisions[0].Action != Grow || back.Unplaced[0].Reason.Code != ReasonCapacity {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	var a Action
	if err := a.UnmarshalText([]byte("teleport")); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
}

// subset answers alike for short lists (compared) and long ones (a set).
func TestSubsetIDs(t *testing.T) {
	for _, n := range []int{3, 40} {
		var b []string
		for i := range n {
			b = append(b, fmt.Sprint("d", i))
		}
		a := []string{b[n-1], b[0]}
		if !subsetIDs(a, b) || !subsetIDs(b[:1], b) || subsetIDs(b, a) {
			t.Errorf("%d devices: subset wrong for a subset or a superset", n)
		}
		if subsetIDs([]string{b[0], "other"}, b) {
			t.Errorf("%d devices: a list with another device is a subset", n)
		}
	}
}

// TestActionOf: each change of devices gets its action.
func TestActionOf(t *testing.T) {
	for _, tc := range []struct {
		before, after []string
		want          Action
	}{
		{nil, nil, Queue}, {[]string{"a"}, nil, Stop}, {nil, []string{"a"}, Start},
		{[]string{"a", "b"}, []string{"b", "a"}, Keep}, {[]string{"a"}, []string{"a", "b"}, Grow},
		{[]string{"a", "b"}, []string{"b"}, Shrink}, {[]string{"a"}, []string{"b"}, Move},
	} {
		if got := ActionOf(tc.before, tc.after); got != tc.want {
			t.Errorf("%v → %v: %v, want %v", tc.before, tc.after, got, tc.want)
		}
	}
}
