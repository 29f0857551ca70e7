package sim

import (
	"context"
	"fmt"
)

// Calibration is what a load test of a fixed fleet finds.
type Calibration struct {
	// Scale is the largest trace rate multiple (to 1%) at which the fleet
	// meets the SLO in every window.
	Scale float64
	// ConcurrencyPerReplica is the mean requests in the system per replica
	// in the busiest window at Scale: the per-replica concurrency target a
	// user would configure for a concurrency autoscaler such as Knative's.
	ConcurrencyPerReplica float64
	// Runs is the simulations it took.
	Runs int
}

// Calibrate finds the rate scale at which replicas static replicas of cfg
// (Autoscaler and Profile are ignored) just meet the SLO in every window of
// cfg.Trace scaled with seed: the load a fleet of that size is sized for
// at peak. It doubles the scale from 1/8 until the fleet fails, then
// bisects to 1%.
func Calibrate(ctx context.Context, cfg Config, replicas int, seed uint64) (Calibration, error) {
	if replicas < 1 {
		return Calibration{}, fmt.Errorf("%w: calibrate %d replicas", ErrInvalidConfig, replicas)
	}
	base := cfg.Trace
	cfg.Autoscaler, cfg.Profile, cfg.InitialReplicas = nil, nil, replicas
	cfg.Service.MinReplicas, cfg.Service.MaxReplicas = replicas, replicas
	var cal Calibration
	try := func(k float64) (bool, Result, error) {
		t, err := base.Scale(k, seed)
		if err != nil {
			return false, Result{}, err
		}
		cfg.Trace = t
		cal.Runs++
		res, err := Run(ctx, cfg)
		return err == nil && res.SLOAttainment == 1, res, err
	}
	lo, hi := 0.0, 0.125
	var best Result
	for {
		ok, res, err := try(hi)
		if err != nil {
			return cal, err
		}
		if !ok {
			break
		}
		lo, best = hi, res
		hi *= 2
		if hi > 1e4 {
			return cal, fmt.Errorf("%w: fleet of %d never fails", ErrInvalidConfig, replicas)
		}
	}
	if lo == 0 {
		return cal, fmt.Errorf("%w: %d replicas miss the SLO even at rate ×%v", ErrInvalidConfig, replicas, hi)
	}
	for hi-lo > 0.01*lo {
		mid := (lo + hi) / 2
		ok, res, err := try(mid)
		if err != nil {
			return cal, err
		}
		if ok {
			lo, best = mid, res
		} else {
			hi = mid
		}
	}
	cal.Scale = lo
	busiest := best.Windows[0]
	for _, w := range best.Windows {
		if w.Requests > busiest.Requests {
			busiest = w
		}
	}
	cal.ConcurrencyPerReplica = busiest.Concurrency / float64(replicas)
	return cal, nil
}
