package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/goodsched/goodsched/goodput"
)

// twoNodeSpeedup is a speedup that is the same on every node count from 2
// on; it counts its calls.
type twoNodeSpeedup struct {
	s     goodput.Speedup
	calls *atomic.Int64
}

func (t twoNodeSpeedup) Speedup(typ string, nodes, replicas int) float64 {
	t.calls.Add(1)
	return t.s.Speedup(typ, min(nodes, 2), replicas)
}

// boundedSpeedup is twoNodeSpeedup, saying so (goodput.NodeBounder).
type boundedSpeedup struct{ twoNodeSpeedup }

func (boundedSpeedup) NodeBound() int { return 2 }

// TestPolluxNodeBound: the goodput policy passes a Speedup's node bound to
// the engine, which then finds the same plan with fewer evaluations.
func TestPolluxNodeBound(t *testing.T) {
	in := genInput(3, genOpts{groups: []group{{8, 8, "a100"}, {16, 4, "t4"}}, jobs: 60, maxReplicas: 32, rounds: 1})
	plans := make([]string, 2)
	calls := make([]int64, 2)
	for k := range 2 {
		x := in
		x.Jobs = slices.Clone(in.Jobs)
		var n atomic.Int64
		for i := range x.Jobs {
			s := twoNodeSpeedup{x.Jobs[i].Speedup, &n}
			x.Jobs[i].Speedup = s
			if k == 1 {
				x.Jobs[i].Speedup = boundedSpeedup{s}
			}
		}
		s, err := New(Config{Policy: Pollux{}})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.Schedule(context.Background(), x)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range plan.Decisions {
			plans[k] += fmt.Sprintln(d.Job, d.Type, d.To, d.Nodes, d.Action)
		}
		calls[k] = n.Load()
	}
	if plans[1] != plans[0] {
		t.Fatalf("with NodeBound 2:\n%s\nwithout:\n%s", plans[1], plans[0])
	}
	if calls[1] >= calls[0] {
		t.Errorf("%d speedup evaluations with NodeBound 2, %d without: want fewer", calls[1], calls[0])
	}
}
