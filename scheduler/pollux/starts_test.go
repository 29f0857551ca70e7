package pollux

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// TestParallelStartsSameSearch: searching the starts on two goroutines
// (Problem.Parallel) gives the solutions and layouts of searching them one
// after the other.
func TestParallelStartsSameSearch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // the parallel search needs a second processor
	for seed := range uint64(60) {
		p := wideProblem(t, 3000+seed)
		if seed%2 == 1 {
			p = randomPolishProblem(t, 300+seed)
		}
		seq := solveOnce(t, p, nil)
		p.Parallel = true
		if par := solveOnce(t, p, nil); par != seq {
			t.Fatalf("seed %d: in parallel\n%s\none start after the other\n%s", seed, par, seq)
		}
	}
}

// TestParallelStartsError: with one bad device count of one job,
// whichever start evaluates it, the parallel search fails exactly when
// the search of one start after the other fails, and otherwise finds the
// same solutions.
func TestParallelStartsError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	bad := errors.New("bad speedup")
	failed, seeds := 0, uint64(10)
	if raceEnabled {
		seeds = 3 // slow under -race
	}
	for seed := range seeds {
		p := randomPolishProblem(t, 500+seed)
		for i := range min(len(p.Jobs), 8) {
			for c := 1; c <= min(p.Jobs[i].Max, 16); c++ {
				outcome := func(parallel bool) (string, error) {
					q := p
					q.Parallel = parallel
					q.Jobs = append([]Job(nil), p.Jobs...)
					f := q.Jobs[i].Speedup
					armed := false // after New's baselines
					q.Jobs[i].Speedup = func(t, nodes, count int) (float64, error) {
						if armed && count == c {
							return 0, bad
						}
						return f(t, nodes, count)
					}
					e, err := New(q)
					if err != nil {
						t.Fatal(err)
					}
					armed = true
					sols, err := e.Solve(context.Background(), 4)
					if err != nil {
						return "", err
					}
					out := ""
					for _, s := range sols {
						out += fmt.Sprint(s.s.typ, s.s.cnt, s.s.place, e.Layout(s)) + "\n"
					}
					return out, nil
				}
				seq, serr := outcome(false)
				par, perr := outcome(true)
				if (serr == nil) != (perr == nil) || (serr != nil && !errors.Is(perr, bad)) || par != seq {
					t.Fatalf("seed %d, job %d, bad count %d: in parallel %v\n%s\none start after the other %v\n%s", seed, i, c, perr, par, serr, seq)
				}
				if serr != nil {
					failed++
				}
			}
		}
	}
	if failed == 0 {
		t.Fatal("no search met the bad allocation")
	}
	t.Logf("%d searches met the bad allocation", failed)
}

// TestParallelStartsPanic: a Speedup that panics only on the worker's
// goroutine panics on the caller's, where it can be recovered.
func TestParallelStartsPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p := manyJobsProblem(t, 1, 400) // large enough for the worker to take a start
	p.Parallel = true
	armed := false // after New's baselines
	onWorker(&p, &armed, func() (float64, error) { panic("speedup") })
	e, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	armed = true
	defer func() {
		if r := recover(); r != "speedup" {
			t.Fatalf("recovered %v, want the Speedup's panic", r)
		}
	}()
	e.Solve(context.Background(), 4)
	t.Fatal("Solve returned")
}

// TestParallelStartsWorkerError: a bad speedup that only the worker sees
// fails the search and empties the Memo.
func TestParallelStartsWorkerError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p := manyJobsProblem(t, 2, 400) // large enough for the worker to take a start
	p.Parallel = true
	var m Memo
	p.Memo = &m
	bad := errors.New("bad speedup")
	armed := false // after New's baselines
	onWorker(&p, &armed, func() (float64, error) { return 0, bad })
	e, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	armed = true
	if _, err := e.Solve(context.Background(), 4); !errors.Is(err, bad) {
		t.Fatalf("Solve: %v, want the worker's bad speedup", err)
	}
	if len(m.jobs) != 0 {
		t.Fatalf("the memo holds %d jobs after a bad speedup, want none", len(m.jobs))
	}
}

// onWorker makes every job's Speedup answer act() instead, once *armed,
// on any goroutine but the caller's (so on the parallel search's worker
// only).
func onWorker(p *Problem, armed *bool, act func() (float64, error)) {
	caller := goroutine()
	wrapSpeedups(p, func(_ int, f speedupFunc) speedupFunc {
		return func(t, nodes, count int) (float64, error) {
			if *armed && goroutine() != caller {
				return act()
			}
			return f(t, nodes, count)
		}
	})
}

// goroutine names the calling goroutine (the first line of its stack,
// "goroutine N [running]:").
func goroutine() string {
	buf := make([]byte, 64)
	line, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), "[")
	return line
}

// TestParallelStartsSameSearchLarge: the same on instances beyond the
// cold start's 300 jobs, where the engine runs in its fast mode.
func TestParallelStartsSameSearchLarge(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for seed := range uint64(3) {
		p := manyJobsProblem(t, seed, 400)
		seq := solveOnce(t, p, nil)
		p.Parallel = true
		if par := solveOnce(t, p, nil); par != seq {
			t.Fatalf("seed %d: in parallel\n%s\none start after the other\n%s", seed, par, seq)
		}
	}
}

// manyJobsProblem is jobs elastic jobs on 256 nodes of 4 devices of two
// types, about half of them running on devices of their first type.
func manyJobsProblem(t *testing.T, seed uint64, jobs int) Problem {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 23))
	var c accel.Cluster
	for n := range 256 {
		name := fmt.Sprintf("n-%03d", n)
		node := accel.Node{Name: name}
		for k := range 4 {
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, k), Node: name, Index: k,
				Type: accel.TypeKey([]string{"t4", "v100"}[n%2]), Healthy: true, NUMANode: -1})
		}
		c.Nodes = append(c.Nodes, node)
	}
	ix, err := placement.NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	p := Problem{Cluster: &c, Index: ix, Exponent: -1, RestartDelay: 30 * time.Second}
	next := [2]int{0, 1} // the next node of each type to run a job on
	for i := range jobs {
		alpha, pen := 0.001+rng.Float64()*0.05, 0.97+rng.Float64()*0.03
		j := Job{ID: fmt.Sprintf("job-%03d", i), Weight: 1, Types: [][]int{{0}, {1}, {0, 1}}[rng.IntN(3)], Min: 1, Max: 2 + rng.IntN(16),
			CurrentType: -1, Age: time.Duration(100+rng.IntN(3000)) * time.Second,
			Speedup: func(t, nodes, count int) (float64, error) {
				c := float64(count)
				return (1 + 0.3*float64(t)) * c / (1 + alpha*(c-1)) * math.Pow(pen, float64(max(nodes-1, 0))), nil
			}}
		if t0 := j.Types[0]; rng.IntN(2) == 0 && next[t0] < 256 {
			// On one whole node of its first type.
			for _, d := range c.Nodes[next[t0]].Devices {
				j.Current = append(j.Current, d.ID)
			}
			j.CurrentType, j.CurrentNodes, j.Max = t0, 1, max(j.Max, 4)
			next[t0] += 2
		}
		p.Jobs = append(p.Jobs, j)
	}
	return p
}
