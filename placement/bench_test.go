package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

var benchTypes = []accel.TypeKey{"a100-40gb", "h100-80gb", "t4", "v100"}

// benchCluster builds nodes×8 GPUs, the types in turn, with DGX-like links.
func benchCluster(nodes int) accel.Cluster {
	links := []func(int) []accel.Link{fullMesh(12), fullMesh(18), nil, cubeMesh}
	specs := make([]nodeSpec, nodes)
	for i := range specs {
		specs[i] = nodeSpec{fmt.Sprintf("node-%04d", i), benchTypes[i%4], 8, links[i%4]}
	}
	return testCluster(specs...)
}

// gangSize draws a gang size: mostly small, some whole nodes and pairs of
// nodes, as in DL traces.
func gangSize(rng *rand.Rand) int {
	switch x := rng.IntN(100); {
	case x < 40:
		return 1
	case x < 60:
		return 2
	case x < 80:
		return 4
	case x < 95:
		return 8
	default:
		return 16
	}
}

// fill places random gangs until about frac of the devices are used.
func fill(tb testing.TB, s *State, rng *rand.Rand, frac float64, prefix string) []string {
	var p Chooser
	var jobs []string
	total := 0
	for _, t := range s.Types() {
		total += s.Capacity(t)
	}
	used := 0
	for i := 0; float64(used) < frac*float64(total); i++ {
		job := fmt.Sprintf("%s%06d", prefix, i)
		k := gangSize(rng)
		a, err := p.Place(s, Request{Job: job, Types: []accel.TypeKey{benchTypes[rng.IntN(4)]}, Count: k})
		if err != nil {
			if i > 100*total {
				tb.Fatal("cannot fill")
			}
			continue
		}
		if err := s.Assign(a); err != nil {
			tb.Fatal(err)
		}
		used += len(a.Devices)
		jobs = append(jobs, job)
	}
	return jobs
}

