package pollux

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// speedupFunc is a Job's Speedup.
type speedupFunc = func(t, nodes, count int) (float64, error)

// wrapSpeedups replaces every job i's Speedup f with wrap(i, f) and
// gives each job a Reuse key (its ID).
func wrapSpeedups(p *Problem, wrap func(i int, f speedupFunc) speedupFunc) {
	for i := range p.Jobs {
		p.Jobs[i].Speedup = wrap(i, p.Jobs[i].Speedup)
		p.Jobs[i].Reuse = p.Jobs[i].ID
	}
}

// countCalls wraps every job's Speedup so that calls[i] counts job i's
// evaluations, and gives each job a Reuse key.
func countCalls(p *Problem, calls []int) {
	var mu sync.Mutex // with Problem.Parallel, Solve calls Speedup from two goroutines
	wrapSpeedups(p, func(i int, f speedupFunc) speedupFunc {
		return func(t, nodes, count int) (float64, error) {
			mu.Lock()
			calls[i]++
			mu.Unlock()
			return f(t, nodes, count)
		}
	})
}

// solveOnce returns the search's solutions as text, the search set up
// first by set (nil: as New makes it; tests use it to turn off a
// shortcut they compare with).
func solveOnce(t *testing.T, p Problem, set func(*Search)) string {
	t.Helper()
	e, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(e)
	}
	sols, err := e.Solve(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, s := range sols {
		out += fmt.Sprint(s.s.typ, s.s.cnt, s.s.place, e.Layout(s)) + "\n"
	}
	return out
}

// TestMemoReuse: a second search with the Memo of a first one finds the
// same solutions and evaluates no speedup, New's fair-share baselines
// included; a changed Reuse key or another cluster is evaluated afresh,
// and the Memo keeps only the last search's jobs.
func TestMemoReuse(t *testing.T) {
	for seed := range uint64(20) {
		p := randomPolishProblem(t, seed)
		want := solveOnce(t, p, nil)

		calls := make([]int, len(p.Jobs))
		countCalls(&p, calls)
		var m Memo
		p.Memo = &m
		if got := solveOnce(t, p, nil); got != want {
			t.Fatalf("seed %d: with an empty memo\n%s\nwant\n%s", seed, got, want)
		}
		first := slices.Clone(calls)
		clear(calls)
		if got := solveOnce(t, p, nil); got != want {
			t.Fatalf("seed %d: with the first search's memo\n%s\nwant\n%s", seed, got, want)
		}
		for i, n := range calls {
			if n > 0 {
				t.Fatalf("seed %d: job %d: %d evaluations in the second search (%d in the first), want none", seed, i, n, first[i])
			}
		}

		// A new key for job 0: its speedups are evaluated again, the rest not.
		clear(calls)
		p.Jobs[0].Reuse = "changed"
		if got := solveOnce(t, p, nil); got != want {
			t.Fatalf("seed %d: after a key change\n%s\nwant\n%s", seed, got, want)
		}
		if calls[0] != first[0] || slices.ContainsFunc(calls[1:], func(n int) bool { return n > 0 }) {
			t.Fatalf("seed %d: job 0 with a new key: evaluations %v, want its own %d again and none of the others", seed, calls, first[0])
		}
		if len(m.jobs) != len(p.Jobs) {
			t.Fatalf("seed %d: the memo holds %d jobs, want %d", seed, len(m.jobs), len(p.Jobs))
		}

		// Fewer jobs: the memo keeps only the last search's.
		q := p
		q.Jobs = p.Jobs[1:]
		solveOnce(t, q, nil)
		if _, ok := m.jobs[p.Jobs[0].ID]; ok || len(m.jobs) != len(q.Jobs) {
			t.Fatalf("seed %d: the memo holds %d jobs (job 0: %v), want the %d of the last search", seed, len(m.jobs), ok, len(q.Jobs))
		}

		// Other per-node counts: nothing is reused.
		m.perNode = append([]int(nil), m.perNode...)
		m.perNode[0]++
		clear(calls)
		if got := solveOnce(t, p, nil); got != want {
			t.Fatalf("seed %d: after a cluster change\n%s\nwant\n%s", seed, got, want)
		}
		if !slices.Equal(calls, first) {
			t.Fatalf("seed %d: another cluster: evaluations %v, want the first search's %v", seed, calls, first)
		}
	}
}

