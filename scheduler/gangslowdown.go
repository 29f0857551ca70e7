package scheduler

import "github.com/goodsched/goodsched/placement"

// gangSlowdown is how many times longer job's steps take on devs than on
// nominal devices: the largest of their slowdowns, times the locality
// penalty when they span nodes (a synchronous gang runs at its slowest
// device's speed).
func gangSlowdown(sp placement.Speeds, x *placement.Index, job string, devs []string) float64 {
	worst := 0.0
	for _, d := range devs {
		worst = max(worst, sp.Slowdown(job, d))
	}
	if worst == 0 {
		return 1
	}
	if x.NodesOf(devs) > 1 {
		worst *= sp.LocalityPenalty(job)
	}
	return worst
}
