package gavel

import (
	"fmt"
	"math"
	"time"
)

// Problem is one allocation instance: M jobs, K accelerator types.
//
// A solution is a matrix X[m][j] of time fractions: job m spends fraction
// X[m][j] of wall-clock time on Scale[m] devices of type j, with
// Σ_j X[m][j] ≤ 1 per job and Σ_m Scale[m]·X[m][j] ≤ Devices[j] per type.
// The job's effective throughput is Σ_j Throughput[m][j]·X[m][j].
//
// A Problem is a plain value; the solver never modifies it, so one
// Problem may be solved from several goroutines at once.
type Problem struct {
	// Throughput[m][j] is job m's throughput (steps per second, of the
	// whole gang of Scale[m] devices) on type j; 0 means the job cannot
	// run there. Every row needs K entries, each 0 or within
	// [MinThroughput, MaxThroughput], and at least one positive entry on a
	// type with ≥ Scale[m] devices.
	Throughput [][]float64
	// Devices[j] is the number of devices of type j (each must be ≥ 1).
	Devices []int
	// Scale[m] is the number of devices job m uses at once (nil = all 1).
	// Types with fewer devices than Scale[m] are not usable by job m.
	Scale []int
	// Weight[m] scales job m's entitlement in fairness objectives: a job
	// of weight 2 is due twice the normalised share (nil = all 1; each
	// must be finite and > 0).
	Weight []float64
	// StepsLeft[m] is the number of steps job m still has to run. Needed by
	// MinMakespan, FinishTimeFairness and SLO rows; nil elsewhere.
	StepsLeft []float64
	// Elapsed[m] is the time since job m arrived (FinishTimeFairness).
	Elapsed []time.Duration
}

// The range of a positive throughput. Values outside it would push time
// shares into subnormal floating point; any per-job unit (steps, samples,
// tokens per second) fits comfortably.
const (
	MinThroughput = 1e-12
	MaxThroughput = 1e12
)

// instance is the validated dense form of a Problem.
type instance struct {
	n, k  int
	a     []float64 // n*k usable throughput (masked by scale)
	scale []float64 // n
	capac []float64 // k
	w     []float64 // n weights
	eq    []float64 // n equal-share throughput E_m
	eqX   []float64 // k equal-share time fraction per type (same for all jobs)
	prop  []float64 // n Gavel's proportional throughput Σ_j a·n_j/N
	iso   []float64 // n Gavel's isolated throughput Σ_j a·n_j/(M·s), rows ≤ 1
}

