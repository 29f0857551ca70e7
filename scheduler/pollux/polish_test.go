package pollux

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// t4Cluster is a cluster of nodes nodes of four T4s (t4-0-000/0 …),
// indexed.
func t4Cluster(tb testing.TB, nodes int) (accel.Cluster, *placement.Index) {
	tb.Helper()
	var c accel.Cluster
	for n := range nodes {
		name := fmt.Sprintf("t4-0-%03d", n)
		node := accel.Node{Name: name}
		for k := range 4 {
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, k), Node: name, Index: k, Type: "t4", Healthy: true})
		}
		c.Nodes = append(c.Nodes, node)
	}
	ix, err := placement.NewIndex(c)
	if err != nil {
		tb.Fatal(err)
	}
	return c, ix
}

// vacateProblem is a round on 4 nodes of 4 T4s where a job shrinking
// across two nodes should leave its full node to two new gangs (so that a
// running job keeps its devices) rather than shrink in place. (It is the
// scheduler package's random instance genInput(2, refShapes[0]).)
func vacateProblem(t *testing.T) Problem {
	t.Helper()
	c, ix := t4Cluster(t, 4)
	current := map[string][]string{
		"job-0000": {"t4-0-001/1", "t4-0-001/2", "t4-0-001/3"},
		"job-0001": {"t4-0-003/0", "t4-0-003/1", "t4-0-003/2"},
		"job-0002": {"t4-0-000/0", "t4-0-000/1", "t4-0-000/2", "t4-0-000/3", "t4-0-001/0"},
		"job-0003": {"t4-0-002/0", "t4-0-002/1", "t4-0-002/2", "t4-0-002/3"},
	}
	p := Problem{Cluster: &c, Index: ix, Exponent: -1, RestartDelay: 30 * time.Second}
	for _, j := range []struct {
		id                 string
		alpha, node, scale float64
		min, max, restarts int
		ageS               float64
	}{
		{"job-0000", 0.13584253937609514, 0.725331632270698, 0.8189132133002737, 2, 3, 2, 1740},
		{"job-0001", 0.039445827930062696, 0.634338562163393, 0.9622934839265485, 2, 3, 0, 1400},
		{"job-0002", 0.20288139138886474, 0.9167063803120574, 1.0982153235334224, 2, 7, 2, 767},
		{"job-0003", 0.12871078196172286, 0.7870344490523864, 0.7831004691235377, 1, 7, 0, 1115},
		{"job-0004", 0.254408259304784, 0.8842518268866607, 0.815844288528037, 2, 9, 2, 298},
		{"job-0005", 0.11930255295702996, 0.752141077842368, 0.5850269299614497, 1, 7, 0, 2851},
	} {
		pj := Job{ID: j.id, Weight: 1, Types: []int{0}, Min: j.min, Max: j.max, Restarts: j.restarts,
			Age: time.Duration(j.ageS * float64(time.Second)), CurrentType: -1,
			Speedup: func(_, nodes, count int) (float64, error) {
				c := float64(count)
				return j.scale * c / (1 + j.alpha*(c-1)) * math.Pow(j.node, float64(max(nodes-1, 0))), nil
			}}
		if devs := current[j.id]; devs != nil {
			pj.Current, pj.CurrentType = devs, 0
			pj.CurrentNodes = map[int]int{3: 1, 4: 1, 5: 2}[len(devs)]
		}
		p.Jobs = append(p.Jobs, pj)
	}
	return p
}

