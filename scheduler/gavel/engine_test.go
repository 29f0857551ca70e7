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

// TestClassify: jobs drawn from ten distinct rows fall into ten classes,
// each job with a representative equal to it; mostly distinct jobs are a
// class each (classify gives up on classes that would not pay).
func TestClassify(t *testing.T) {
	const n, k = 3000, 3
	rng := rand.New(rand.NewPCG(3, 4))
	rows := make([][]float64, 10)
	for i := range rows {
		rows[i] = []float64{rng.Float64(), rng.Float64(), float64(i % 2)}
	}
	for _, distinct := range []bool{false, true} {
		a, s := make([]float64, n*k), make([]float64, n)
		for m := range n {
			row := rows[rng.IntN(len(rows))]
			if distinct {
				row = []float64{rng.Float64(), rng.Float64(), rng.Float64()}
			}
			copy(a[m*k:], row)
			s[m] = 1
		}
		e := newEngine(n, k, a, s, []float64{1, 1, 1}, nil, nil, nil, true)
		e.classify()
		want := 10
		if distinct {
			want = n
		}
		if len(e.rep) != want {
			t.Fatalf("distinct %v: %d classes, want %d", distinct, len(e.rep), want)
		}
		for m := range n {
			r := int(e.rep[e.cls[m]])
			if !slices.Equal(a[m*k:m*k+k], a[r*k:r*k+k]) || s[m] != s[r] {
				t.Fatalf("distinct %v: job %d in the class of job %d: %v vs %v", distinct, m, r, a[m*k:m*k+k], a[r*k:r*k+k])
			}
		}
	}
}
