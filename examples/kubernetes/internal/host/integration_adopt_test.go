package host_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// TestIntegrationUpgradeAdoptsUnsignedBindings: pods bound by a goodsched
// that did not sign its bindings (AnnotationDevices, no AnnotationBinding)
// keep their GPUs when a host with binding keys first starts: it creates
// the key's Secret, signs them through pods/status under the RBAC of
// deploy/rbac.yaml, and records the adoption on the Secret. A pod bound
// the old way after that is not adopted: it is evicted as conflicting.
func TestIntegrationUpgradeAdoptsUnsignedBindings(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 4, true))
	ctx := context.Background()
	oldBind := func(job, devices string) string {
		t.Helper()
		var name string
		waitFor(t, 30*time.Second, "the pod of "+job, func() (bool, string) {
			ps := livePods(t, c, job)
			if len(ps) != 1 {
				return false, fmt.Sprintf("%d pods", len(ps))
			}
			name = ps[0].Name
			return true, ""
		})
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Annotations: map[string]string{host.AnnotationDevices: devices}},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n0"}}
		if err := c.Client.CoreV1().Pods(testNS).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return name
	}
	createJobs(t, c, gpuJob("old", 1, 2, nil))
	oldPod := oldBind("old", "0,1")

	h, hctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	sec, err := c.Client.CoreV1().Secrets(host.DefaultLeaseNamespace).Get(ctx, host.DefaultBindingKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := sec.Annotations[host.AnnotationAdoptBindings]; !strings.HasPrefix(a, "done ") || !strings.HasSuffix(a, ": 1 pods") {
		t.Errorf("Secret %s = %q, want done with 1 pod", host.AnnotationAdoptBindings, a)
	}
	p, err := c.Client.CoreV1().Pods(testNS).Get(ctx, oldPod, metav1.GetOptions{})
	if err != nil || p.Annotations[host.AnnotationBinding] == "" {
		t.Fatalf("the old pod after Start: %v, annotations %v", err, p.Annotations)
	}

	// The adopted pod keeps devices 0,1; a new Job gets the other two.
	createJobs(t, c, gpuJob("new", 1, 2, nil))
	driveUntil(t, hctx, h, 30*time.Second, "the new Job bound", func() (bool, string) {
		return boundCount(livePods(t, c, "new")) == 1, ""
	})
	checkDevices(t, c, "old", "new")

	// A pod created bound after the upgrade, as a tenant could plant one:
	// not adopted, so it holds nothing and is evicted as conflicting.
	if err := c.Client.BatchV1().Jobs(testNS).Delete(ctx, "new", metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the new Job's pod gone", func() (bool, string) { return len(allPods(t, c, "new")) == 0, "" })
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: testNS, Annotations: map[string]string{host.AnnotationDevices: "2,3"}},
		Spec: corev1.PodSpec{SchedulerName: host.DefaultSchedulerName, NodeName: "n0", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{host.ResourceGPU: resource.MustParse("2")}}}}}}
	if _, err := c.Client.CoreV1().Pods(testNS).Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, hctx, h, 30*time.Second, "the late unsigned pod evicted", func() (bool, string) {
		p, err := c.Client.CoreV1().Pods(testNS).Get(ctx, "late", metav1.GetOptions{})
		return err != nil || p.DeletionTimestamp != nil, ""
	})
	if ps := livePods(t, c, "old"); len(ps) != 1 || ps[0].Name != oldPod || ps[0].Spec.NodeName != "n0" {
		t.Errorf("the adopted pod after the rounds: %v", ps)
	}
}

func ptr[T any](v T) *T { return &v }
