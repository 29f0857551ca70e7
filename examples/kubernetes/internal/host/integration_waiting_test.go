package host_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// TestIntegrationWaitingPodsSayWhyInPodScheduled: a gang larger than the
// cluster waits, and its pending pods carry PodScheduled=False with reason
// Unschedulable and the decision in the message, as kube-scheduler's do
// (kubectl describe and the Cluster Autoscaler read it); the next rounds
// do not write it again.
func TestIntegrationWaitingPodsSayWhyInPodScheduled(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 4, true))
	createJobs(t, c, gpuJob("big", 2, 4, nil))
	log := &requestLog{}
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, log)})
	var msg string
	driveUntil(t, ctx, h, 30*time.Second, "PodScheduled=False on both pending pods", func() (bool, string) {
		pods := livePods(t, c, "big")
		if len(pods) != 2 {
			return false, fmt.Sprintf("%d pods", len(pods))
		}
		for _, p := range pods {
			cond := podScheduled(&p)
			if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable || !strings.HasPrefix(cond.Message, "goodsched: ") {
				return false, fmt.Sprintf("%s: %+v", p.Name, cond)
			}
			msg = cond.Message
		}
		return true, ""
	})
	t.Logf("PodScheduled message: %s", msg)
	_, before, _ := log.counts()
	for range 3 {
		if _, err := h.RoundOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, after, _ := log.counts(); after != before {
		t.Errorf("%d writes in three unchanged rounds, want none", after-before)
	}
}

func podScheduled(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
