// Package netpredict predicts a job's step time on a candidate node from
// the network and host telemetry the host supplies (bandwidth, round-trip
// time, retransmissions or congestion, CPU load), learned online from the
// step times jobs report, as Timilsina & Shannigrahi (SC'25-W, arXiv
// 2510.21419) predict completion time from telemetry to choose a node. Its
// prediction is a placement score: the lower the predicted step time, the
// better the node (Best).
//
// The model is a ridge regression on features derived from how a data-
// parallel step spends its time: compute slowed by CPU contention, the
// all-reduce volume over the node's bandwidth (inflated by
// retransmissions), and latency-bound synchronisation rounds (DeAR,
// ICDCS'23: how much communication overlaps compute depends on the link,
// so each term gets its own learned weight). Host contract:
//
//  1. For each running job, once per step report (or a batch of them),
//     call Observe with the job's shape, the telemetry of its node at the
//     time, and the measured step time.
//  2. To place a job, call Predict for each candidate's telemetry (or Best).
//
// A Model is not safe for concurrent use; guard it, or keep one per
// goroutine and merge by refitting. Bad telemetry (negative or not finite,
// a load or retransmission fraction ≥ 1) is a typed error
// (ErrTelemetry); nothing panics.
package netpredict

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Errors, wrapped with the offending field: test with errors.Is.
var (
	// ErrTelemetry reports telemetry that is negative, not finite, or a
	// fraction outside [0, 1).
	ErrTelemetry = errors.New("netpredict: bad telemetry")
	// ErrJob reports a job shape that is negative or not finite.
	ErrJob = errors.New("netpredict: bad job")
	// ErrUntrained: Predict before any Observe.
	ErrUntrained = errors.New("netpredict: no observations yet")
)

// Telemetry is what the host measures of one node (or of the slowest link
// a candidate placement uses) now.
type Telemetry struct {
	// BandwidthGbps is the bandwidth the node's traffic gets, Gbit/s (> 0).
	BandwidthGbps float64
	// RTT is the round-trip time to the job's peers.
	RTT time.Duration
	// Retransmits is the fraction of packets retransmitted (or an ECN
	// congestion fraction), in [0, 1).
	Retransmits float64
	// CPULoad is the fraction of the host's CPU busy with other work, in
	// [0, 1).
	CPULoad float64
}

// Validate returns an ErrTelemetry error naming the first bad field.
func (t Telemetry) Validate() error {
	bad := func(name string, v float64) error {
		return fmt.Errorf("%w: %s = %v", ErrTelemetry, name, v)
	}
	switch {
	case !(t.BandwidthGbps > 0) || math.IsInf(t.BandwidthGbps, 0):
		return bad("BandwidthGbps", t.BandwidthGbps)
	case t.RTT < 0:
		return fmt.Errorf("%w: RTT = %v", ErrTelemetry, t.RTT)
	case !(t.Retransmits >= 0 && t.Retransmits < 1):
		return bad("Retransmits", t.Retransmits)
	case !(t.CPULoad >= 0 && t.CPULoad < 1):
		return bad("CPULoad", t.CPULoad)
	}
	return nil
}

// Job is the shape of one step of a data-parallel job.
type Job struct {
	// ComputeSeconds is the step's compute time on an idle host.
	ComputeSeconds float64
	// CommBytes is what one node sends and receives per step (the
	// all-reduce volume).
	CommBytes float64
	// Rounds is how many latency-bound synchronisations a step makes.
	Rounds int
}

func (j Job) validate() error {
	switch {
	case !(j.ComputeSeconds >= 0) || math.IsInf(j.ComputeSeconds, 0):
		return fmt.Errorf("%w: ComputeSeconds = %v", ErrJob, j.ComputeSeconds)
	case !(j.CommBytes >= 0) || math.IsInf(j.CommBytes, 0):
		return fmt.Errorf("%w: CommBytes = %v", ErrJob, j.CommBytes)
	case j.Rounds < 0:
		return fmt.Errorf("%w: Rounds = %d", ErrJob, j.Rounds)
	}
	return nil
}

// NumFeatures is the length of Features' result.
const NumFeatures = 6