// TestMemoReuseParallel: the Memo also keeps what the parallel search's
// worker evaluated, so a second parallel search evaluates nothing.
func TestMemoReuseParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for seed := range uint64(2) {
		p := manyJobsProblem(t, seed, 400) // large enough for the worker to take a start
		p.Parallel = true
		want := solveOnce(t, p, nil)
		calls := make([]int, len(p.Jobs))
		countCalls(&p, calls)
		var m Memo
		p.Memo = &m
		solveOnce(t, p, nil)
		clear(calls)
		if got := solveOnce(t, p, nil); got != want {
			t.Fatalf("seed %d: with the first search's memo\n%s\nwant\n%s", seed, got, want)
		}
		for i, n := range calls {
			if n > 0 {
				t.Fatalf("seed %d: job %d: %d evaluations in the second search, want none", seed, i, n)
			}
		}
	}
}

// TestMemoBadSpeedup: a search that sees a bad speedup fails and leaves
// the Memo empty, so that no later search reads the bad value.
func TestMemoBadSpeedup(t *testing.T) {
	p := randomPolishProblem(t, 3)
	var m Memo
	p.Memo = &m
	for i := range p.Jobs {
		p.Jobs[i].Reuse = p.Jobs[i].ID
	}
	solveOnce(t, p, nil)
	if len(m.jobs) == 0 {
		t.Fatal("the memo holds nothing after a search")
	}
	bad := errors.New("bad speedup")
	armed := false // after New's baselines: every evaluation fails
	f := p.Jobs[0].Speedup
	p.Jobs[0].Speedup = func(t, nodes, count int) (float64, error) {
		if armed {
			return 0, bad
		}
		return f(t, nodes, count)
	}
	p.Jobs[0].Reuse = "new"
	e, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	armed = true
	if _, err := e.Solve(context.Background(), 4); !errors.Is(err, bad) {
		t.Fatalf("Solve: %v, want the bad speedup", err)
	}
	if len(m.jobs) != 0 {
		t.Fatalf("the memo holds %d jobs after a bad speedup, want none", len(m.jobs))
	}

	// A bad baseline fails New and empties the Memo too.
	armed = false
	solveOnce(t, p, nil)
	p.Jobs[0].Reuse = "newer"
	armed = true
	if _, err := New(p); !errors.Is(err, bad) {
		t.Fatalf("New with a bad baseline: %v, want the bad speedup", err)
	}
	if len(m.jobs) != 0 {
		t.Fatalf("the memo holds %d jobs after a bad baseline, want none", len(m.jobs))
	}
}

// TestMemoReuseNewMax: a job whose Max changes between searches (its
// memo is laid out again) evaluates nothing the first search evaluated,
// and the second search finds what it finds without a Memo.
func TestMemoReuseNewMax(t *testing.T) {
	type key struct{ job, t, n, c int }
	reused := 0
	for seed := range uint64(10) {
		p := randomPolishProblem(t, seed)
		var mu sync.Mutex
		seen := make(map[key]int)
		wrapSpeedups(&p, func(i int, f speedupFunc) speedupFunc {
			return func(t, nodes, count int) (float64, error) {
				mu.Lock()
				seen[key{i, t, nodes, count}]++
				mu.Unlock()
				return f(t, nodes, count)
			}
		})
		var m Memo
		p.Memo = &m
		solveOnce(t, p, nil)
		first := maps.Clone(seen)

		q := p
		q.Jobs = slices.Clone(p.Jobs)
		for i := range q.Jobs {
			q.Jobs[i].Max += 1 + int(seed)*20 // across memoCounts for some seeds, within it for others
		}
		q.Memo = nil
		want := solveOnce(t, q, nil)
		q.Memo = &m
		clear(seen)
		if got := solveOnce(t, q, nil); got != want {
			t.Fatalf("seed %d: with the memo of the old bounds\n%s\nwant\n%s", seed, got, want)
		}
		for k := range seen {
			if first[k] > 0 {
				t.Fatalf("seed %d: job %d: (type %d, %d nodes, %d devices) evaluated again after its Max changed", seed, k.job, k.t, k.n, k.c)
			}
		}
		reused += len(first)
	}
	if reused == 0 {
		t.Fatal("nothing was evaluated")
	}
}

