package scheduler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
)

// group is n nodes of per devices of one type.
type group struct {
	n, per int
	typ    accel.TypeKey
}

func testCluster(groups ...group) accel.Cluster {
	var c accel.Cluster
	for gi, g := range groups {
		for i := 0; i < g.n; i++ {
			name := fmt.Sprintf("%s-%d-%03d", g.typ, gi, i)
			n := accel.Node{Name: name}
			for d := 0; d < g.per; d++ {
				n.Devices = append(n.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, d), Node: name, Index: d, Type: g.typ, Healthy: true, NUMANode: -1})
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	return c
}

// fakeSpeedup is a concave speedup: scale[type] · c/(1+alpha·(c−1)) ·
// node^(nodes−1). It is safe for concurrent use.
type fakeSpeedup struct {
	alpha float64
	node  float64
	scale map[string]float64
}

func (f fakeSpeedup) Speedup(typ string, nodes, replicas int) float64 {
	if replicas <= 0 {
		return 0
	}
	s := 1.0
	if f.scale != nil {
		var ok bool
		if s, ok = f.scale[typ]; !ok {
			return 0
		}
	}
	c := float64(replicas)
	return s * c / (1 + f.alpha*(c-1)) * math.Pow(f.node, float64(max(nodes-1, 0)))
}

// nanSpeedup returns NaN.
type nanSpeedup struct{}

func (nanSpeedup) Speedup(string, int, int) float64 { return math.NaN() }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// genOpts shapes a random instance.
type genOpts struct {
	groups      []group
	jobs        int
	rigidFrac   float64
	pinnedFrac  float64
	maxReplicas int
	rounds      int // warm-up rounds run through Pollux to get a current placement
}

// genInput builds a random instance: jobs with random concave speedups,
// a current placement produced by a few earlier rounds, and new arrivals.
func genInput(seed uint64, o genOpts) Input {
	rng := rand.New(rand.NewPCG(seed, 7))
	cl := testCluster(o.groups...)
	types := cl.Types()
	in := Input{Cluster: cl, Now: t0.Add(time.Hour)}
	for i := 0; i < o.jobs; i++ {
		sc := make(map[string]float64)
		for _, t := range types {
			sc[string(t)] = 0.3 + rng.Float64()*1.5
		}
		j := Job{
			ID:        fmt.Sprintf("job-%04d", i),
			Submitted: in.Now.Add(-time.Duration(rng.IntN(3600)) * time.Second),
			Kind:      Adaptive,
			Speedup:   fakeSpeedup{alpha: 0.01 + rng.Float64()*0.3, node: 0.6 + rng.Float64()*0.35, scale: sc},
			Attained:  time.Duration(rng.IntN(40)) * time.Hour,
			Restarts:  rng.IntN(3),
			Weight:    1,
		}
		j.MinReplicas = 1 + rng.IntN(2)
		j.MaxReplicas = j.MinReplicas + rng.IntN(max(o.maxReplicas, 1))
		if rng.Float64() < o.rigidFrac {
			j.Kind = Rigid
			j.Requested = 1 << rng.IntN(3)
		}
		if len(types) > 1 && rng.Float64() < 0.3 {
			j.Types = []accel.TypeKey{types[rng.IntN(len(types))]}
		}
		if rng.Float64() < 0.2 {
			j.RemainingWork = 100 + rng.Float64()*1e4
		}
		in.Jobs = append(in.Jobs, j)
	}
	// Warm up: the first 2/3 of the jobs have been scheduled before.
	if o.rounds > 0 {
		n := len(in.Jobs) * 2 / 3
		warm := Input{Cluster: cl, Jobs: in.Jobs[:n:n], Now: in.Now.Add(-10 * time.Minute)}
		s, _ := New(Config{Policy: Pollux{}})
		for r := 0; r < o.rounds; r++ {
			plan, err := s.Schedule(context.Background(), warm)
			if err != nil {
				panic(err)
			}
			warm.Current = plan.Assignments()
			warm.Now = warm.Now.Add(time.Minute)
		}
		in.Current = warm.Current
		running := make(map[string]bool)
		for _, a := range in.Current {
			running[a.Job] = true
		}
		for i := range in.Jobs {
			if running[in.Jobs[i].ID] && rng.Float64() < o.pinnedFrac {
				in.Jobs[i].NonPreemptible = true
			}
		}
	}
	return in
}

// mustRound is NewRound(in) for tests that call a policy on its own.
func mustRound(t testing.TB, in Input) *Round {
	t.Helper()
	r, err := NewRound(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scheduleOnce is the plan of one round of in on a fresh Scheduler with
// policy pol.
func scheduleOnce(t *testing.T, pol Policy, in Input) Plan {
	t.Helper()
	s, err := New(Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
