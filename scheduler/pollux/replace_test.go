package pollux

import (
	"math/rand/v2"
	"testing"
)

// TestReplaceShortcutMatchesFull: probing with the re-place shortcut
// (replaceFails) answers every probe as re-placing the job does and
// leaves the state exactly as it does (slots, bins and the order of every
// bucket), through random probes and moves on crowded clusters.
func TestReplaceShortcutMatchesFull(t *testing.T) {
	taken := 0 // probes the shortcut answered
	for seed := range uint64(80) {
		p := crowdedProblem(t, seed, 500)
		short, full := twin(t, p)
		full.fullReplace = true
		a, b := currentState(short), currentState(full)
		rng := rand.New(rand.NewPCG(seed, 3))
		for step := range 400 {
			i := rng.IntN(len(p.Jobs))
			j := &short.jobs[i]
			typ := j.allowed[rng.IntN(len(j.allowed))]
			c := rng.IntN(short.maxOn(j, typ) + 1)
			if a.typ[i] == typ && a.cnt[i] > 0 && rng.IntN(2) == 0 {
				c = a.cnt[i] + 1 + rng.IntN(4) // grow: the probes that may re-place
			}
			what := "probe"
			if rng.IntN(3) == 0 {
				what = "apply"
				if ok1, ok2 := short.apply(a, i, typ, c), full.apply(b, i, typ, c); ok1 != ok2 {
					t.Fatalf("seed %d step %d: apply(%d, %d, %d) = %v, full %v", seed, step, i, typ, c, ok1, ok2)
				}
			} else {
				n1, ok1 := short.probe(a, i, typ, c)
				n2, ok2 := full.probe(b, i, typ, c)
				if n1 != n2 || ok1 != ok2 {
					t.Fatalf("seed %d step %d: probe(%d, %d, %d) = %d %v, full %d %v", seed, step, i, typ, c, n1, ok1, n2, ok2)
				}
			}
			if d := sameState(a, b); d != "" {
				t.Fatalf("seed %d step %d (%s job %d to %d×%d): %s", seed, step, what, i, c, typ, d)
			}
		}
		taken += short.shortcuts
	}
	// The comparison means something only if the shortcut is taken.
	if taken < 100 {
		t.Fatalf("the shortcut answered %d probes: the instances do not exercise it", taken)
	}
	t.Logf("the shortcut answered %d probes", taken)
}

// TestReplaceShortcutSameSearch: the whole search gives the same
// solutions and layouts with and without the shortcut.
func TestReplaceShortcutSameSearch(t *testing.T) {
	for seed := range uint64(60) {
		p := wideProblem(t, 2000+seed)
		if seed%2 == 1 {
			p = randomPolishProblem(t, 100+seed)
		}
		short := solveOnce(t, p, nil)
		if full := solveOnce(t, p, func(e *Search) { e.fullReplace = true }); short != full {
			t.Fatalf("seed %d: with the shortcut\n%s\nre-placing\n%s", seed, short, full)
		}
	}
}
