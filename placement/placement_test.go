package placement

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

func mustState(t testing.TB, c accel.Cluster, cur ...Assignment) *State {
	t.Helper()
	s, err := NewState(c, cur)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlaceStrategies(t *testing.T) {
	c := testCluster(
		nodeSpec{"n0", "t4", 8, nil},
		nodeSpec{"n1", "t4", 8, nil},
		nodeSpec{"n2", "t4", 8, nil},
	)
	cur := []Assignment{
		{Job: "x", Devices: []string{"n0/0", "n0/1", "n0/2", "n0/3", "n0/4", "n0/5"}}, // n0: 2 free
		{Job: "y", Devices: []string{"n1/0", "n1/1", "n1/2"}},                         // n1: 5 free
	}
	tests := []struct {
		name  string
		p     Chooser
		r     Request
		want  []string
		nodes int
	}{
		{"pack tightest", Chooser{}, Request{Job: "j", Count: 2}, []string{"n0/6", "n0/7"}, 1},
		{"best-fit tightest", Chooser{Strategy: BestFit}, Request{Job: "j", Count: 4}, []string{"n1/3", "n1/4", "n1/5", "n1/6"}, 1},
		{"spread most free", Chooser{Strategy: Spread}, Request{Job: "j", Count: 2}, []string{"n2/0", "n2/1"}, 1},
		{"pack multi whole node first", Chooser{}, Request{Job: "j", Count: 10}, []string{"n0/6", "n0/7", "n2/0", "n2/1", "n2/2", "n2/3", "n2/4", "n2/5", "n2/6", "n2/7"}, 2},
		{"best-fit multi fragments first", Chooser{Strategy: BestFit}, Request{Job: "j", Count: 9}, []string{"n0/6", "n0/7", "n1/3", "n1/4", "n1/5", "n1/6", "n1/7", "n2/0", "n2/1"}, 3},
		{"pack multi", Chooser{}, Request{Job: "j", Count: 9}, []string{"n0/6", "n2/0", "n2/1", "n2/2", "n2/3", "n2/4", "n2/5", "n2/6", "n2/7"}, 2},
		{"filter", Chooser{Filters: []Filter{ExcludeNodes("n0")}}, Request{Job: "j", Count: 2}, []string{"n1/3", "n1/4"}, 1},
		{"score", Chooser{Scores: []Score{ScoreFunc{"prefer-n2", func(_ *Request, n NodeInfo, _ int) int64 {
			if n.Name == "n2" {
				return 100
			}
			return 0
		}}}}, Request{Job: "j", Count: 2}, []string{"n2/0", "n2/1"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustState(t, c, cur...)
			a, err := tc.p.Place(s, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Devices, tc.want) {
				t.Fatalf("got %v, want %v", a.Devices, tc.want)
			}
		})
	}
}

func TestPlaceNVLink(t *testing.T) {
	c := testCluster(nodeSpec{"dgx1", "v100", 8, cubeMesh})
	s := mustState(t, c, Assignment{Job: "x", Devices: []string{"dgx1/0", "dgx1/1"}})
	var p Chooser
	a, err := p.Place(s, Request{Job: "j", Count: 4})
	if err != nil {
		t.Fatal(err)
	}
	// The free quad 4..7 is fully linked; 2,3 plus two others is not.
	if want := []string{"dgx1/4", "dgx1/5", "dgx1/6", "dgx1/7"}; !slices.Equal(a.Devices, want) {
		t.Fatalf("got %v, want %v", a.Devices, want)
	}
}

func TestPlaceIslandNUMA(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "a10", 8, pairs}, nodeSpec{"n1", "a10", 8, pairs})
	s := mustState(t, c, Assignment{Job: "x", Devices: []string{"n0/0", "n0/3", "n1/1"}})
	var p Chooser
	a, err := p.Place(s, Request{Job: "j", Count: 2, SameIsland: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"n0/4", "n0/5"}; !slices.Equal(a.Devices, want) {
		t.Fatalf("island: got %v, want %v", a.Devices, want)
	}
	_, err = p.Place(s, Request{Job: "j", Count: 3, SameIsland: true})
	if !errors.Is(err, ErrImpossible) {
		t.Fatalf("island of 3 on pairs: got %v, want ErrImpossible", err)
	}
	a, err = p.Place(s, Request{Job: "j", Count: 4, SameNUMA: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"n0/4", "n0/5", "n0/6", "n0/7"}; !slices.Equal(a.Devices, want) {
		t.Fatalf("numa: got %v, want %v", a.Devices, want)
	}
}

func TestPlaceInterference(t *testing.T) {
	c := testCluster(uniform("n", 4, 4, "t4", nil)...)
	cur := []Assignment{{Job: "d", Devices: []string{"n-000/0", "n-001/0"}}} // distributed
	var nf *NoFitError
	s := mustState(t, c, cur...)
	var p Chooser
	// 8 devices need two whole nodes without d: n-002, n-003.
	a, err := p.Place(s, Request{Job: "j", Count: 8})
	if err != nil || !slices.Equal(a.Devices, []string{"n-002/0", "n-002/1", "n-002/2", "n-002/3", "n-003/0", "n-003/1", "n-003/2", "n-003/3"}) {
		t.Fatalf("got %v, %v", a.Devices, err)
	}
	// 10 would need a node shared with d.
	_, err = p.Place(s, Request{Job: "j", Count: 10})
	if !errors.As(err, &nf) || nf.Reason.Code != ReasonInterference {
		t.Fatalf("got %v, want interference", err)
	}
	if _, err := (&Chooser{AllowInterference: true}).Place(s, Request{Job: "j", Count: 10}); err != nil {
		t.Fatalf("avoidance off: %v", err)
	}
	// Single-node jobs may share a node with a distributed one.
	if _, err := p.Place(s, Request{Job: "j", Count: 3, MaxNodes: 1, Types: []accel.TypeKey{"t4"}}); err != nil {
		t.Fatal(err)
	}
}

func TestPlaceHeterogeneous(t *testing.T) {
	c := testCluster(nodeSpec{"a", "a100", 4, nil}, nodeSpec{"h", "h100", 4, nil}, nodeSpec{"t", "t4", 4, nil})
	s := mustState(t, c, Assignment{Job: "x", Devices: []string{"h/0"}})
	var p Chooser
	r := Request{Job: "j", Count: 4, Values: map[accel.TypeKey]float64{"h100": 3, "a100": 2, "t4": 1}}
	a, err := p.Place(s, r)
	if err != nil {
		t.Fatal(err)
	}
	if ty, _ := s.TypeOf(a); ty != "a100" {
		t.Fatalf("got %v (%s), want a100 (h100 has only 3 free)", a.Devices, ty)
	}
	r.Count = 3
	a, _ = p.Place(s, r)
	if ty, _ := s.TypeOf(a); ty != "h100" {
		t.Fatalf("got %v (%s), want h100", a.Devices, ty)
	}
	// Without values, Types order ranks.
	r.Values, r.Types = nil, []accel.TypeKey{"t4", "a100"}
	a, _ = p.Place(s, r)
	if ty, _ := s.TypeOf(a); ty != "t4" {
		t.Fatalf("got %v (%s), want t4", a.Devices, ty)
	}
}

func TestPlaceErrors(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "t4", 4, pairs}, nodeSpec{"n1", "t4", 4, pairs})
	s := mustState(t, c, Assignment{Job: "x", Devices: []string{"n0/0", "n0/1", "n0/2", "n1/0", "n1/1", "n1/2"}})
	var p Chooser
	tests := []struct {
		name string
		r    Request
		want error
		code ReasonCode
	}{
		{"empty job", Request{Count: 1}, ErrInvalid, 0},
		{"zero count", Request{Job: "j"}, ErrInvalid, 0},
		{"negative count", Request{Job: "j", Count: -3}, ErrInvalid, 0},
		{"negative max nodes", Request{Job: "j", Count: 1, MaxNodes: -1}, ErrInvalid, 0},
		{"unknown type", Request{Job: "j", Count: 1, Types: []accel.TypeKey{"tpu"}}, ErrUnknownType, 0},
		{"repeated type", Request{Job: "j", Count: 1, Types: []accel.TypeKey{"t4", "t4"}}, ErrInvalid, 0},
		{"infinite value", Request{Job: "j", Count: 1, Types: []accel.TypeKey{"t4"}, Values: map[accel.TypeKey]float64{"v100": math.Inf(1)}}, ErrInvalid, 0},
		{"nan value", Request{Job: "j", Count: 1, Values: map[accel.TypeKey]float64{"t4": nan()}}, ErrInvalid, 0},
		{"single node and max nodes", Request{Job: "j", Count: 1, SingleNode: true, MaxNodes: 2}, ErrImpossible, 0},
		{"single node too big", Request{Job: "j", Count: 5, SingleNode: true}, ErrImpossible, 0},
		{"bigger than cluster", Request{Job: "j", Count: 9}, ErrImpossible, 0},
		{"island too big", Request{Job: "j", Count: 3, SameIsland: true}, ErrImpossible, 0},
		{"no capacity", Request{Job: "j", Count: 3}, ErrNoFit, ReasonCapacity},
		{"fragmented", Request{Job: "j", Count: 2, MaxNodes: 1}, ErrNoFit, ReasonFragmented},
		{"topology", Request{Job: "j", Count: 2, SameIsland: true}, ErrNoFit, ReasonFragmented},
		{"fragmented multi", Request{Job: "j", Count: 5, MaxNodes: 1}, ErrImpossible, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Place(s, tc.r)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var nf *NoFitError
			if tc.code != 0 && (!errors.As(err, &nf) || nf.Reason.Code != tc.code) {
				t.Fatalf("got %v, want code %v", err, tc.code)
			}
		})
	}
}

