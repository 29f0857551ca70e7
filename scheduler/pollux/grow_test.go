package pollux

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGrowInPlaceMatchesPlain: growing jobs in place (growInPlace) leaves
// the state exactly as releasing and assigning them does — slots, bins,
// the order of every bucket (which decides later packings) and the wide
// aggregates — through random growths, other moves, probes, undos and
// clones, with and without aggregates for every job on several bins.
func TestGrowInPlaceMatchesPlain(t *testing.T) {
	grown, fell := 0, 0
	for seed := range uint64(80) {
		p := crowdedProblem(t, seed, 3000)
		for _, slots := range []int{wideSlots, 1} {
			fast, plain := twin(t, p)
			fast.wideSlots, plain.wideSlots = slots, slots
			plain.plainGrow = true
			a, b := currentState(fast), currentState(plain)
			rng := rand.New(rand.NewPCG(seed, 5))
			for step := range 400 {
				i := rng.IntN(len(p.Jobs))
				j := &fast.jobs[i]
				typ := j.allowed[rng.IntN(len(j.allowed))]
				c := rng.IntN(fast.maxOn(j, typ) + 1)
				if a.cnt[i] > 0 && rng.IntN(4) > 0 {
					typ, c = a.typ[i], min(a.cnt[i]+1+rng.IntN(4), fast.maxOn(j, a.typ[i])) // grow on its type
				}
				before := fast.inPlace
				what := "apply"
				switch op := rng.IntN(10); {
				case op < 2:
					n1, ok1 := fast.probe(a, i, typ, c)
					n2, ok2 := plain.probe(b, i, typ, c)
					if n1 != n2 || ok1 != ok2 {
						t.Fatalf("seed %d step %d: probe(%d, %d, %d) = %d %v, plain %d %v", seed, step, i, typ, c, n1, ok1, n2, ok2)
					}
					what = "probe"
				case op < 3 && a.cnt[i] > 0:
					ua := undo{i, a.typ[i], a.cnt[i], a.place[i]}
					ub := undo{i, b.typ[i], b.cnt[i], b.place[i]}
					fast.apply(a, i, typ, c)
					plain.apply(b, i, typ, c)
					fast.undoAll(a, []undo{ua})
					plain.undoAll(b, []undo{ub})
					what = "undo"
				case op < 4 && rng.IntN(3) == 0:
					a, b = a.clone(), b.clone()
					what = "clone"
				default:
					multi := len(a.place[i]) > 1 && a.typ[i] == typ && c > a.cnt[i]
					ok1, ok2 := fast.apply(a, i, typ, c), plain.apply(b, i, typ, c)
					if ok1 != ok2 {
						t.Fatalf("seed %d step %d: apply(%d, %d, %d) = %v, plain %v", seed, step, i, typ, c, ok1, ok2)
					}
					if multi && ok1 {
						if fast.inPlace > before {
							grown++
						} else {
							fell++
						}
					}
				}
				if d := sameState(a, b); d != "" {
					t.Fatalf("seed %d slots %d step %d (%s job %d to %d×%d): %s", seed, slots, step, what, i, c, typ, d)
				}
				if d := checkState(fast, a); d != "" {
					t.Fatalf("seed %d slots %d step %d (%s job %d to %d×%d): %s", seed, slots, step, what, i, c, typ, d)
				}
			}
		}
	}
	// Both ways must have been taken often enough to mean something.
	if grown < 2000 || fell < 50 {
		t.Fatalf("%d growths of jobs on several bins in place, %d released and assigned: too few to compare", grown, fell)
	}
	t.Logf("%d growths in place, %d released and assigned", grown, fell)
}

// TestGrowInPlaceSolveMatchesPlain: the whole search gives the same
// solutions and layouts whether apply grows jobs in place or not.
func TestGrowInPlaceSolveMatchesPlain(t *testing.T) {
	for seed := range uint64(60) {
		p := crowdedProblem(t, seed, 4000)
		plain := solveOnce(t, p, func(e *Search) { e.plainGrow = true })
		for _, slots := range []int{wideSlots, 1, math.MaxInt} {
			if got := solveOnce(t, p, func(e *Search) { e.wideSlots = slots }); got != plain {
				t.Fatalf("seed %d, wide aggregates beyond %d slots: growing in place:\n%s\nplain:\n%s", seed, slots, got, plain)
			}
		}
	}
}

// TestUtilAtCache: utilAt answers what w·u(value) gives, for asks in any
// order (counts that share a cache entry included), and once a speedup
// has failed it keeps evaluating, as value does.
func TestUtilAtCache(t *testing.T) {
	for seed := range uint64(20) {
		p := crowdedProblem(t, seed, 5000)
		e, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 9))
		for range 3000 {
			i := rng.IntN(len(e.jobs))
			j := &e.jobs[i]
			typ := j.allowed[rng.IntN(len(j.allowed))]
			c := 1 + rng.IntN(3*utilWays)
			n := 1 + rng.IntN(c)
			if got, want := e.utilAt(i, typ, n, c), j.w*e.util(e.value(j, typ, n, c)); got != want {
				t.Fatalf("seed %d: utilAt(%d, %d, %d, %d) = %v, want %v", seed, i, typ, n, c, got, want)
			}
		}
	}
	p := randomPolishProblem(t, 3)
	bad := errors.New("bad speedup")
	calls := 0
	p.Jobs[0].Speedup = func(_, _, count int) (float64, error) {
		calls++
		if count == 2 {
			return 0, bad
		}
		return float64(count), nil
	}
	e, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	t0 := e.jobs[0].allowed[0]
	e.utilAt(0, t0, 1, 3)
	e.utilAt(0, t0, 1, 3)
	if calls0 := calls; e.err != nil || calls0 == 0 {
		t.Fatalf("before the bad speedup: error %v, %d calls", e.err, calls0)
	}
	before := calls
	e.utilAt(0, t0, 1, 2)
	e.utilAt(0, t0, 1, 2)
	if !errors.Is(e.err, bad) || calls-before != 2 {
		t.Fatalf("a bad speedup asked twice: error %v, %d calls, want it and 2", e.err, calls-before)
	}
}
