package pollux

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGrowthsMatchProbe: growths gives, for a running job, the very
// growths candidates enumerates with the node counts probe gives, and
// leaves the state exactly as those probes leave it (slots, bins and the
// order of every bucket), through random moves on crowded clusters, with
// and without interference avoidance, the aggregates of wide jobs and the
// large-instance probing.
func TestGrowthsMatchProbe(t *testing.T) {
	compared, moved := 0, 0 // growth lists compared; those whose probes re-placed the job
	for seed := range uint64(80) {
		got, want := twin(t, crowdedProblem(t, seed, 700))
		got.fast, want.fast = seed%4 == 2, seed%4 == 2
		if seed%3 == 0 {
			got.wideSlots, want.wideSlots = 1, 1
		}
		a, b := currentState(got), currentState(want)
		rng := rand.New(rand.NewPCG(seed, 5))
		for step := range 300 {
			i := rng.IntN(len(got.jobs))
			if rng.IntN(2) == 0 && got.growing(a, i) {
				var g, w [][2]int
				got.growths(a, i, func(c, n int) { g = append(g, [2]int{c, n}) })
				before := b.clone()
				want.candidates(b, i, true, true, -1, func(t, c int) {
					if n, ok := want.probe(b, i, t, c); ok {
						w = append(w, [2]int{c, n})
					}
				})
				if !slices.Equal(g, w) {
					t.Fatalf("seed %d step %d: job %d grows to %v, probing %v", seed, step, i, g, w)
				}
				if d := sameState(a, b); d != "" {
					t.Fatalf("seed %d step %d: growths of job %d leave %s", seed, step, i, d)
				}
				compared++
				if sameState(before, b) != "" {
					moved++
				}
				continue
			}
			j := &got.jobs[i]
			typ := j.allowed[rng.IntN(len(j.allowed))]
			c := rng.IntN(got.maxOn(j, typ) + 1)
			if a.typ[i] == typ && a.cnt[i] > 0 && rng.IntN(2) == 0 {
				c = a.cnt[i] + 1 + rng.IntN(4)
			}
			if ok1, ok2 := got.apply(a, i, typ, c), want.apply(b, i, typ, c); ok1 != ok2 {
				t.Fatalf("seed %d step %d: apply(%d, %d, %d) = %v, %v", seed, step, i, typ, c, ok1, ok2)
			}
			if d := sameState(a, b); d != "" {
				t.Fatalf("seed %d step %d: apply leaves %s", seed, step, d)
			}
		}
	}
	// The comparison means something only if both kinds of growth occur.
	if compared < 1000 || moved < 20 {
		t.Fatalf("%d growth lists compared, %d with a re-placing probe: the instances do not exercise growths", compared, moved)
	}
	t.Logf("%d growth lists compared, %d with a re-placing probe", compared, moved)
}

// TestCountNewMatchesPack: countNew (and so growths, which counts the
// same bins) gives the number of new bins pack spreads rem devices over,
// next to a job's own bins or none, and fails exactly when pack finds no
// room, through random moves on crowded clusters.
func TestCountNewMatchesPack(t *testing.T) {
	compared := 0
	for seed := range uint64(60) {
		e, err := New(crowdedProblem(t, seed, 900))
		if err != nil {
			t.Fatal(err)
		}
		s := currentState(e)
		rng := rand.New(rand.NewPCG(seed, 7))
		for step := range 200 {
			i := rng.IntN(len(e.jobs))
			j := &e.jobs[i]
			typ := j.allowed[rng.IntN(len(j.allowed))]
			e.apply(s, i, typ, rng.IntN(e.maxOn(j, typ)+1))
			t0 := j.allowed[rng.IntN(len(j.allowed))]
			var own []slot
			if s.typ[i] == t0 {
				own = s.place[i]
			}
			rem := 1 + rng.IntN(s.free[t0]+2)
			n, ok := e.countNew(s, t0, rem, own)
			packed := e.packOn(s, t0, rem, own, false)
			if ok != (packed != nil) || (ok && n != len(packed)) {
				t.Fatalf("seed %d step %d: countNew(%d devices of type %d next to %v) = %d %v, pack gives %v", seed, step, rem, t0, own, n, ok, packed)
			}
			compared++
		}
	}
	t.Logf("%d counts compared", compared)
}
