package gavel

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// crossingBySort is the obvious reference for crossing.
func crossingBySort(ev []event, slope, thMax float64) float64 {
	ev = slices.Clone(ev)
	slices.SortFunc(ev, func(a, b event) int {
		switch {
		case a.theta < b.theta:
			return -1
		case a.theta > b.theta:
			return 1
		}
		return 0
	})
	for i := 0; i < len(ev); {
		th := ev[i].theta
		if th >= thMax {
			break
		}
		for ; i < len(ev) && ev[i].theta == th; i++ {
			slope += ev[i].delta
		}
		if slope >= 1 {
			return th
		}
	}
	return thMax
}

func TestCrossingMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for trial := range 2000 {
		n := rng.IntN(40)
		ev := make([]event, n)
		for i := range ev {
			ev[i] = event{theta: float64(rng.IntN(12)) / 4, delta: rng.Float64() / 8} // many ties
			if trial%2 == 0 {
				ev[i].theta = rng.Float64() * 3
			}
		}
		slope := rng.Float64() * 0.5
		thMax := 0.5 + 3*rng.Float64()
		want := crossingBySort(ev, slope, thMax)
		if got := crossing(slices.Clone(ev), slope, thMax); got != want {
			t.Fatalf("trial %d: crossing %v, sort %v (%v, slope %v, max %v)", trial, got, want, ev, slope, thMax)
		}
	}
}
