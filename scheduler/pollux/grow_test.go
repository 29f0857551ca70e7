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
// aggregates — through random growths, other moves, probes, undos,
// clones and resets, with and without aggregates for every job on
// several bins.
func TestGrowInPlaceMatchesPlain(t *testing.T) {
	grown, fell := 0, 0
	for seed := range uint64(80) {
		p := crowdedProblem(t, seed, 3000)
		for _, slots := range []int{wideSlots, 1} {
			fast, plain := twin(t, p)
			fast.wideSlots, plain.wideSlots = slots, slots
			plain.plainGrow = true
			g, f := movesMatch(t, seed, p, fast, plain, true)
			grown, fell = grown+g, fell+f
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
	before := calls
	e.utilAt(0, t0, 1, 3)
	e.utilAt(0, t0, 1, 3)
	if e.err != nil || calls-before != 1 {
		t.Fatalf("a good speedup asked twice: error %v, %d calls, want none and 1", e.err, calls-before)
	}
	before = calls
	e.utilAt(0, t0, 1, 2)
	e.utilAt(0, t0, 1, 2)
	if !errors.Is(e.err, bad) || calls-before != 2 {
		t.Fatalf("a bad speedup asked twice: error %v, %d calls, want it and 2", e.err, calls-before)
	}
}