// BenchmarkPlace measures one single-gang placement (decide, commit, and
// release an old job to keep the cluster about 60% full) on 1,000 nodes ×
// 8 GPUs of 4 types.
func BenchmarkPlace(b *testing.B) {
	s := mustState(b, benchCluster(1000))
	rng := rand.New(rand.NewPCG(1, 2))
	live := fill(b, s, rng, 0.6, "old")
	reqs := make([]Request, 4096)
	for i := range reqs {
		reqs[i] = Request{Types: []accel.TypeKey{benchTypes[rng.IntN(4)]}, Count: gangSize(rng)}
	}
	var p Chooser
	fits := 0
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		// Replace the oldest live job by a new gang under its name, so the
		// cluster stays about 60% full.
		r := reqs[i%len(reqs)]
		r.Job = live[i%len(live)]
		s.Release(r.Job)
		a, err := p.Place(s, r)
		if err == nil {
			fits++
			if err := s.Assign(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	ct.stop(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(fits)/float64(b.N), "fit-ratio")
}

// BenchmarkPlaceOnly measures the decision alone, on a 60%-full cluster.
func BenchmarkPlaceOnly(b *testing.B) {
	s := mustState(b, benchCluster(1000))
	rng := rand.New(rand.NewPCG(1, 2))
	fill(b, s, rng, 0.6, "old")
	reqs := make([]Request, 4096)
	for i := range reqs {
		reqs[i] = Request{Job: "new", Types: []accel.TypeKey{benchTypes[rng.IntN(4)]}, Count: gangSize(rng)}
	}
	var p Chooser
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		if _, err := p.Place(s, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
	ct.stop(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
}

// roundInput builds a cluster of 8,192 GPUs about 75% used and 2,000
// targets: most jobs keep their size, some grow, shrink, change type or
// stop, and new jobs arrive.
func roundInput(tb testing.TB) (*State, []Target) {
	s := mustState(tb, benchCluster(1024))
	rng := rand.New(rand.NewPCG(3, 4))
	jobs := fill(tb, s, rng, 0.75, "j")
	var targets []Target
	for _, job := range jobs {
		a, _ := s.Assignment(job)
		ty, _ := s.TypeOf(a)
		tg := Target{Job: job, Type: ty, Count: len(a.Devices)}
		switch x := rng.IntN(100); {
		case x < 70:
		case x < 80:
			tg.Count *= 2
		case x < 88:
			tg.Count = max(1, tg.Count/2)
		case x < 92:
			tg.Type = benchTypes[rng.IntN(4)]
		default:
			continue // stopped
		}
		targets = append(targets, tg)
	}
	for i := 0; len(targets) < 2000; i++ {
		targets = append(targets, Target{Job: fmt.Sprintf("new%05d", i), Type: benchTypes[rng.IntN(4)], Count: gangSize(rng)})
	}
	return s, targets[:2000]
}

// BenchmarkRound measures one round of 2,000 targets on 8,192 GPUs.
func BenchmarkRound(b *testing.B) {
	s, targets := roundInput(b)
	var p Chooser
	res, err := p.Round(s, targets)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("jobs %d, targets %d: keep %d grow %d shrink %d move %d start %d stop %d, unplaced %d",
		len(s.Assignments()), len(targets), res.Count(Keep), res.Count(Grow), res.Count(Shrink), res.Count(Move), res.Count(Start), res.Count(Stop), len(res.Unplaced))
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		if _, err := p.Round(s, targets); err != nil {
			b.Fatal(err)
		}
	}
	ct.stop(b)
}

// BenchmarkRoundWithState includes indexing the cluster and the current
// assignments (NewState), as a host that rebuilds the state each round.
func BenchmarkRoundWithState(b *testing.B) {
	s, targets := roundInput(b)
	c := benchCluster(1024)
	cur := s.Assignments()
	var p Chooser
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		st, err := NewState(c, cur)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Round(st, targets); err != nil {
			b.Fatal(err)
		}
	}
	ct.stop(b)
}

// BenchmarkClone measures a what-if: clone, place one gang, commit.
func BenchmarkClone(b *testing.B) {
	s := mustState(b, benchCluster(1000))
	fill(b, s, rand.New(rand.NewPCG(1, 2)), 0.6, "old")
	var p Chooser
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		k := s.Clone()
		a, err := p.Place(k, Request{Job: "what-if", Count: 8})
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Assign(a); err != nil {
			b.Fatal(err)
		}
	}
	ct.stop(b)
}

// BenchmarkNewState measures indexing 8,192 GPUs and about 1,700 current
// assignments.
func BenchmarkNewState(b *testing.B) {
	s, _ := roundInput(b)
	c := benchCluster(1024)
	cur := s.Assignments()
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		if _, err := NewState(c, cur); err != nil {
			b.Fatal(err)
		}
	}
	ct.stop(b)
}

// BenchmarkIndexNewState builds a State on a kept Index, as a host that
// places round after round on one cluster does (the cluster's indexing is
// not part of it).
func BenchmarkIndexNewState(b *testing.B) {
	s, _ := roundInput(b)
	x, err := NewIndex(benchCluster(1024))
	if err != nil {
		b.Fatal(err)
	}
	cur := s.Assignments()
	b.ReportAllocs()
	var ct cpuTimer
	ct.start(b)
	for i := 0; i < b.N; i++ {
		if _, err := x.NewState(cur); err != nil {
			b.Fatal(err)
		}
	}
	ct.stop(b)
}

// BenchmarkIndexNewStateSparse builds a State on a kept Index of 512
// nodes × 8 GPUs whose current assignments hold a given share of the
// devices, both ways: from scratch (every node's usage built) and from
// the index's State of no job (the nodes touched copied on write). The
// crossing sets sparseShare.
func BenchmarkIndexNewStateSparse(b *testing.B) {
	c := benchCluster(512)
	x, err := NewIndex(c)
	if err != nil {
		b.Fatal(err)
	}
	for _, pct := range []int{2, 10, 25, 50, 75} {
		s := mustState(b, c)
		fill(b, s, rand.New(rand.NewPCG(1, uint64(pct))), float64(pct)/100, "j")
		as := s.Assignments()
		for _, way := range []string{"scratch", "empty"} {
			b.Run(fmt.Sprintf("held=%d%%/%s", pct, way), func(b *testing.B) {
				b.ReportAllocs()
				var ct cpuTimer
				ct.start(b)
				for i := 0; i < b.N; i++ {
					var err error
					if way == "scratch" {
						_, err = newState(x.ix, as)
					} else {
						_, err = x.ix.fromEmpty(as)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				ct.stop(b)
			})
		}
	}
}