func (p *Problem) validate() (*instance, error) {
	n, k := len(p.Throughput), len(p.Devices)
	if n == 0 {
		return nil, fmt.Errorf("%w: Throughput has no jobs", ErrInvalid)
	}
	if k == 0 {
		return nil, fmt.Errorf("%w: Devices has no types", ErrInvalid)
	}
	for j, d := range p.Devices {
		if d <= 0 {
			return nil, fmt.Errorf("%w: Devices[%d] = %d", ErrNoDevices, j, d)
		}
	}
	if p.Scale != nil && len(p.Scale) != n {
		return nil, fmt.Errorf("%w: len(Scale) = %d, want %d", ErrInvalid, len(p.Scale), n)
	}
	if p.Weight != nil && len(p.Weight) != n {
		return nil, fmt.Errorf("%w: len(Weight) = %d, want %d", ErrInvalid, len(p.Weight), n)
	}
	if p.StepsLeft != nil && len(p.StepsLeft) != n {
		return nil, fmt.Errorf("%w: len(StepsLeft) = %d, want %d", ErrInvalid, len(p.StepsLeft), n)
	}
	if p.Elapsed != nil && len(p.Elapsed) != n {
		return nil, fmt.Errorf("%w: len(Elapsed) = %d, want %d", ErrInvalid, len(p.Elapsed), n)
	}
	in := &instance{n: n, k: k, a: make([]float64, n*k), scale: make([]float64, n),
		capac: make([]float64, k), w: make([]float64, n), eq: make([]float64, n), eqX: make([]float64, k),
		prop: make([]float64, n), iso: make([]float64, n)}
	for j, d := range p.Devices {
		in.capac[j] = float64(d)
	}
	var totalScale float64
	for m := range n {
		s := 1
		if p.Scale != nil {
			s = p.Scale[m]
			if s <= 0 {
				return nil, fmt.Errorf("%w: Scale[%d] = %d", ErrInvalid, m, s)
			}
		}
		in.scale[m] = float64(s)
		totalScale += float64(s)
		w := 1.0
		if p.Weight != nil {
			w = p.Weight[m]
			if !(w > 0) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("%w: Weight[%d] = %v", ErrInvalid, m, w)
			}
		}
		in.w[m] = w
		if p.StepsLeft != nil {
			if v := p.StepsLeft[m]; !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: StepsLeft[%d] = %v", ErrInvalid, m, v)
			}
		}
		if p.Elapsed != nil && p.Elapsed[m] < 0 {
			return nil, fmt.Errorf("%w: Elapsed[%d] = %v", ErrInvalid, m, p.Elapsed[m])
		}
		row := p.Throughput[m]
		if len(row) != k {
			return nil, fmt.Errorf("%w: len(Throughput[%d]) = %d, want %d", ErrInvalid, m, len(row), k)
		}
		usable := false
		for j, t := range row {
			if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
				return nil, fmt.Errorf("%w: Throughput[%d][%d] = %v", ErrInvalid, m, j, t)
			}
			if t != 0 && (t < MinThroughput || t > MaxThroughput) {
				return nil, fmt.Errorf("%w: Throughput[%d][%d] = %v is outside [%g, %g]; rescale the job's unit",
					ErrInvalid, m, j, t, MinThroughput, MaxThroughput)
			}
			if t > 0 && s <= p.Devices[j] {
				in.a[m*k+j] = t
				usable = true
			}
		}
		if !usable {
			return nil, fmt.Errorf("%w: job %d (scale %d)", ErrZeroRow, m, s)
		}
	}
	// Equal share: every job gets the same time fraction c_j of each type,
	// the largest that fits capacity (Σ_m s_m c_j = n_j), rows scaled to ≤ 1.
	var rowSum float64
	for j := range k {
		in.eqX[j] = in.capac[j] / totalScale
		rowSum += in.eqX[j]
	}
	if rowSum > 1 {
		for j := range k {
			in.eqX[j] /= rowSum
		}
	}
	// Gavel's proportional share (policies/proportional.py, the max-min
	// normaliser): every job gets n_j/N of each type, N = Σ_j n_j. Its
	// isolated share (policies/isolated.py, finish-time fairness): n_j/(M·s_m)
	// of each type, the row scaled down to 1 when it sums to more.
	var totalDev float64
	for _, c := range in.capac {
		totalDev += c
	}
	for m := range n {
		var e, pr, iso, isoRow float64
		for j := range k {
			e += in.a[m*k+j] * in.eqX[j]
			pr += in.a[m*k+j] * in.capac[j] / totalDev
			f := in.capac[j] / (float64(n) * in.scale[m])
			iso += in.a[m*k+j] * f
			isoRow += f
		}
		in.eq[m], in.prop[m], in.iso[m] = e, pr, iso/max(isoRow, 1)
	}
	return in, nil
}

// Validate reports whether the problem is well formed; the error wraps
// ErrInvalid, ErrZeroRow or ErrNoDevices and names the field and index.
func (p Problem) Validate() error {
	_, err := p.validate()
	return err
}

// Blind returns the heterogeneity-blind version of p: every usable
// throughput becomes 1, so all types look alike (Gavel's
// max_min_fairness, the LP analogue of Tiresias' LAS). Evaluate its
// allocations with the original problem's EffectiveThroughput.
func (p Problem) Blind() Problem {
	q := p
	q.Throughput = make([][]float64, len(p.Throughput))
	for m, row := range p.Throughput {
		r := make([]float64, len(row))
		for j, t := range row {
			switch {
			case math.IsNaN(t) || t < 0 || t < MinThroughput && t > 0 || t > MaxThroughput:
				r[j] = t // keep invalid values so validation still reports them
			case t > 0:
				r[j] = 1
			}
		}
		q.Throughput[m] = r
	}
	return q
}

