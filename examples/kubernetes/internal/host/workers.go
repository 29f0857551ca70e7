package host

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// This file holds what the host does for W-jobs (AnnotationWorkers): the
// checks of their gangs, the workers each bound pod hosts (read back from
// AnnotationPodWorkers, written from the plan's Assignment.Workers) and
// the model that lets them mix GPU types.

// podWorkers reads a bound pod's AnnotationPodWorkers: 0 when absent or
// not a positive integer.
func podWorkers(p *corev1.Pod) int {
	v, ok := p.Annotations[AnnotationPodWorkers]
	if !ok || len(v) > 8 {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// checkGang checks a unit's nb bound pods (u.pods[:nb]) against its
// logical workers: a W-job holds at most W GPUs and a rigid W-job's gang
// needs no more than W; only a W-job's pods may sit on nodes of several
// GPU types (typeOf gives a node's). Errors wrap ErrAnnotation and name
// the annotation.
func checkGang(u *unit, nb int, typeOf func(node string) accel.TypeKey) error {
	w := u.spec.workers
	if w == 0 {
		var first accel.TypeKey
		for k, p := range u.pods[:nb] {
			t := typeOf(p.node)
			if k > 0 && t != first {
				return fmt.Errorf("%w: its pods run on %s and %s nodes, which only a job with %s may", ErrAnnotation, first, t, AnnotationWorkers)
			}
			first = t
		}
		return nil
	}
	if u.spec.kind == scheduler.Rigid && u.size > w {
		return fmt.Errorf("%w: %s=%d: fewer logical workers than the gang's %d pods", ErrAnnotation, AnnotationWorkers, w, u.size)
	}
	if len(u.held) > w {
		return fmt.Errorf("%w: %s=%d: fewer logical workers than the %d GPUs its running pods hold", ErrAnnotation, AnnotationWorkers, w, len(u.held))
	}
	return nil
}

// heldWorkers returns the logical workers each device of u.held (sorted)
// hosts, from its nb bound pods' AnnotationPodWorkers, or nil unless
// every one says a count and they sum to W (a pod lost with its node, an
// annotation edited by hand, a patch not seen yet): the scheduler then
// spreads W evenly over the devices, and the round's plan rewrites the
// pods' counts.
func heldWorkers(u *unit, nb int) []int {
	w := u.spec.workers
	if w == 0 {
		return nil
	}
	per := make(map[string]int, len(u.held))
	sum := 0
	for _, p := range u.pods[:nb] {
		if p.workers < 1 || len(p.devices) != 1 {
			return nil
		}
		per[deviceID(p.node, p.devices[0])] = p.workers
		sum += p.workers
	}
	if sum != w {
		return nil
	}
	out := make([]int, len(u.held))
	for k, id := range u.held {
		out[k] = per[id]
	}
	return out
}

// workerShare is what one pod of a W-job hosts: count logical workers,
// ranks first..first+count-1.
type workerShare struct {
	count, first int
}

// ranks is AnnotationPodWorkerRanks' value.
func (s workerShare) ranks() string {
	return strconv.Itoa(s.first) + "-" + strconv.Itoa(s.first+s.count-1)
}

// says reports whether the pod's annotations already say s.
func (s workerShare) says(p *corev1.Pod) bool {
	return p.Annotations[AnnotationPodWorkers] == strconv.Itoa(s.count) && p.Annotations[AnnotationPodWorkerRanks] == s.ranks()
}

// deviceShares maps each device of a W-job's decision to its share: the
// Assignment's Workers, ranks numbered in the Assignment's device order.
// nil when the decision has no workers per device (not a W-job, or it
// does not run).
func deviceShares(d scheduler.Decision) map[string]workerShare {
	a := d.Assignment
	if len(a.Workers) != len(a.Devices) || len(a.Devices) == 0 {
		return nil
	}
	out := make(map[string]workerShare, len(a.Devices))
	first := 0
	for k, id := range a.Devices {
		out[id] = workerShare{count: a.Workers[k], first: first}
		first += a.Workers[k]
	}
	return out
}

// evenWorkers is the model of a W-job the host has no measured model for:
// a worker takes as long on every GPU type of the cluster (one second, no
// synchronisation time), so the policies split W over a gang in
// proportion to its devices and grow it while that shortens the busiest
// device's share. It is a goodput.WorkerModel, so the job may mix types.
func evenWorkers(workers int, types []accel.TypeKey) (*goodput.WorkerModel, error) {
	models := make(map[string]goodput.Model, len(types))
	for _, t := range types {
		models[string(t)] = goodput.Model{Params: goodput.Params{AlphaC: 1, Gamma: 1}}
	}
	return goodput.NewWorkerModel(goodput.WorkerConfig{Workers: workers, Local: 1, Models: models})
}

// sharesText is a W-job's gang of several types in words, for Events:
// "2 a100-40gb (5 workers) + 2 t4 (3 workers)".
func sharesText(shares []placement.Share) string {
	parts := make([]string, len(shares))
	for k, s := range shares {
		parts[k] = fmt.Sprintf("%d %s (%d workers)", s.Count, s.Type, s.Workers)
	}
	return strings.Join(parts, " + ")
}
