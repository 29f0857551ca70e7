package goodput

import (
	"fmt"
	"math"
)

// NoiseScale estimates GradStats from the gradients a training step
// computes, for hosts that run the arithmetic in Go (Pollux's
// GradientNoiseScale). Each step supplies the mean squared norm of the
// individual micro-batch gradients (one per replica and accumulation pass)
// and the squared norm of their average. With count = replicas × passes
// gradients at total batch M (scale = M/M0):
//
//	sqr = (count·|ḡ|² − mean|gᵢ|²) / (count − 1)
//	var = (mean|gᵢ|² − |ḡ|²) · scale / (count − 1)
//
// are unbiased estimates of |g|² and of tr(Σ) at batch M0. Both are smoothed
// by an exponential moving average with factor Theta^scale, bias-corrected
// by the accumulated weight, and floored (var ≥ 1e-6, sqr ≥ 0). A step with
// a single gradient (count = 1) cannot be estimated that way; Pollux then
// differences consecutive steps, which the host can do by passing the
// previous and the current gradient as a count-2 step.
//
// The zero value is ready to use with Theta = 0.999. A NoiseScale is not
// safe for concurrent use.
type NoiseScale struct {
	// Theta is the per-unit-scale EMA factor; 0 means 0.999.
	Theta float64

	sqrAvg, varAvg float64 // biased EMAs
	weight         float64 // 1 − Π factors: the bias correction
}

// ErrNoiseScale is wrapped by NoiseScale.Update's errors.
var ErrNoiseScale = fmt.Errorf("%w (noise scale step)", ErrInvalidGrad)

// Update folds one step into the averages: meanLocalSqr is the mean of
// the count individual gradients' squared norms, totalSqr the squared norm
// of their average, and scale the step's batch over M0 (≥ 1 for adaptive
// jobs; any positive value is accepted). A step whose estimates overflow
// float64 is rejected and leaves the averages unchanged.
func (ns *NoiseScale) Update(meanLocalSqr, totalSqr float64, count int, scale float64) error {
	switch {
	case count < 2:
		return fmt.Errorf("%w: count = %d, want ≥ 2", ErrNoiseScale, count)
	case !finite(meanLocalSqr) || meanLocalSqr < 0:
		return fmt.Errorf("%w: meanLocalSqr = %v", ErrNoiseScale, meanLocalSqr)
	case !finite(totalSqr) || totalSqr < 0:
		return fmt.Errorf("%w: totalSqr = %v", ErrNoiseScale, totalSqr)
	case !finite(scale) || scale <= 0:
		return fmt.Errorf("%w: scale = %v", ErrNoiseScale, scale)
	}
	c := float64(count)
	sqr := (c*totalSqr - meanLocalSqr) / (c - 1)
	vr := (meanLocalSqr - totalSqr) * scale / (c - 1)
	theta := ns.Theta
	if theta <= 0 || theta >= 1 || math.IsNaN(theta) {
		theta = 0.999
	}
	f := math.Pow(theta, scale)
	sqrAvg := f*ns.sqrAvg + (1-f)*sqr
	varAvg := f*ns.varAvg + (1-f)*vr
	if !finite(sqrAvg) || !finite(varAvg) {
		// Norms near the float64 range overflow the estimates; keep the
		// averages as they were rather than poison every later Stats.
		return fmt.Errorf("%w: estimates overflow (meanLocalSqr %v, totalSqr %v, count %d, scale %v)", ErrNoiseScale, meanLocalSqr, totalSqr, count, scale)
	}
	ns.sqrAvg, ns.varAvg = sqrAvg, varAvg
	ns.weight = f*ns.weight + (1 - f)
	return nil
}

// Reset forgets every step (Pollux resets when the job switches between
// differenced and multi-gradient estimates).
func (ns *NoiseScale) Reset() { ns.sqrAvg, ns.varAvg, ns.weight = 0, 0, 0 }

// Stats returns the bias-corrected, floored estimates; false before the
// first Update.
func (ns *NoiseScale) Stats() (GradStats, bool) {
	if ns.weight <= 0 {
		return GradStats{}, false
	}
	return GradStats{
		Sqr: math.Max(ns.sqrAvg/ns.weight, 0),
		Var: math.Max(ns.varAvg/ns.weight, 1e-6),
	}, true
}
