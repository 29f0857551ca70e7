package placement

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// nodeSpeeds slows every device of the named nodes down by a factor.
type nodeSpeeds map[string]float64

func (s nodeSpeeds) Slowdown(_, device string) float64 {
	if f, ok := s[device[:strings.IndexByte(device, '/')]]; ok {
		return f
	}
	return 1
}
func (nodeSpeeds) LocalityPenalty(string) float64 { return 1 }

func placeWithSpeeds(t *testing.T, sp Speeds, cur []Assignment, targets ...Target) map[string][]string {
	t.Helper()
	return placeOn(t, 3, sp, cur, targets...)
}

// placeOn places the targets with RoundPlacer on nodes nodes of 4 T4.
func placeOn(t *testing.T, nodes int, sp Speeds, cur []Assignment, targets ...Target) map[string][]string {
	t.Helper()
	c, err := accel.ParseSpec(fmt.Sprintf("%dx4:t4", nodes))
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := x.NewState(cur)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RoundPlacer{}.Place(context.Background(), PlaceInput{Cluster: x, Current: cur, State: st, Targets: targets, Speeds: sp})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unplaced) > 0 {
		t.Fatalf("unplaced %v", res.Unplaced)
	}
	out := map[string][]string{}
	for _, a := range res.Assignments {
		if isHeldBack(a.Job) {
			t.Fatalf("held-back job %q in the result", a.Job)
		}
		out[a.Job] = a.Devices
	}
	return out
}

func onNode(devs []string, node string) bool {
	for _, d := range devs {
		if !strings.HasPrefix(d, node+"/") {
			return false
		}
	}
	return len(devs) > 0
}

// TestRoundPlacerSpeeds: with speed data the default placer puts a new
// gang on fast devices, moves a gang off a node that became 2× slower
// when there is room, leaves one on a node 10% slower, and still uses a
// slow node when the round needs every device.
func TestRoundPlacerSpeeds(t *testing.T) {
	const n0, n1, n2 = "t4-0", "t4-1", "t4-2"
	// Blind, the packer fills node 0 first; node 0 is 2× slower.
	blind := placeWithSpeeds(t, nil, nil, Target{Job: "a", Type: "t4", Count: 2})
	if !onNode(blind["a"], n0) {
		t.Fatalf("blind: a on %v, want node 0 (the test assumes the packer's order)", blind["a"])
	}
	got := placeWithSpeeds(t, nodeSpeeds{n0: 2}, nil, Target{Job: "a", Type: "t4", Count: 2})
	if onNode(got["a"], n0) || len(got["a"]) != 2 {
		t.Errorf("new gang on %v, want off the slow node 0", got["a"])
	}
	// A running gang on node 0 when it becomes 2× slower moves; at 1.1×
	// it stays.
	cur := []Assignment{{Job: "r", Devices: []string{n0 + "/0", n0 + "/1"}}}
	got = placeWithSpeeds(t, nodeSpeeds{n0: 2}, cur, Target{Job: "r", Type: "t4", Count: 2})
	if onNode(got["r"], n0) {
		t.Errorf("gang on a 2× slower node kept %v", got["r"])
	}
	got = placeWithSpeeds(t, nodeSpeeds{n0: 1.1}, cur, Target{Job: "r", Type: "t4", Count: 2})
	if !slices.Equal(got["r"], cur[0].Devices) {
		t.Errorf("gang on a 1.1× slower node moved to %v", got["r"])
	}
	// Every device needed: the slow node is used, nothing is left out.
	got = placeWithSpeeds(t, nodeSpeeds{n1: 2}, nil, Target{Job: "a", Type: "t4", Count: 4}, Target{Job: "b", Type: "t4", Count: 4}, Target{Job: "c", Type: "t4", Count: 4})
	if len(got) != 3 {
		t.Errorf("full cluster: %v", got)
	}
	// Eight of twelve needed: the slow node is left free.
	got = placeWithSpeeds(t, nodeSpeeds{n1: 2}, nil, Target{Job: "a", Type: "t4", Count: 4}, Target{Job: "b", Type: "t4", Count: 4})
	if !onNode(got["a"], n0) && !onNode(got["a"], n2) || !onNode(got["b"], n0) && !onNode(got["b"], n2) {
		t.Errorf("a on %v, b on %v: want nodes 0 and 2", got["a"], got["b"])
	}
	// No move when the devices it would leave cannot all be held back:
	// eight of twelve devices needed, the gang on slow node 0.
	cur = []Assignment{{Job: "r", Devices: []string{n0 + "/0", n0 + "/1", n0 + "/2", n0 + "/3"}}}
	got = placeWithSpeeds(t, nodeSpeeds{n0: 2, n1: 2}, cur, Target{Job: "r", Type: "t4", Count: 4}, Target{Job: "b", Type: "t4", Count: 4})
	if !slices.Equal(got["r"], cur[0].Devices) || !onNode(got["b"], n2) {
		t.Errorf("r on %v (want kept), b on %v (want node 2)", got["r"], got["b"])
	}
	// A gang of 8 half on a 2× slower node, a gang of 2 on a fast one and
	// 2 devices free: they swap, the small gang takes the slow node.
	cur = []Assignment{
		{Job: "g", Devices: []string{n0 + "/0", n0 + "/1", n0 + "/2", n0 + "/3", n1 + "/0", n1 + "/1", n1 + "/2", n1 + "/3"}},
		{Job: "s", Devices: []string{n2 + "/0", n2 + "/1"}},
	}
	got = placeWithSpeeds(t, nodeSpeeds{n0: 2}, cur, Target{Job: "g", Type: "t4", Count: 8}, Target{Job: "s", Type: "t4", Count: 2})
	if slices.ContainsFunc(got["g"], func(d string) bool { return strings.HasPrefix(d, n0+"/") }) || !onNode(got["s"], n0) {
		t.Errorf("g on %v, s on %v: want g off node 0, s on it", got["g"], got["s"])
	}
}

