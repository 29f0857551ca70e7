package provision

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// TestGreedyMatchesSchedule: the reused-buffer greedy gives carbon.Schedule's
// Greedy plan, slot for slot (Scale, Lower, Fraction), and agrees on
// infeasibility, on 2,000 random curves (concave and not, with a minimum
// scale), forecasts, horizons, amounts of work and, in half the trials,
// bounds per slot (carbon.ScheduleOptions.SlotMaxScale).
func TestGreedyMatchesSchedule(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 2))
	var g greedy
	for trial := range 2000 {
		L := 1 + rng.IntN(16)
		sp := make([]float64, L)
		v := 0.0
		for k := range sp {
			v += 0.05 + rng.Float64()*(1-0.9*float64(k)/float64(L)) // mostly concave, not always
			sp[k] = v
		}
		c, err := carbon.CurveFromSpeedup(sp, 1, 10+60*rng.Float64(), 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + rng.IntN(48)
		ci := make([]float64, n)
		for i := range ci {
			ci[i] = 20 + 500*rng.Float64()
			if rng.IntN(8) == 0 && i > 0 {
				ci[i] = ci[i-1] // ties
			}
		}
		minScale := 0
		if rng.IntN(4) == 0 {
			minScale = 1 + rng.IntN(c.MaxScale())
		}
		sec := 3600.0
		work := sec * sp[len(sp)-1] * float64(n) * rng.Float64() * 1.1
		pue := 1 + rng.Float64()*0.5
		var bound []int
		if rng.IntN(2) == 0 {
			bound = make([]int, n)
			for i := range bound {
				bound[i] = rng.IntN(c.MaxScale() + 2)
			}
			work *= 0.5
		}
		start := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
		s, err := carbon.Schedule(carbon.Series{Start: start, Step: time.Hour, Values: ci, Unit: carbon.GPerKWh}, c, work,
			start.Add(time.Duration(n)*time.Hour), carbon.ScheduleOptions{MinScale: minScale, PUE: pue, Method: carbon.Greedy, SlotMaxScale: bound})
		ok := g.plan(ci, n, sec, c, minScale, work, pue, bound)
		if err != nil {
			if !errors.Is(err, carbon.ErrInfeasible) || ok {
				t.Fatalf("trial %d: Schedule %v, greedy ok %v", trial, err, ok)
			}
			continue
		}
		if !ok {
			t.Fatalf("trial %d: Schedule found a plan, greedy did not", trial)
		}
		for i, sl := range s.Slots {
			if sl.Scale != g.scale(i) || (sl.Scale > 0 && (sl.Lower != g.lower(i) || math.Abs(sl.Fraction-g.fraction(i)) > 1e-12)) {
				t.Fatalf("trial %d slot %d: Schedule %+v, greedy scale %d lower %d fraction %v", trial, i, sl, g.scale(i), g.lower(i), g.fraction(i))
			}
		}
	}
}