func TestStateErrors(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "t4", 2, nil})
	for name, cur := range map[string][]Assignment{
		"unknown device": {{Job: "a", Devices: []string{"n9/0"}}},
		"shared device":  {{Job: "a", Devices: []string{"n0/0"}}, {Job: "b", Devices: []string{"n0/0"}}},
		"repeated job":   {{Job: "a", Devices: []string{"n0/0"}}, {Job: "a", Devices: []string{"n0/1"}}},
		"empty job":      {{Devices: []string{"n0/0"}}},
		"repeat device":  {{Job: "a", Devices: []string{"n0/0", "n0/0"}}},
	} {
		if _, err := NewState(c, cur); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	bad := testCluster(nodeSpec{"n0", "t4", 2, nil}, nodeSpec{"n0", "t4", 2, nil})
	if _, err := NewState(bad, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("duplicate node: %v", err)
	}
}

func TestFaultAndHealth(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "t4", 4, nil})
	c.Nodes[0].Devices[3].Healthy = false
	s := mustState(t, c, Assignment{Job: "a", Devices: []string{"n0/0", "n0/1"}})
	if got := s.Free("t4"); got != 1 {
		t.Fatalf("free = %d, want 1 (one unhealthy)", got)
	}
	if err := s.Assign(Assignment{Job: "b", Devices: []string{"n0/3"}}); !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("assign unhealthy: %v", err)
	}
	jobs, err := s.Fault([]string{"n0/1", "n0/2"})
	if err != nil || !slices.Equal(jobs, []string{"a"}) {
		t.Fatalf("fault: %v %v", jobs, err)
	}
	if s.Free("t4") != 0 {
		t.Fatalf("free after fault = %d", s.Free("t4"))
	}
	if _, err := s.Fault([]string{"zz"}); !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("unknown fault: %v", err)
	}
	jobs, _ = s.ApplyHealth(accel.HealthEvent{Device: "n0/0", Kind: accel.HealthXid, Xid: 79, Critical: true})
	if !slices.Equal(jobs, []string{"a"}) {
		t.Fatalf("health event: %v", jobs)
	}
	if _, err := s.ApplyHealth(accel.HealthEvent{Device: "n0/2", Kind: accel.HealthRecovered}); err != nil || s.Free("t4") != 1 {
		t.Fatalf("recover: %v, free %d", err, s.Free("t4"))
	}
	// A round moves "a" off its faulty devices.
	res, err := Round(s, []Target{{Job: "a", Type: "t4", Count: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Decisions) != 1 || res.Decisions[0].Action != Move || !slices.Equal(res.Decisions[0].Devices, []string{"n0/2"}) {
		t.Fatalf("decisions %+v", res.Decisions)
	}
}

func TestClone(t *testing.T) {
	c := testCluster(uniform("n", 3, 4, "t4", nil)...)
	s := mustState(t, c)
	if err := s.Assign(Assignment{Job: "a", Devices: []string{"n-000/0"}}); err != nil {
		t.Fatal(err)
	}
	k := s.Clone()
	if err := k.Assign(Assignment{Job: "b", Devices: []string{"n-000/1", "n-001/0"}}); err != nil {
		t.Fatal(err)
	}
	k.Release("a")
	if _, err := k.Fault([]string{"n-002/0"}); err != nil {
		t.Fatal(err)
	}
	if s.Free("t4") != 11 || k.Free("t4") != 9 {
		t.Fatalf("free s=%d k=%d", s.Free("t4"), k.Free("t4"))
	}
	if o, _ := s.Owner("n-000/0"); o != "a" {
		t.Fatalf("original lost a: %q", o)
	}
	if _, ok := s.Owner("n-000/1"); ok {
		t.Fatal("original sees the clone's write")
	}
	if !s.Healthy("n-002/0") || k.Healthy("n-002/0") {
		t.Fatal("health leaked between clones")
	}
	// Writing the original after the clone leaves the clone alone.
	if err := s.Assign(Assignment{Job: "c", Devices: []string{"n-001/3"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.Owner("n-001/3"); ok {
		t.Fatal("clone sees the original's write")
	}
}

func TestRoundActions(t *testing.T) {
	c := testCluster(uniform("n", 4, 8, "a100", fullMesh(12))...)
	c.Nodes = append(c.Nodes, testCluster(nodeSpec{"v", "v100", 8, cubeMesh}).Nodes...)
	cur := []Assignment{
		{Job: "keep", Devices: []string{"n-000/0", "n-000/1"}},
		{Job: "grow", Devices: []string{"n-000/2", "n-000/3"}},
		{Job: "shrink", Devices: []string{"n-001/0", "n-001/1", "n-001/2", "n-002/0"}},
		{Job: "retype", Devices: []string{"n-003/0"}},
		{Job: "stop", Devices: []string{"n-003/1"}},
	}
	s := mustState(t, c, cur...)
	targets := []Target{
		{Job: "keep", Type: "a100", Count: 2},
		{Job: "grow", Type: "a100", Count: 4},
		{Job: "shrink", Type: "a100", Count: 3},
		{Job: "retype", Type: "v100", Count: 4},
		{Job: "new", Type: "a100", Count: 8},
		{Job: "huge", Type: "v100", Count: 8},
	}
	res, err := Round(s, targets)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Action{"keep": Keep, "grow": Grow, "shrink": Shrink, "retype": Move, "stop": Stop, "new": Start}
	for _, d := range res.Decisions {
		if want[d.Job] != d.Action {
			t.Errorf("%s: %v, want %v (%v -> %v)", d.Job, d.Action, want[d.Job], d.Previous, d.Devices)
		}
		delete(want, d.Job)
	}
	if len(want) > 0 {
		t.Errorf("missing decisions %v", want)
	}
	if len(res.Unplaced) != 1 || res.Unplaced[0].Target.Job != "huge" || res.Unplaced[0].Reason.Code != ReasonCapacity {
		t.Errorf("unplaced %+v", res.Unplaced)
	}
	grow, _ := res.State.Assignment("grow")
	if !slices.Equal(grow.Devices, []string{"n-000/2", "n-000/3", "n-000/4", "n-000/5"}) {
		t.Errorf("grow: %v", grow.Devices)
	}
	sh, _ := res.State.Assignment("shrink")
	if !slices.Equal(sh.Devices, []string{"n-001/0", "n-001/1", "n-001/2"}) {
		t.Errorf("shrink: %v", sh.Devices)
	}
	if _, ok := s.Assignment("new"); ok {
		t.Error("round changed its input state")
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestZeroState(t *testing.T) {
	var p Chooser
	for _, s := range []*State{nil, {}} {
		if _, err := p.Place(s, Request{Job: "j", Count: 1}); !errors.Is(err, ErrInvalid) {
			t.Errorf("place: %v", err)
		}
		if _, err := p.Round(s, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("round: %v", err)
		}
		if err := s.Assign(Assignment{Job: "j", Devices: []string{"x"}}); !errors.Is(err, ErrInvalid) {
			t.Errorf("assign: %v", err)
		}
		if _, err := s.Fault([]string{"x"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("fault: %v", err)
		}
		if s.Free("t4") != 0 || s.Release("j") || s.Fragmentation() != nil || s.Clone() == nil {
			t.Error("zero state reads")
		}
	}
}

func TestAffected(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "t4", 4, nil})
	s := mustState(t, c, Assignment{Job: "b", Devices: []string{"n0/2"}}, Assignment{Job: "a", Devices: []string{"n0/0", "n0/1"}})
	jobs, err := s.Affected([]string{"n0/2", "n0/1", "n0/0", "n0/3"})
	if err != nil || !slices.Equal(jobs, []string{"a", "b"}) {
		t.Fatalf("%v %v", jobs, err)
	}
	if !s.Healthy("n0/0") {
		t.Fatal("Affected changed health")
	}
	if _, err := s.Affected([]string{"n9/9"}); !errors.Is(err, ErrUnknownDevice) {
		t.Fatal(err)
	}
}

func TestMIGParentNotOffered(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "a100", 4, nil})
	c.Nodes[0].Devices[1].MIGEnabled = true
	s := mustState(t, c)
	if s.Free("a100") != 3 || s.Capacity("a100") != 3 {
		t.Fatalf("free %d capacity %d, want 3", s.Free("a100"), s.Capacity("a100"))
	}
	a, err := (&Chooser{}).Place(s, Request{Job: "j", Count: 3})
	if err != nil || slices.Contains(a.Devices, "n0/1") {
		t.Fatalf("%v %v", a, err)
	}
	if err := s.Assign(Assignment{Job: "j", Devices: []string{"n0/1"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("assign MIG parent: %v", err)
	}
}

func TestReleaseDevices(t *testing.T) {
	c := testCluster(uniform("n", 3, 2, "t4", nil)...)
	s := mustState(t, c,
		Assignment{Job: "d", Devices: []string{"n-000/0", "n-001/0"}},
		Assignment{Job: "e", Devices: []string{"n-002/0"}})
	var p Chooser
	// d is distributed, so a 3-device gang cannot use n-000 or n-001.
	if _, err := p.Place(s, Request{Job: "x", Count: 3}); !errors.Is(err, ErrNoFit) {
		t.Fatalf("want no fit, got %v", err)
	}
	if err := s.ReleaseDevices("d", []string{"n-002/0"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("release other's device: %v", err)
	}
	if err := s.ReleaseDevices("d", []string{"zz"}); !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("release unknown device: %v", err)
	}
	if err := s.ReleaseDevices("d", []string{"n-001/0"}); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Assignment("d"); !slices.Equal(a.Devices, []string{"n-000/0"}) {
		t.Fatalf("d = %v", a.Devices)
	}
	// d is single-node now: its node is open to distributed gangs again.
	if a, err := p.Place(s, Request{Job: "x", Count: 3}); err != nil || !slices.Equal(a.Devices, []string{"n-000/1", "n-001/0", "n-001/1"}) {
		t.Fatalf("after release: %v %v", a.Devices, err)
	}
	if err := s.ReleaseDevices("d", []string{"n-000/0"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Assignment("d"); ok {
		t.Fatal("d still listed with no devices")
	}
	checkInvariants(t, c, s)
}

func TestSparseIndicesAndLinks(t *testing.T) {
	n := accel.Node{Name: "n0"}
	for _, i := range []int{1, 4, 6, 9} {
		n.Devices = append(n.Devices, accel.Device{ID: fmt.Sprintf("n0/%d", i), Node: "n0", Index: i, Type: "a10", NUMANode: 0, Healthy: true})
	}
	n.Links = []accel.Link{{A: 4, B: 9, NVLinks: 4}, {A: 1, B: 6, NVLinks: 1}}
	c := accel.Cluster{Nodes: []accel.Node{n}}
	s := mustState(t, c)
	var p Chooser
	a, err := p.Place(s, Request{Job: "j", Count: 2, SameIsland: true})
	if err != nil || !slices.Equal(a.Devices, []string{"n0/1", "n0/6"}) {
		t.Fatalf("%v %v", a.Devices, err)
	}
	a, err = p.Place(s, Request{Job: "j", Count: 2})
	if err != nil || !slices.Equal(a.Devices, []string{"n0/4", "n0/9"}) {
		t.Fatalf("most NVLink lanes: %v %v", a.Devices, err)
	}
	c.Nodes[0].Links = append(c.Nodes[0].Links, accel.Link{A: 4, B: 5, NVLinks: 1})
	if _, err := NewState(c, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("link to a missing index: %v", err)
	}
}

func TestFragmentationInterference(t *testing.T) {
	c := testCluster(uniform("n", 3, 4, "t4", nil)...)
	s := mustState(t, c,
		Assignment{Job: "d", Devices: []string{"n-000/0", "n-001/0"}},
		Assignment{Job: "e", Devices: []string{"n-002/0"}})
	f := s.Fragmentation()[0]
	want := Fragmentation{Type: "t4", Capacity: 12, Free: 9, Used: 3, LargestNodeGang: 3, LargestGang: 3, PartlyUsedNodes: 3}
	if f != want {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
}

func TestNames(t *testing.T) {
	if Pack.String() != "pack" || BestFit.String() != "best-fit" || Spread.String() != "spread" || Strategy(9).String() != "unknown" {
		t.Error("strategy names")
	}
	if ReasonInterference.String() != "interference" || ReasonCode(99).String() != "unknown" || Action(99).String() != "unknown" {
		t.Error("code names")
	}
	if _, err := ReasonCode(99).MarshalText(); !errors.Is(err, ErrInvalid) {
		t.Error("marshal unknown code")
	}
	err := error(&NoFitError{Job: "j", Reason: Reason{ReasonCapacity, "2 free t4 devices, 4 asked"}})
	if err.Error() != `placement: job "j" does not fit: capacity: 2 free t4 devices, 4 asked` {
		t.Errorf("error text %q", err.Error())
	}
	if f := ExcludeNodes("a"); f.Name() != "exclude-nodes" || f.Filter(nil, NodeInfo{Name: "a"}) || !f.Filter(nil, NodeInfo{Name: "b"}) {
		t.Error("exclude nodes")
	}
	if (ScoreFunc{Label: "s"}).Score(nil, NodeInfo{}, 1) != 0 || (ScoreFunc{Label: "s"}).Name() != "s" || !(FilterFunc{}).Filter(nil, NodeInfo{}) {
		t.Error("nil funcs")
	}
}

func TestEmptyAssignments(t *testing.T) {
	c := testCluster(nodeSpec{"n0", "t4", 2, nil})
	s := mustState(t, c, Assignment{Job: "idle"})
	if _, ok := s.Assignment("idle"); ok || len(s.Assignments()) != 0 {
		t.Fatal("a job with no devices is listed")
	}
	if err := s.Assign(Assignment{Job: "x"}); err != nil {
		t.Fatal(err)
	}
	if len(s.Assignments()) != 0 || s.Free("t4") != 2 {
		t.Fatal("empty assign changed the state")
	}
}

func TestNoFitTextNamesTypes(t *testing.T) {
	c := testCluster(nodeSpec{"a", "a100", 2, nil}, nodeSpec{"h", "h100", 2, nil})
	s := mustState(t, c, Assignment{Job: "x", Devices: []string{"a/0", "h/0"}})
	_, err := (&Chooser{}).Place(s, Request{Job: "j", Count: 2, Types: []accel.TypeKey{"h100", "a100"}})
	var nf *NoFitError
	if !errors.As(err, &nf) || nf.Reason.Code != ReasonCapacity ||
		nf.Reason.Text != "h100: 1 free h100 devices, 2 asked; a100: 1 free a100 devices, 2 asked" {
		t.Fatalf("%v", err)
	}
}