// TestRoundPlacerRegroup: two gangs of 8, each half on a 2× slower node,
// and no smaller gang to swap with: placed again together, one lands on
// the fast nodes and the other takes both slow ones.
func TestRoundPlacerRegroup(t *testing.T) {
	node := func(n int) string { return fmt.Sprintf("t4-%d", n) }
	devs := func(nodes ...int) []string {
		var out []string
		for _, n := range nodes {
			for d := range 4 {
				out = append(out, fmt.Sprintf("%s/%d", node(n), d))
			}
		}
		return out
	}
	cur := []Assignment{{Job: "a", Devices: devs(0, 1)}, {Job: "b", Devices: devs(2, 3)}}
	sp := nodeSpeeds{node(0): 2, node(2): 2}
	got := placeOn(t, 4, sp, cur, Target{Job: "a", Type: "t4", Count: 8}, Target{Job: "b", Type: "t4", Count: 8})
	slowOn := func(ds []string) int {
		k := 0
		for _, d := range ds {
			if sp.Slowdown("", d) > 1 {
				k++
			}
		}
		return k
	}
	if a, b := slowOn(got["a"]), slowOn(got["b"]); min(a, b) != 0 || max(a, b) != 8 {
		t.Errorf("a on %v, b on %v: want one gang on the fast nodes, the other on both slow ones", got["a"], got["b"])
	}
	// A 1.1× slower node moves nothing.
	sp = nodeSpeeds{node(0): 1.1, node(2): 1.1}
	got = placeOn(t, 4, sp, cur, Target{Job: "a", Type: "t4", Count: 8}, Target{Job: "b", Type: "t4", Count: 8})
	if !slices.Equal(got["a"], cur[0].Devices) || !slices.Equal(got["b"], cur[1].Devices) {
		t.Errorf("moved for 10%%: a on %v, b on %v", got["a"], got["b"])
	}
}