// TestPolishVacate checks the vacate replay, and that the search finds a
// layout at least as fit.
func TestPolishVacate(t *testing.T) {
	e, err := New(vacateProblem(t))
	if err != nil {
		t.Fatal(err)
	}
	typ := make([]int, len(e.jobs))
	cnt := []int{3, 3, 2, 4, 2, 2}
	inPlace, vacated := e.replay(typ, cnt, false), e.replay(typ, cnt, true)
	for i, s := range []*state{inPlace, vacated} {
		for k := range e.jobs {
			if s.cnt[k] != cnt[k] {
				t.Fatalf("replay %d: job %d got %d devices, want %d", i, k, s.cnt[k], cnt[k])
			}
		}
	}
	if len(vacated.place[2]) != 2 || len(vacated.place[3]) != 1 {
		t.Fatalf("vacated layout %v: want job 2 on two nodes and job 3 on one", vacated.place)
	}
	if e.objective(vacated) <= e.objective(inPlace) {
		t.Fatalf("vacated objective %v not above in-place %v", e.objective(vacated), e.objective(inPlace))
	}
	want, err := e.Realized(e.layoutResult(vacated))
	if err != nil {
		t.Fatal(err)
	}
	sols, err := e.Solve(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	best := math.Inf(-1)
	for _, sol := range sols {
		f, err := e.Realized(e.Layout(sol))
		if err != nil {
			t.Fatal(err)
		}
		best = max(best, f)
	}
	if best < want*(1-1e-9) {
		t.Fatalf("best layout's fitness %v < vacated layout's %v", best, want)
	}
}

// randomPolishProblem is a random round for the polish: 1 to 3 device
// types on nodes of 2 to 8 devices, up to polishJobs jobs of which some
// run, some are rigid or pinned, with speedups that are not monotone in
// the node count (so that the polish's bound must take the best node
// count, not the packed one).
func randomPolishProblem(t *testing.T, seed uint64) Problem {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	types := []accel.TypeKey{"t4", "v100", "a100-40gb"}[:1+rng.IntN(3)]
	var c accel.Cluster
	for n := range 3 + rng.IntN(10) {
		tk := types[rng.IntN(len(types))]
		name := fmt.Sprintf("n%02d", n)
		node := accel.Node{Name: name}
		for k := range 2 + rng.IntN(7) {
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, k), Node: name, Index: k, Type: tk, Healthy: true})
		}
		c.Nodes = append(c.Nodes, node)
	}
	ix, err := placement.NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	free := map[int][]accel.Device{} // per type position, in node order
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			ti, _ := ix.TypeIndex(d.Type)
			free[ti] = append(free[ti], d)
		}
	}
	p := Problem{Cluster: &c, Index: ix, Exponent: []float64{-1, -3, 0.5}[rng.IntN(3)], RestartDelay: 30 * time.Second, AllowInterference: rng.IntN(2) != 0}
	for k := range 2 + rng.IntN(polishJobs-1) {
		alpha, node, scale := 0.3*rng.Float64(), 0.5+0.7*rng.Float64(), 0.5+rng.Float64()
		wiggle := rng.Float64()
		mn := 1 + rng.IntN(3)
		pj := Job{ID: fmt.Sprintf("job-%04d", k), Weight: 0.5 + rng.Float64(), Min: mn, Max: mn + rng.IntN(12),
			Rigid: rng.IntN(6) == 0, Restarts: rng.IntN(3), Age: time.Duration(rng.IntN(3000)) * time.Second, CurrentType: -1,
			Speedup: func(_, nodes, count int) (float64, error) {
				x := float64(count)
				v := scale * x / (1 + alpha*(x-1)) * math.Pow(node, float64(max(nodes-1, 0)))
				if nodes%3 == 2 {
					v *= 1 + 0.3*wiggle // better on some node counts than on fewer
				}
				return v, nil
			}}
		for ti := range ix.Types() {
			if rng.IntN(3) > 0 || ti == 0 {
				pj.Types = append(pj.Types, ti)
			}
		}
		if pj.Rigid {
			pj.Max = pj.Min
		}
		if ti := pj.Types[rng.IntN(len(pj.Types))]; rng.IntN(2) == 0 && len(free[ti]) >= pj.Min {
			cnt := pj.Min + rng.IntN(min(pj.Max, len(free[ti]))-pj.Min+1)
			nodes := map[string]bool{}
			for _, d := range free[ti][:cnt] {
				pj.Current = append(pj.Current, d.ID)
				nodes[d.Node] = true
			}
			free[ti] = free[ti][cnt:]
			pj.CurrentType, pj.CurrentNodes = ti, len(nodes)
			pj.Pinned = rng.IntN(8) == 0
		}
		p.Jobs = append(p.Jobs, pj)
	}
	return p
}

// TestPolishBoundSameSearch checks that the polish's bound only skips
// replays that would lose: on random rounds, the polished state is the one
// a polish that replays every try finds.
func TestPolishBoundSameSearch(t *testing.T) {
	seeds := 120
	if testing.Short() || raceEnabled {
		seeds = 30
	}
	improved := 0
	for seed := range uint64(seeds) {
		p := randomPolishProblem(t, seed)
		var got [2]*state
		for k, off := range []bool{false, true} {
			e, err := New(p)
			if err != nil {
				t.Fatal(err)
			}
			e.noPolishBound = off
			sols, err := e.Solve(context.Background(), 4)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			got[k] = e.polish(sols[0].s)
			if k == 0 && e.objective(got[k]) > e.objective(e.replay(sols[0].s.typ, sols[0].s.cnt, false))+1e-9 {
				improved++
			}
		}
		a, b := got[0], got[1]
		if !slices.Equal(a.typ, b.typ) || !slices.Equal(a.cnt, b.cnt) || fmt.Sprint(a.place) != fmt.Sprint(b.place) {
			t.Fatalf("seed %d: bounded polish %v %v %v, full polish %v %v %v", seed, a.typ, a.cnt, a.place, b.typ, b.cnt, b.place)
		}
	}
	// The comparison means something only if the polish does something.
	if improved < seeds/10 {
		t.Fatalf("the polish improved on %d of %d rounds: the instances do not exercise it", improved, seeds)
	}
	t.Logf("the polish improved on %d of %d rounds", improved, seeds)
}
