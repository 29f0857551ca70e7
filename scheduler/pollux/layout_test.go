package pollux

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// markCurrent marks exactly the devices a lookup by ID finds, and finds
// them on its own when Current lists them bin by bin in node and index
// order, as placements do; shuffled, it may give up but never marks
// another job's device.
func TestMarkCurrentMatchesLookup(t *testing.T) {
	gaveUp := 0
	for seed := range uint64(40) {
		p := wideProblem(t, seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		for _, shuffle := range []bool{false, true} {
			q := p
			q.Jobs = slices.Clone(p.Jobs)
			for i := range q.Jobs {
				if shuffle {
					cur := slices.Clone(q.Jobs[i].Current)
					rng.Shuffle(len(cur), func(a, b int) { cur[a], cur[b] = cur[b], cur[a] })
					q.Jobs[i].Current = cur
				}
			}
			e, err := New(q)
			if err != nil {
				t.Fatal(err)
			}
			for i := range e.jobs {
				want := make([]int32, len(e.lay.devNum))
				for _, id := range e.jobs[i].Current {
					if d, ok := e.lay.devNum[id]; ok {
						want[d] = int32(i + 1)
					}
				}
				got := make([]int32, len(want))
				ok := e.markCurrent(got, i)
				if !ok {
					gaveUp++
				}
				if !ok && !shuffle {
					t.Errorf("seed %d: job %d: Current in placement order not marked: %v", seed, i, e.jobs[i].Current)
				}
				for d := range got {
					if (ok && got[d] != want[d]) || (got[d] != 0 && want[d] == 0) {
						t.Fatalf("seed %d shuffled %v: job %d: device %d marked %d, want %d", seed, shuffle, i, d, got[d], want[d])
					}
				}
			}
		}
	}
	if gaveUp == 0 {
		t.Error("no shuffled Current made markCurrent give up")
	}
}
