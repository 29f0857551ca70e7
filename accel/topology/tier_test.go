package topology

import (
	"errors"
	"slices"
	"testing"
)

// TestTierOfKueueLabels numbers the spans of a block › rack › node tree
// built from Kueue-style node labels.
func TestTierOfKueueLabels(t *testing.T) {
	levels := []Level{{Name: "block", Bandwidth: 25}, {Name: "rack", Bandwidth: 100}}
	nodes := map[string]map[string]string{
		"a1": {"block": "b1", "rack": "r1"},
		"a2": {"block": "b1", "rack": "r1"},
		"b1": {"block": "b1", "rack": "r2"},
		"c1": {"block": "b2", "rack": "r1"},
	}
	top, err := FromLabels(levels, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodes []string
		want  int
	}{
		{[]string{"a1"}, 0},
		{[]string{"a1", "a1"}, 0},
		{[]string{"a1", "a2"}, 1},       // one rack
		{[]string{"a1", "b1"}, 2},       // one block, two racks
		{[]string{"a1", "a2", "c1"}, 3}, // two blocks: the root
	} {
		got, err := top.TierOf(tc.nodes)
		if err != nil || got != tc.want {
			t.Errorf("TierOf(%v) = %d, %v; want %d", tc.nodes, got, err, tc.want)
		}
	}
	if bw := top.TierBandwidths(); !slices.Equal(bw, []float64{0, 100, 25, 0}) {
		t.Errorf("TierBandwidths = %v, want [0 100 25 0]", bw)
	}
	if _, err := top.TierOf([]string{"a1", "nope"}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v, want ErrUnknownNode", err)
	}
	if _, err := top.TierOf(nil); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("empty set: %v, want ErrUnknownNode", err)
	}
}