// EffectiveThroughput returns Σ_j Throughput[m][j]·X[m][j] for every job.
// Rows of X that are missing or short count as zero.
func (p Problem) EffectiveThroughput(x [][]float64) []float64 {
	out := make([]float64, len(p.Throughput))
	for m, row := range p.Throughput {
		if m >= len(x) {
			break
		}
		for j, t := range row {
			if j < len(x[m]) {
				out[m] += t * x[m][j]
			}
		}
	}
	return out
}

// EqualShareThroughput returns each job's throughput under the equal-share
// allocation (every job gets the same time fraction of every type, the
// largest that fits): the normaliser of the EqualTimeShares variants.
func (p Problem) EqualShareThroughput() ([]float64, error) {
	in, err := p.validate()
	if err != nil {
		return nil, err
	}
	return in.eq, nil
}

// ProportionalThroughput returns each job's throughput when it gets the
// fraction n_j/N of every type j (N devices in all): Gavel's proportional
// share, the normaliser of its max-min fairness.
func (p Problem) ProportionalThroughput() ([]float64, error) {
	in, err := p.validate()
	if err != nil {
		return nil, err
	}
	return in.prop, nil
}

// IsolatedThroughput returns each job's throughput when it gets the
// fraction n_j/(M·Scale[m]) of every type j (M jobs), scaled down to a
// total of 1 when it sums to more: Gavel's isolated share, 1/M of the
// cluster's devices, the reference of its finish-time fairness.
func (p Problem) IsolatedThroughput() ([]float64, error) {
	in, err := p.validate()
	if err != nil {
		return nil, err
	}
	return in.iso, nil
}

// NormalizedShares returns, for every job, Scale[m] × its effective
// throughput under X divided by its proportional throughput and its
// weight: the quantity Gavel's max-min fairness (MaxMinFairness's
// default) maximises the minimum of. Multiplying by the scale factor makes
// it a share of device-time: a 4-device job reaches the level of a
// 1-device job with a quarter of its time fraction.
func (p Problem) NormalizedShares(x [][]float64) ([]float64, error) {
	in, err := p.validate()
	if err != nil {
		return nil, err
	}
	thr := p.EffectiveThroughput(x)
	for m := range thr {
		thr[m] *= in.scale[m] / (in.w[m] * in.prop[m])
	}
	return thr, nil
}

// EqualTimeShares returns each job's effective throughput under X divided
// by its equal-share throughput and its weight: the quantity the
// EqualTimeShares variant of MaxMinFairness maximises the minimum of
// (every job is due the same time fraction, whatever its scale).
func (p Problem) EqualTimeShares(x [][]float64) ([]float64, error) {
	in, err := p.validate()
	if err != nil {
		return nil, err
	}
	thr := p.EffectiveThroughput(x)
	for m := range thr {
		thr[m] /= in.w[m] * in.eq[m]
	}
	return thr, nil
}

// CheckAllocation reports whether X is a feasible allocation for p within
// the relative tolerance tol: entries ≥ 0, rows sum to ≤ 1, capacity per
// type respected, and no time on a type the job cannot use.
func (p Problem) CheckAllocation(x [][]float64, tol float64) error {
	in, err := p.validate()
	if err != nil {
		return err
	}
	if len(x) != in.n {
		return fmt.Errorf("%w: len(X) = %d, want %d", ErrInvalid, len(x), in.n)
	}
	use := make([]float64, in.k)
	for m, row := range x {
		if len(row) != in.k {
			return fmt.Errorf("%w: len(X[%d]) = %d, want %d", ErrInvalid, m, len(row), in.k)
		}
		var s float64
		for j, v := range row {
			if math.IsNaN(v) || v < -tol {
				return fmt.Errorf("%w: X[%d][%d] = %v", ErrInvalid, m, j, v)
			}
			if v > tol && in.a[m*in.k+j] == 0 {
				return fmt.Errorf("%w: X[%d][%d] = %v on an unusable type", ErrInvalid, m, j, v)
			}
			s += v
			use[j] += in.scale[m] * v
		}
		if s > 1+tol {
			return fmt.Errorf("%w: row X[%d] sums to %v", ErrInvalid, m, s)
		}
	}
	for j, u := range use {
		if u > in.capac[j]*(1+tol) {
			return fmt.Errorf("%w: type %d uses %v of %v devices", ErrInvalid, j, u, in.capac[j])
		}
	}
	return nil
}