// Features returns the model's inputs for job j on telemetry t: compute,
// compute's CPU-contention inflation load/(1−load), transfer time at the
// bandwidth, its retransmission inflation, latency rounds × RTT, and 1.
func Features(j Job, t Telemetry) ([NumFeatures]float64, error) {
	if err := j.validate(); err != nil {
		return [NumFeatures]float64{}, err
	}
	if err := t.Validate(); err != nil {
		return [NumFeatures]float64{}, err
	}
	xfer := j.CommBytes * 8 / (t.BandwidthGbps * 1e9)
	return [NumFeatures]float64{
		j.ComputeSeconds,
		j.ComputeSeconds * t.CPULoad / (1 - t.CPULoad),
		xfer,
		xfer * t.Retransmits / (1 - t.Retransmits),
		float64(j.Rounds) * t.RTT.Seconds(),
		1,
	}, nil
}

// Model is an online ridge regression of step time on Features. The zero
// value is ready.
type Model struct {
	// Ridge is the regularisation strength, relative to the mean squared
	// feature (0 = 1e-6).
	Ridge float64

	xtx [NumFeatures][NumFeatures]float64
	xty [NumFeatures]float64
	n   int
	w   []float64 // solved weights; nil when stale
}

// Observe adds one measured step time of job j on telemetry t.
func (m *Model) Observe(j Job, t Telemetry, step time.Duration) error {
	x, err := Features(j, t)
	if err != nil {
		return err
	}
	if step <= 0 {
		return fmt.Errorf("%w: step time %v", ErrJob, step)
	}
	y := step.Seconds()
	for a := range x {
		for b := range x {
			m.xtx[a][b] += x[a] * x[b]
		}
		m.xty[a] += x[a] * y
	}
	m.n++
	m.w = nil
	return nil
}

// Observations returns how many step times the model has seen.
func (m *Model) Observations() int { return m.n }

func (m *Model) solve() error {
	if m.w != nil {
		return nil
	}
	if m.n == 0 {
		return ErrUntrained
	}
	ridge := m.Ridge
	if ridge == 0 {
		ridge = 1e-6
	}
	// The ridge is relative to the mean diagonal, so that the units of
	// the step time do not decide it, and collinear features (one job
	// shape seen so far) still give a fit.
	scale := 0.0
	for i := 0; i < NumFeatures; i++ {
		scale += m.xtx[i][i] / NumFeatures
	}
	a := mat.NewSymDense(NumFeatures, nil)
	for i := 0; i < NumFeatures; i++ {
		for k := i; k < NumFeatures; k++ {
			a.SetSym(i, k, m.xtx[i][k])
		}
		a.SetSym(i, i, m.xtx[i][i]+ridge*scale+1e-300)
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return fmt.Errorf("netpredict: observations too degenerate to fit")
	}
	var w mat.VecDense
	if err := ch.SolveVecTo(&w, mat.NewVecDense(NumFeatures, m.xty[:])); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) { // ill-conditioned still solves
			return fmt.Errorf("netpredict: %w", err)
		}
	}
	m.w = w.RawVector().Data
	return nil
}

// Predict returns job j's predicted step time on telemetry t. Errors:
// ErrUntrained, ErrJob, ErrTelemetry.
func (m *Model) Predict(j Job, t Telemetry) (time.Duration, error) {
	x, err := Features(j, t)
	if err != nil {
		return 0, err
	}
	if err := m.solve(); err != nil {
		return 0, err
	}
	y := 0.0
	for i, v := range x {
		y += m.w[i] * v
	}
	return time.Duration(min(max(y, 0)*float64(time.Second), math.MaxInt64/2)), nil
}

// Best returns the index of the candidate with the least predicted step
// time (the first on ties). Errors: no candidates (ErrTelemetry), and
// Predict's, naming the candidate.
func (m *Model) Best(j Job, candidates []Telemetry) (int, error) {
	if len(candidates) == 0 {
		return -1, fmt.Errorf("%w: no candidates", ErrTelemetry)
	}
	best, bestT := -1, time.Duration(0)
	for i, c := range candidates {
		p, err := m.Predict(j, c)
		if err != nil {
			return -1, fmt.Errorf("candidate %d: %w", i, err)
		}
		if best < 0 || p < bestT {
			best, bestT = i, p
		}
	}
	return best, nil
}
