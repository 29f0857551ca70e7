package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability"
)

// Variability makes the simulated devices differ in speed (PAL, SC'24)
// and change over time (interference episodes, Chen et al. ICPP-W'20).
// It is the run's ground truth; the scheduler never reads it. Instead the
// simulator keeps a variability.Estimator that starts from Prior, learns
// from the step times the running gangs report once per round (each
// gang's measured step time against its step time on nominal devices),
// and hands its snapshot to the scheduler as Input.Speeds every round.
//
// A gang's steps take its nominal step time × the largest factor among
// its devices (Truth for the job's class, times every Episode in effect
// on the device's node) × LocalityPenalty when it spans nodes.
type Variability struct {
	// Truth holds the devices' factors per application class (nil = all 1).
	Truth *variability.Table
	// ClassOf maps an application to its class (nil = variability.PALClass).
	ClassOf func(app string) string
	// Prior is what the scheduler knows before any report (for example
	// variability.Bin(Truth): PAL's profile); nil = nothing (all 1).
	Prior *variability.Table
	// Episodes slow nodes down for a while; each must name a node of the
	// cluster.
	Episodes []variability.Episode
	// LocalityPenalty is how many times longer the steps of a gang that
	// spans nodes take, on top of the measured profiles' own
	// multi-node cost (0 = 1: none; ≥ 1). The estimator assumes the same.
	LocalityPenalty float64
	// Window is the estimator's window (variability.Options.Window).
	Window int
	// Forget is the estimator's variability.Options.Forget, in rounds (a
	// running gang reports once per round).
	Forget int
	// DeviceSteps has the gangs report each device's own part of the
	// step (variability.Report.DeviceSteps) besides the gang's step time,
	// as a host that times each worker's computation does.
	DeviceSteps bool
}

// speedState is an engine's Variability at run time.
type speedState struct {
	cfg     *Variability
	est     *variability.Estimator
	classOf map[string]string // job → class
	nodeEps [][]variability.Episode
	penalty float64
	reports int
}

func newSpeedState(e *engine) (*speedState, error) {
	v := e.cfg.Variability
	if v == nil {
		return nil, nil
	}
	s := &speedState{cfg: v, classOf: map[string]string{}, nodeEps: make([][]variability.Episode, len(e.cluster.Nodes)), penalty: v.LocalityPenalty}
	if s.penalty == 0 {
		s.penalty = 1
	}
	est, err := variability.NewEstimator(e.cluster, v.Prior, variability.Options{LocalityPenalty: s.penalty, Window: v.Window, Forget: v.Forget})
	if err != nil {
		return nil, fmt.Errorf("%w: Variability: %w", ErrInvalid, err)
	}
	s.est = est
	if v.Truth != nil {
		for _, d := range v.Truth.Devices() {
			if _, ok := e.devIdx[d]; !ok {
				return nil, fmt.Errorf("%w: Variability.Truth: %w: %q", ErrInvalid, variability.ErrUnknownDevice, d)
			}
		}
	}
	node := map[string]int{}
	for i, n := range e.cluster.Nodes {
		node[n.Name] = i
	}
	for k, ep := range v.Episodes {
		i, ok := node[ep.Node]
		if !ok {
			return nil, fmt.Errorf("%w: Variability.Episodes[%d]: %w: node %q", ErrInvalid, k, variability.ErrUnknownDevice, ep.Node)
		}
		if !(ep.Factor > 0) || math.IsInf(ep.Factor, 0) || ep.End < ep.Start {
			return nil, fmt.Errorf("%w: Variability.Episodes[%d]: factor %v, %v–%v", ErrInvalid, k, ep.Factor, ep.Start, ep.End)
		}
		s.nodeEps[i] = append(s.nodeEps[i], ep)
	}
	classOf := v.ClassOf
	if classOf == nil {
		classOf = variability.PALClass
	}
	for _, j := range e.jobs {
		s.classOf[j.spec.Name] = classOf(j.spec.Application)
	}
	return s, nil
}

// speeds returns the round's Input.Speeds (nil without Variability).
func (e *engine) speeds() placement.Speeds {
	if e.speed == nil {
		return nil
	}
	return e.speed.est.Speeds(e.speed.classOf)
}

// gangSlowdown is the ground-truth slowdown of job j's gang now (1
// without Variability). It only reads.
func (e *engine) gangSlowdown(j *job) float64 {
	s := e.speed
	if s == nil || len(j.devs) == 0 {
		return 1
	}
	worst := 0.0
	for _, id := range j.devs {
		worst = max(worst, e.deviceSlowdown(j, id))
	}
	if len(j.nodes) > 1 {
		worst *= s.penalty
	}
	return worst
}

// deviceSlowdown is the ground-truth slowdown of job j on device id now.
func (e *engine) deviceSlowdown(j *job, id string) float64 {
	s := e.speed
	f := s.cfg.Truth.Factor(id, s.classOf[j.spec.Name])
	n, _ := e.device(id)
	for _, ep := range s.nodeEps[n] {
		if t := dur(e.now); ep.Start <= t && t < ep.End {
			f *= ep.Factor
		}
	}
	return f
}

// reportSpeeds has every running gang report its step time of the round
// just simulated to the estimator, as a host's measurement loop would.
func (e *engine) reportSpeeds() error {
	s := e.speed
	if s == nil {
		return nil
	}
	var reps []variability.Report
	for _, j := range e.live {
		if j.done || len(j.devs) == 0 || j.w > 0 || !j.stepOK || !(j.stepT > 0) {
			continue
		}
		base := j.stepT
		r := variability.Report{Job: j.spec.Name, Class: s.classOf[j.spec.Name], Devices: j.devs,
			Base: time.Duration(base * float64(time.Second)), Step: time.Duration(base * e.gangSlowdown(j) * float64(time.Second))}
		if s.cfg.DeviceSteps {
			r.DeviceSteps = make([]time.Duration, len(j.devs))
			for i, id := range j.devs {
				r.DeviceSteps[i] = time.Duration(base * e.deviceSlowdown(j, id) * float64(time.Second))
			}
		}
		reps = append(reps, r)
	}
	s.reports += len(reps)
	if err := s.est.Observe(reps...); err != nil {
		return fmt.Errorf("sim: step-time reports at %v: %w", dur(e.now), err)
	}
	return nil
}