// TestSpeedsConcurrent: rows that two goroutines grow and fill at once
// hold only the values written, and every value written by the end of
// both is read back or, lost to a concurrent growth, unknown.
func TestSpeedsConcurrent(t *testing.T) {
	sp := newSpeeds(2, 8)
	val := func(t, c int) float64 { return float64(t*1000+c) + 0.5 }
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := 1; c < 2000; c++ {
				typ := (c + g) % 2
				sp.putPacked(typ, c, encode(val(typ, c)))
				sp.near[typ].put(nearNodes*c, encode(val(typ, c)))
				if v, ok := known(sp.near[typ].get(nearNodes * (c / 2))); ok && v != val(typ, c/2) {
					panic(fmt.Sprintf("near %d/%d: read %v", typ, c/2, v)) // not t.Fatal: another goroutine
				}
			}
		}()
	}
	wg.Wait()
	for tt := range 2 {
		for c := 1; c < 2000; c++ {
			var b uint64
			if c < sp.stride {
				b = sp.packed[tt*sp.stride+c].Load()
			} else {
				b = sp.over[tt].get(c - sp.stride)
			}
			if v, ok := known(b); ok && v != val(tt, c) {
				t.Fatalf("type %d, count %d: %v, want %v", tt, c, v, val(tt, c))
			}
		}
	}
}

// TestNodeBoundSameSearch: on speedups that are the same on every node
// count from 2 on, a search told so (Job.NodeBound) finds what a search
// not told finds, asks about no node count above 2 and evaluates fewer
// speedups.
func TestNodeBoundSameSearch(t *testing.T) {
	problems := map[string]Problem{"400 jobs": manyJobsProblem(t, 1, 400)}
	for seed := range uint64(10) {
		problems[fmt.Sprint("polish seed ", seed)] = randomPolishProblem(t, seed)
	}
	allBounded, allUnbounded := 0, 0
	for name, p := range problems {
		wrapSpeedups(&p, func(_ int, f speedupFunc) speedupFunc {
			return func(t, nodes, count int) (float64, error) { return f(t, min(nodes, 2), count) }
		})
		calls := make([]int, len(p.Jobs))
		countCalls(&p, calls)
		want := solveOnce(t, p, nil)
		unbounded := 0
		for _, n := range calls {
			unbounded += n
		}

		p.Jobs = slices.Clone(p.Jobs)
		for i := range p.Jobs {
			p.Jobs[i].NodeBound = 2
			f := p.Jobs[i].Speedup
			p.Jobs[i].Speedup = func(t, nodes, count int) (float64, error) {
				if nodes > 2 {
					return 0, fmt.Errorf("asked about %d nodes", nodes)
				}
				return f(t, nodes, count)
			}
		}
		clear(calls)
		if got := solveOnce(t, p, nil); got != want {
			t.Fatalf("%s: with NodeBound 2\n%s\nwithout\n%s", name, got, want)
		}
		bounded := 0
		for _, n := range calls {
			bounded += n
		}
		if bounded > unbounded {
			t.Errorf("%s: %d evaluations with NodeBound 2, %d without: want no more", name, bounded, unbounded)
		}
		allBounded, allUnbounded = allBounded+bounded, allUnbounded+unbounded
	}
	if allBounded >= allUnbounded {
		t.Errorf("%d evaluations with NodeBound 2, %d without: want fewer", allBounded, allUnbounded)
	}
}
