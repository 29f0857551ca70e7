package scheduler

import (
	"context"
	"time"
)

// Goodput is the Pollux/Sia policy: it maximises the weighted power mean
// of the jobs' speedups over their fair-share baselines, charging Pollux's
// restart factor to jobs whose allocation changes, honouring min/max and
// pinning running non-preemptible jobs. On a heterogeneous cluster every
// job gets one (type, count) configuration, as in Sia. The zero value is
// the paper's configuration (p = −1, δ = 30 s, interference avoidance on).
//
// Goodput is a plain value: safe for concurrent use.
type Goodput struct {
	// Exponent is the power-mean exponent p (≤ 1); 0 = −1, the harmonic
	// mean. Smaller is fairer (−10 is close to max-min).
	Exponent float64
	// Geometric uses p = 0, the geometric mean, instead of Exponent.
	Geometric bool
	// RestartDelay is δ in the restart factor max(age − R·δ, 0)/(age + δ);
	// 0 = 30 s.
	RestartDelay time.Duration
	// AllowInterference lifts the default rule that a node hosts at most
	// one distributed (multi-node) job.
	AllowInterference bool
}

var _ Policy = Goodput{}

// Allocate implements Policy.
func (g Goodput) Allocate(ctx context.Context, in Input) ([]Target, error) {
	x, err := analyze(&in)
	if err != nil {
		return nil, err
	}
	var out []Target
	for i := range x.jobs {
		j := &x.jobs[i]
		if j.curCount > 0 {
			out = append(out, Target{Job: j.job.ID, Type: x.types[j.curType], Count: j.curCount})
		}
	}
	return out, ctx.Err()
}
