package pollux

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// onegpuProblem is issue 19's wide cluster as the engine sees it: nodes
// nodes of one T4 each and five elastic jobs bounded only by the cluster,
// with near-linear speedups that do not mind spanning nodes. With
// current, jobs 0–3 run on nodes/64·(i+1) consecutive nodes each.
func onegpuProblem(tb testing.TB, nodes int, current bool) Problem {
	tb.Helper()
	var c accel.Cluster
	for n := range nodes {
		name := fmt.Sprintf("t4-0-%05d", n)
		c.Nodes = append(c.Nodes, accel.Node{Name: name, Devices: []accel.Device{{ID: name + "/0", Node: name, Type: "t4", Healthy: true, NUMANode: -1}}})
	}
	ix, err := placement.NewIndex(c)
	if err != nil {
		tb.Fatal(err)
	}
	p := Problem{Cluster: &c, Index: ix, Exponent: -1, RestartDelay: 30 * time.Second}
	next := 0
	for i := range 5 {
		alpha := 0.0005 * float64(i+1)
		j := Job{ID: fmt.Sprintf("job-%d", i), Weight: 1, Types: []int{0}, Min: 1, Max: nodes, CurrentType: -1,
			Age: time.Duration(600*(i+1)) * time.Second,
			Speedup: func(_, _, count int) (float64, error) {
				c := float64(count)
				return c / (1 + alpha*(c-1)), nil
			}}
		if current && i < 4 {
			for range nodes / 64 * (i + 1) {
				j.Current = append(j.Current, c.Nodes[next].Devices[0].ID)
				next++
			}
			j.CurrentType, j.CurrentNodes = 0, len(j.Current)
		}
		p.Jobs = append(p.Jobs, j)
	}
	return p
}

func benchSolve(b *testing.B, p Problem) {
	b.ReportAllocs()
	for b.Loop() {
		e, err := New(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Solve(context.Background(), 4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSolve65536x1 is the engine's part of a round on 65,536
// one-GPU nodes with five unbounded elastic jobs, none running.
func BenchmarkSolve65536x1(b *testing.B) { benchSolve(b, onegpuProblem(b, 65536, false)) }

// BenchmarkSolve65536x1Current is the same with four jobs running on
// 10,240 of the nodes.
func BenchmarkSolve65536x1Current(b *testing.B) { benchSolve(b, onegpuProblem(b, 65536, true)) }

// simProblem is the simulator's common round (issue 19's Philly replay on
// 512×4 T4): the given number of elastic jobs of up to 64 devices on 512
// four-GPU nodes, with speedups that mind spanning nodes only from one to two (as
// Pollux's model, NodeBound 2), none running: a round that is mostly the
// greedy fill growing jobs across nodes.
func simProblem(tb testing.TB, jobs int) Problem {
	tb.Helper()
	c, ix := t4Cluster(tb, 512)
	p := Problem{Cluster: &c, Index: ix, Exponent: -1, RestartDelay: 30 * time.Second}
	for i := range jobs {
		alpha := 0.01 + 0.004*float64(i)
		j := Job{ID: fmt.Sprintf("job-%02d", i), Weight: 1, Types: []int{0}, Min: 1, Max: 64, CurrentType: -1,
			Age: time.Duration(600*(i+1)) * time.Second, NodeBound: 2,
			Speedup: func(_, nodes, count int) (float64, error) {
				c := float64(count)
				v := c / (1 + alpha*(c-1))
				if nodes > 1 {
					v *= 0.9
				}
				return v, nil
			}}
		p.Jobs = append(p.Jobs, j)
	}
	return p
}

// BenchmarkSolveSim16 is the engine's part of a simulator round with 16
// jobs on 512×4 T4 (three starts, polish).
func BenchmarkSolveSim16(b *testing.B) { benchSolve(b, simProblem(b, 16)) }
