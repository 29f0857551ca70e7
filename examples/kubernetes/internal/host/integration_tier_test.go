package host_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// TestIntegrationTierPremiumKeptBasicPreemptedFirst: a premium Job that
// has started keeps every pod while a burst of standard and basic Jobs
// arrives on a full cluster, and the first Job to lose a pod is a basic
// one (goodsched.io/tier, enforced by the scheduler for every policy).
func TestIntegrationTierPremiumKeptBasicPreemptedFirst(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 4, true), gpuNode("n1", productA100, 4, true))
	elastic := func(tier string, max int) map[string]string {
		return map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: fmt.Sprint(max), host.AnnotationTier: tier}
	}
	// The premium Job is the larger: without tiers the goodput policy
	// shrinks it first to make room.
	createJobs(t, c, gpuJob("prem", 1, 1, elastic("premium", 6)), gpuJob("basic", 1, 1, elastic("basic", 2)))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})

	bound := func(jobs ...string) map[string]int {
		m := map[string]int{}
		for _, j := range jobs {
			m[j] = boundCount(livePods(t, c, j))
		}
		return m
	}
	// The cluster fills and settles: three rounds in a row with the same
	// bound pods, both Jobs running, all 8 GPUs used.
	var last map[string]int
	same := 0
	driveUntil(t, ctx, h, 60*time.Second, "the premium and basic Jobs settled on all 8 GPUs", func() (bool, string) {
		b := bound("prem", "basic")
		if maps.Equal(b, last) {
			same++
		} else {
			same = 0
		}
		last = b
		return same >= 3 && b["prem"] > 0 && b["basic"] > 0 && b["prem"]+b["basic"] == 8, fmt.Sprint(b)
	})
	premPods := map[string]bool{}
	for _, p := range livePods(t, c, "prem") {
		if p.Spec.NodeName != "" {
			premPods[p.Name] = true
		}
	}
	t.Logf("before the burst: %v", last)

	createJobs(t, c, gpuJob("std", 1, 1, elastic("standard", 4)), gpuJob("basic2", 1, 1, elastic("basic", 4)))
	jobs := []string{"prem", "basic", "std", "basic2"}
	prev := bound(jobs...)
	first := ""
	driveUntil(t, ctx, h, 90*time.Second, "both Jobs of the burst running", func() (bool, string) {
		b := bound(jobs...)
		for _, j := range jobs {
			if b[j] < prev[j] && first == "" {
				first = j
			}
		}
		prev = b
		for name := range premPods {
			if !slices.ContainsFunc(livePods(t, c, "prem"), func(p corev1.Pod) bool { return p.Name == name && p.Spec.NodeName != "" }) {
				t.Fatalf("premium pod %s lost its GPU during the burst (bound now %v)", name, b)
			}
		}
		return b["std"] >= 1 && b["basic2"] >= 1, fmt.Sprint(b)
	})
	t.Logf("after the burst: %v; first to lose a pod: %q", prev, first)
	if first != "basic" && first != "basic2" {
		t.Errorf("the first Job to lose a pod is %q, want a basic one", first)
	}
	if prev["prem"] < len(premPods) {
		t.Errorf("the premium Job has %d bound pods, had %d", prev["prem"], len(premPods))
	}
}
