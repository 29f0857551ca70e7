package pollux

import (
	"math/rand/v2"
	"testing"
)

// TestMovesSurelyMeansApplyFits: whenever movesSurely vouches for moving a
// running job onto another type, apply moves it there, through random
// moves on crowded clusters; and it vouches for most of the moves that
// fit, while some moves it is asked about do not fit.
func TestMovesSurelyMeansApplyFits(t *testing.T) {
	vouched, fitted, failed := 0, 0, 0
	for seed := range uint64(60) {
		e, err := New(crowdedProblem(t, seed, 1100))
		if err != nil {
			t.Fatal(err)
		}
		s := currentState(e)
		rng := rand.New(rand.NewPCG(seed, 13))
		for step := range 300 {
			i := rng.IntN(len(e.jobs))
			j := &e.jobs[i]
			typ := j.allowed[rng.IntN(len(j.allowed))]
			if s.cnt[i] > 0 && s.typ[i] != typ {
				c := 1 + rng.IntN(e.maxOn(j, typ))
				sure := e.movesSurely(s, i, typ, c)
				ok := e.apply(s.clone(), i, typ, c)
				if sure && !ok {
					t.Fatalf("seed %d step %d: movesSurely(job %d onto %d of type %d) but apply fails", seed, step, i, c, typ)
				}
				if sure {
					vouched++
				}
				if ok {
					fitted++
				} else {
					failed++
				}
			}
			e.apply(s, i, typ, rng.IntN(e.maxOn(j, typ)+1))
		}
	}
	// The check means something only if both outcomes occur, and the
	// shortcut pays only if it vouches for most moves that fit.
	if failed < 50 || vouched < fitted*9/10 {
		t.Fatalf("%d moves fit (%d vouched for), %d fail: the instances do not exercise movesSurely", fitted, vouched, failed)
	}
	t.Logf("%d moves fit (%d vouched for), %d fail", fitted, vouched, failed)
}

// TestKeptInSameSearch: the whole search gives the same solutions and
// layouts whether tryTransfer leaves the donors that surely move to
// another type in their heap or takes them out, with and without the
// large-instance probing.
func TestKeptInSameSearch(t *testing.T) {
	kept := 0
	for seed := range uint64(60) {
		p := wideProblem(t, 3000+seed)
		if seed%2 == 1 {
			p = randomPolishProblem(t, 200+seed)
		}
		fast := seed%4 >= 2
		var left *Search
		got := solveOnce(t, p, func(e *Search) { e.fast, left = fast, e })
		kept += left.keptIn
		if want := solveOnce(t, p, func(e *Search) { e.fast, e.eagerTakeOut = fast, true }); got != want {
			t.Fatalf("seed %d: leaving donors in place\n%s\ntaking them out\n%s", seed, got, want)
		}
	}
	// The comparison means something only if donors were left in place.
	if kept < 20 {
		t.Fatalf("%d donors left in place: the instances do not exercise it", kept)
	}
	t.Logf("%d donors left in place", kept)
}
