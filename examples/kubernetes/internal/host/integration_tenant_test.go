package host_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

// tenantNS is the namespace of another tenant, whose pods the host must
// not trust.
const tenantNS = "tenant-b"

func createNamespace(t *testing.T, c *testcluster.Cluster, name string) {
	t.Helper()
	if _, err := c.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// foreignPod creates a pod of another scheduler already on node (as a
// kubelet-bound or statically placed pod is), asking for gpus GPUs and
// carrying ann.
func foreignPod(t *testing.T, c *testcluster.Cluster, ns, name, node string, gpus int, ann map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if gpus > 0 {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	}
	out, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func allDevices(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return strings.Join(s, ",")
}

// TestTenantForeignAnnotationsNeitherEvictNorOvercommit (issue 41, item 1):
// another tenant's pods, in another namespace and of another scheduler,
// carry goodsched.io/devices annotations that name a running
// non-preemptible job's GPUs (a 0-GPU pod claiming a whole node) or too
// few GPUs (an 8-GPU pod claiming one). The host counts them by what they
// request: the running job is not evicted, the 0-GPU pod hides nothing and
// the 8-GPU pod's node offers nothing, so a 6-GPU job lands beside the
// running one.
func TestTenantForeignAnnotationsNeitherEvictNorOvercommit(t *testing.T) {
	c := startCluster(t)
	createNamespace(t, c, tenantNS)
	createNodes(t, c, gpuNode("n0", productA100, 8, false), gpuNode("n1", productA100, 8, false))
	// The 8-GPU foreign pod fills n1 first, honestly counted.
	foreignPod(t, c, tenantNS, "fills-n1", "n1", 8, map[string]string{host.AnnotationDevices: "0"})
	createJobs(t, c, gpuJob("victim", 1, 2, map[string]string{host.AnnotationPreemptible: "false"}))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	driveUntil(t, ctx, h, 30*time.Second, "victim bound", func() (bool, string) {
		pods := livePods(t, c, "victim")
		return len(pods) == 1 && pods[0].Spec.NodeName != "", fmt.Sprint(nodesOf(pods))
	})
	victim := livePods(t, c, "victim")[0]
	if victim.Spec.NodeName != "n0" {
		t.Fatalf("victim bound on %s, want n0 (n1's 8 GPUs are used by a foreign pod)", victim.Spec.NodeName)
	}
	// The attack: a 0-GPU pod on n0 claiming all of n0's devices.
	foreignPod(t, c, tenantNS, "claims-n0", "n0", 0, map[string]string{host.AnnotationDevices: allDevices(8)})
	time.Sleep(300 * time.Millisecond) // let the informers see it
	for i := range 3 {
		r, err := h.RoundOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Evictions != 0 {
			t.Errorf("round %d evicted %d pods after a foreign pod's annotation", i, r.Evictions)
		}
	}
	if pods := livePods(t, c, "victim"); len(pods) != 1 || pods[0].UID != victim.UID {
		t.Fatalf("the non-preemptible victim was evicted: live %v", nodesOf(pods))
	}
	// n0 still offers its 6 free GPUs, n1 none: a 6-GPU gang lands on n0.
	createJobs(t, c, gpuJob("probe", 1, 6, nil))
	driveUntil(t, ctx, h, 30*time.Second, "probe bound", func() (bool, string) {
		pods := livePods(t, c, "probe")
		return len(pods) == 1 && pods[0].Spec.NodeName != "", fmt.Sprint(nodesOf(pods))
	})
	if n := livePods(t, c, "probe")[0].Spec.NodeName; n != "n0" {
		t.Errorf("the 6-GPU probe went to %s, want n0 (n1 is full: an overcommit)", n)
	}
	if pods := livePods(t, c, "victim"); len(pods) != 1 || pods[0].UID != victim.UID {
		t.Errorf("the victim did not survive: %v", nodesOf(pods))
	}
	checkDevices(t, c, "victim", "probe")
}

// TestTenantHugeDevicesAnnotationIsRefused (issue 41, item 3): a tenant
// rewrites the goodsched.io/devices annotation of its own bound pods to
// 250 KiB values, on 20 pods. The host refuses each by the length cap (a
// counted, logged reason) instead of parsing it, and another tenant's
// running job is untouched. The round's time is logged; the parse itself
// is measured by BenchmarkParseDevices250KiB.
func TestTenantHugeDevicesAnnotationIsRefused(t *testing.T) {
	c := startCluster(t)
	createNamespace(t, c, tenantNS)
	createNodes(t, c, gpuNode("n0", productA100, 8, false), gpuNode("n1", productA100, 8, false),
		gpuNode("n2", productA100, 8, false))
	createJobs(t, c, gpuJob("victim", 1, 2, map[string]string{host.AnnotationPreemptible: "false"}))
	// The tenant's pod group of 20 one-GPU pods.
	ctx := context.Background()
	for i := range 20 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Namespace: testNS,
			Labels: map[string]string{host.LabelGroup: "big"}}, Spec: gpuJob("x", 1, 1, nil).Spec.Template.Spec}
		if _, err := c.Client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h, hctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	driveUntil(t, hctx, h, 30*time.Second, "victim and group bound", func() (bool, string) {
		l, err := c.Client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: host.LabelGroup + "=big"})
		if err != nil {
			return false, err.Error()
		}
		return boundCount(livePods(t, c, "victim")) == 1 && boundCount(l.Items) == 20, fmt.Sprintf("%d of the group bound", boundCount(l.Items))
	})
	victim := livePods(t, c, "victim")[0]
	// 250 KiB of distinct indices: quadratic to check for duplicates.
	var b strings.Builder
	for i := 0; b.Len() < 250<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	huge := b.String()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, host.AnnotationDevices, huge)
	for i := range 20 {
		if _, err := c.Client.CoreV1().Pods(testNS).Patch(ctx, fmt.Sprintf("big-%d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	r, err := h.RoundOnce(hctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("round with 20 pods carrying a %d-byte %s: %v (snapshot %v)", len(huge), host.AnnotationDevices, r.Duration, r.Snapshot)
	if got := metricValue(t, h, "goodsched_refused_total", `reason="annotation-too-long"`); got < 20 {
		t.Errorf("refusals counted for the too-long annotation: %v, want ≥ 20", got)
	}
	if pods := livePods(t, c, "victim"); len(pods) != 1 || pods[0].UID != victim.UID {
		t.Errorf("the other tenant's job did not survive: %v", nodesOf(pods))
	}
}

// metricValue returns the value of the host's metric name with the label
// pair, or 0 when absent.
func metricValue(t *testing.T, h *host.Host, name, label string) float64 {
	t.Helper()
	mfs, err := h.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(label, "=")
	v = strings.Trim(v, `"`)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// TestTenantRBACSchedulerUserCannotTouchOtherTenants (issue 41, item 4):
// acting as the scheduler's user, holding exactly what deploy/rbac.yaml
// and deploy/report-rbac.yaml grant the ServiceAccount (and
// deploy/namespace-rbac.yaml in the opted-in namespace "default"), each
// action the review found possible is forbidden by the real API server:
// changing a pod's image, unsuspending or resizing a Job of a namespace
// that did not opt in, reading ConfigMaps outside the scheduler's
// namespace, updating a training namespace's ConfigMap, updating Events,
// reading Secrets, creating pods, patching nodes. Every write is a
// server-side dry run, so the API server authorises it and changes
// nothing.
func TestTenantRBACSchedulerUserCannotTouchOtherTenants(t *testing.T) {
	c := startCluster(t)
	grantRBAC(t, c, "scheduler", "../../deploy/report-rbac.yaml")
	createNamespace(t, c, tenantNS)
	ctx := context.Background()
	createNodes(t, c, gpuNode("n0", productA100, 8, false))
	victimJob := gpuJob("other", 1, 1, nil)
	victimJob.Namespace = tenantNS
	suspend := true
	victimJob.Spec.Suspend = &suspend
	createJobs(t, c, victimJob)
	p := foreignPod(t, c, tenantNS, "web", "n0", 0, nil)
	if _, err := c.Client.CoreV1().ConfigMaps(tenantNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "train-config"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := schedulerClient(t, c, &requestLog{})
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	image := fmt.Appendf(nil, `{"spec":{"containers":[{"name":"c","image":"evil"}]}}`)
	forbidden := map[string]func() error{
		"patch a pod's image in another namespace": func() error {
			_, err := cs.CoreV1().Pods(tenantNS).Patch(ctx, p.Name, types.StrategicMergePatchType, image, dry)
			return err
		},
		"patch a pod's image in an opted-in namespace": func() error {
			_, err := cs.CoreV1().Pods(testNS).Patch(ctx, "any", types.StrategicMergePatchType, image, dry)
			return err
		},
		"unsuspend a Job that did not opt in": func() error {
			_, err := cs.BatchV1().Jobs(tenantNS).Patch(ctx, "other", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), dry)
			return err
		},
		"resize a Job that did not opt in": func() error {
			_, err := cs.BatchV1().Jobs(tenantNS).Patch(ctx, "other", types.MergePatchType, []byte(`{"spec":{"parallelism":8}}`), dry)
			return err
		},
		"list the ConfigMaps of the cluster": func() error {
			_, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
			return err
		},
		"get another namespace's ConfigMap": func() error {
			_, err := cs.CoreV1().ConfigMaps(tenantNS).Get(ctx, "app-config", metav1.GetOptions{})
			return err
		},
		"get a kube-system ConfigMap": func() error {
			_, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
			return err
		},
		"update a training namespace's ConfigMap": func() error {
			_, err := cs.CoreV1().ConfigMaps(testNS).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "train-config", Namespace: testNS}},
				metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"create a ConfigMap in a training namespace": func() error {
			_, err := cs.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"update an Event": func() error {
			_, err := cs.EventsV1().Events(testNS).Update(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: testNS}},
				metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"list Secrets": func() error {
			_, err := cs.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
			return err
		},
		"get a Secret of its own namespace other than its key": func() error {
			_, err := cs.CoreV1().Secrets(host.DefaultLeaseNamespace).Get(ctx, "goodsched-report-tls", metav1.GetOptions{})
			return err
		},
		"create a pod": func() error {
			_, err := cs.CoreV1().Pods(tenantNS).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"patch a node": func() error {
			_, err := cs.CoreV1().Nodes().Patch(ctx, "n0", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), dry)
			return err
		},
	}
	for _, what := range slices.Sorted(maps.Keys(forbidden)) {
		err := forbidden[what]()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		} else {
			t.Logf("forbidden: %s", what)
		}
	}
	// What the code does call stays allowed.
	allowed := map[string]func() error{
		"patch a Job of an opted-in namespace": func() error {
			createJobs(t, c, gpuJob("mine", 1, 1, nil))
			_, err := cs.BatchV1().Jobs(testNS).Patch(ctx, "mine", types.MergePatchType, []byte(`{"spec":{"parallelism":2}}`), dry)
			return err
		},
		"patch a pod's status (PodScheduled, a group's target)": func() error {
			_, err := cs.CoreV1().Pods(tenantNS).Patch(ctx, p.Name, types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"goodsched.io/target-replicas":"2"}}}`), dry, "status")
			return err
		},
	}
	for _, what := range slices.Sorted(maps.Keys(allowed)) {
		if err := allowed[what](); err != nil {
			t.Errorf("%s: %v, want allowed", what, err)
		}
	}
}
