package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// Reasons a GPU of a node is hidden from a round: the values of the
// reason label of goodsched_gpus_hidden, and the words a waiting decision
// uses.
const (
	// HiddenNotReady: the node's Ready condition is not True.
	HiddenNotReady = "not-ready"
	// HiddenCordoned: the node is cordoned (spec.unschedulable); GPUs our
	// running pods hold stay theirs.
	HiddenCordoned = "cordoned"
	// HiddenTaint: the node has a NoSchedule or NoExecute taint that
	// Config.ToleratedTaints does not name; a waiting decision names the
	// taint's key.
	HiddenTaint = "taint"
	// HiddenForeignPods: pods of other schedulers (or of Jobs skipped for
	// malformed annotations) use the GPUs.
	HiddenForeignPods = "foreign-pods"
	// HiddenTerminating: pods being deleted still hold the GPUs.
	HiddenTerminating = "terminating"
	// HiddenUnallocatable: the node's nvidia.com/gpu allocatable is below
	// its capacity (GPUs the device plugin marks unhealthy, or all of them
	// while it restarts).
	HiddenUnallocatable = "unallocatable"
)

// hiddenReasons are the reasons in the order a decision names them.
var hiddenReasons = []string{HiddenNotReady, HiddenCordoned, HiddenTaint, HiddenForeignPods, HiddenTerminating, HiddenUnallocatable}

// hiddenGPUs counts, per GPU type, the GPUs of the cluster's nodes that a
// round does not offer, and why. Every type of a node with GPUs is
// present, with zero counts when nothing of it is hidden.
type hiddenGPUs struct {
	// byType maps a type to its counts per reason.
	byType map[accel.TypeKey]map[string]int
	// taints maps a type to its GPUs hidden by each taint key.
	taints map[accel.TypeKey]map[string]int
}

func newHiddenGPUs() hiddenGPUs {
	return hiddenGPUs{byType: map[accel.TypeKey]map[string]int{}, taints: map[accel.TypeKey]map[string]int{}}
}

// present records that the cluster has GPUs of type t.
func (h hiddenGPUs) present(t accel.TypeKey) {
	if h.byType[t] == nil {
		h.byType[t] = map[string]int{}
	}
}

// add counts n GPUs of type t hidden for reason.
func (h hiddenGPUs) add(t accel.TypeKey, reason string, n int) {
	if n <= 0 {
		return
	}
	h.present(t)
	h.byType[t][reason] += n
}

// addBlocked counts n GPUs of type t hidden because their node takes no
// new pods: cordoned, or tainted with taint.
func (h hiddenGPUs) addBlocked(t accel.TypeKey, reason, taint string, n int) {
	if n <= 0 {
		return
	}
	h.add(t, reason, n)
	if reason == HiddenTaint {
		if h.taints[t] == nil {
			h.taints[t] = map[string]int{}
		}
		h.taints[t][taint] += n
	}
}

// types returns the types present, sorted.
func (h hiddenGPUs) types() []accel.TypeKey { return slices.Sorted(maps.Keys(h.byType)) }

// count returns the GPUs of type t hidden for reason.
func (h hiddenGPUs) count(t accel.TypeKey, reason string) int { return h.byType[t][reason] }

// note says how many GPUs of the given types (none = every type) are
// hidden and why, for a waiting decision: "; hidden: 8 a100-40gb (taint
// node.kubernetes.io/not-ready 8), 4 t4 (not-ready 4)". It is "" when
// none is. GPUs of terminating pods are left out: they are freed within
// a grace period, and counting them would rewrite every waiting Job's
// decision at each eviction.
func (h hiddenGPUs) note(types []accel.TypeKey) string {
	if len(types) == 0 {
		types = h.types()
	}
	var parts []string
	for _, t := range types {
		total := 0
		var why []string
		for _, r := range hiddenReasons {
			n := h.byType[t][r]
			if n == 0 || r == HiddenTerminating {
				continue
			}
			total += n
			if r != HiddenTaint {
				why = append(why, fmt.Sprintf("%s %d", r, n))
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(h.taints[t])) {
				why = append(why, fmt.Sprintf("taint %s %d", k, h.taints[t][k]))
			}
		}
		if total > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", total, t, strings.Join(why, ", ")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; hidden: " + strings.Join(parts, ", ")
}

// nodeBlock says why a Ready node takes no new pods: HiddenCordoned, or
// HiddenTaint with the key of its first NoSchedule or NoExecute taint
// (by key) that tolerated does not name; "" when it takes them.
func nodeBlock(n *corev1.Node, tolerated []string) (reason, taint string) {
	if n.Spec.Unschedulable {
		return HiddenCordoned, ""
	}
	var keys []string
	for _, t := range n.Spec.Taints {
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !slices.Contains(tolerated, t.Key) {
			keys = append(keys, t.Key)
		}
	}
	if len(keys) == 0 {
		return "", ""
	}
	return HiddenTaint, slices.Min(keys)
}

// countNode counts what a Ready node with gpus GPUs of type t hides: on a
// node that takes no new pods, every GPU our running pods (held of them)
// do not hold; else the GPUs of removed (pods of others or terminating
// pods, by device index), and the free GPUs hidden (hid of them) for its
// allocatable shortfall (unallocatable) and for foreign pods.
func (h hiddenGPUs) countNode(n *corev1.Node, tolerated []string, t accel.TypeKey, gpus, held int, removed, terminating map[int]bool, hid, unallocatable int) {
	if reason, taint := nodeBlock(n, tolerated); reason != "" {
		h.addBlocked(t, reason, taint, gpus-held)
		return
	}
	for d := range removed {
		if terminating[d] {
			h.add(t, HiddenTerminating, 1)
		} else {
			h.add(t, HiddenForeignPods, 1)
		}
	}
	short := min(unallocatable, hid)
	h.add(t, HiddenUnallocatable, short)
	h.add(t, HiddenForeignPods, hid-short)
}

// explainWaits appends to each waiting decision (placement.Queue) of ds
// how many GPUs of its job's types the round hides, and why.
func (s *snapshot) explainWaits(ds []scheduler.Decision, byKey map[JobKey]*unit) {
	for i := range ds {
		d := &ds[i]
		u := byKey[JobKey(d.Job)]
		if d.Action != placement.Queue || u == nil {
			continue
		}
		note := s.hidden.note(u.spec.types)
		switch {
		case note == "":
		case d.Message == "":
			d.Message = strings.TrimPrefix(note, "; ")
		default:
			d.Message += note
		}
	}
}

// setOffered sets goodsched_gpus_offered and goodsched_gpus_hidden from
// a round's snapshot: a series for every type of a node with GPUs (and
// every reason), zero included, so that a type whose GPUs are all hidden
// still shows.
func (m *metrics) setOffered(s *snapshot) {
	m.gpusOffered.Reset()
	m.gpusHidden.Reset()
	types := s.hidden.types()
	for t := range s.capacity {
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	for _, t := range types {
		m.gpusOffered.WithLabelValues(string(t)).Set(float64(s.capacity[t]))
		for _, r := range hiddenReasons {
			m.gpusHidden.WithLabelValues(string(t), r).Set(float64(s.hidden.count(t, r)))
		}
	}
}
