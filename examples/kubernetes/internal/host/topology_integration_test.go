package host_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// The node labels of deploy/topology.yaml's levels.
const (
	labelBlock = "cloud.provider.com/topology-block"
	labelRack  = "cloud.provider.com/topology-rack"
)

// setupTopology grants deploy/topology.yaml's Role to the user
// "scheduler", creates its ConfigMap (checked to parse) and nodes of 4
// A100s, nodesPerRack per rack, racks r1..rN in one block. It returns the
// rack of each node.
func setupTopology(t *testing.T, c *testcluster.Cluster, racks, nodesPerRack int) map[string]string {
	t.Helper()
	const file = "../../deploy/topology.yaml"
	grantRBAC(t, c, "scheduler", file)
	for _, cm := range configMapsIn(t, file) {
		if _, err := host.ParseTopologyConfig(&cm); err != nil {
			t.Fatalf("deploy/topology.yaml's ConfigMap: %v", err)
		}
		if _, err := c.Client.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), &cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rackOf := map[string]string{}
	var nodes []*corev1.Node
	for r := 1; r <= racks; r++ {
		for i := 0; i < nodesPerRack; i++ {
			name := fmt.Sprintf("r%d-n%d", r, i)
			n := gpuNode(name, productA100, 4, true)
			n.Labels[labelBlock] = "b1"
			n.Labels[labelRack] = fmt.Sprintf("r%d", r)
			rackOf[name] = n.Labels[labelRack]
			nodes = append(nodes, n)
		}
	}
	createNodes(t, c, nodes...)
	return rackOf
}

// racksOf counts a Job's bound pods per rack.
func racksOf(t *testing.T, c *testcluster.Cluster, rackOf map[string]string, job string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, p := range livePods(t, c, job) {
		if p.Spec.NodeName != "" {
			m[rackOf[p.Spec.NodeName]]++
		}
	}
	return m
}

func boundNames(t *testing.T, c *testcluster.Cluster, job string) []string {
	t.Helper()
	var out []string
	for _, p := range livePods(t, c, job) {
		if p.Spec.NodeName != "" {
			out = append(out, p.Name+"@"+p.Spec.NodeName)
		}
	}
	return out
}

// TestIntegrationTopologyRequiredRackPreferredSpillPreemptionFreesRack:
// two racks of 2 nodes × 4 GPUs labelled as deploy/topology.yaml's levels
// say, FIFO (which never preempts by itself). Two 6-pod gangs with
// goodsched.io/topology-required: rack each run inside one rack, 2 GPUs
// left free in each. A 4-pod required-rack gang of higher priority fits
// the free count but no rack: the placer evicts the 6-pod gang that is
// preemptible (the other says goodsched.io/preemptible: "false"), which
// frees its rack, and the new gang runs inside it while the other gang
// keeps every pod; the victim waits, as no rack can hold it. Then a
// 5-pod gang with goodsched.io/topology-preferred: rack spills over: 4 in
// the freest rack, 1 in the other.
func TestIntegrationTopologyRequiredRackPreferredSpillPreemptionFreesRack(t *testing.T) {
	c := startCluster(t)
	rackOf := setupTopology(t, c, 2, 2)
	required := func(prio int) map[string]string {
		return map[string]string{host.AnnotationTopologyRequired: labelRack, host.AnnotationPriority: fmt.Sprint(prio)}
	}
	protected := required(0)
	protected[host.AnnotationPreemptible] = "false"
	createJobs(t, c, gpuJob("req-a", 6, 1, protected), gpuJob("req-b", 6, 1, required(0)))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{}),
		Scheduler:         scheduler.Config{Policy: baselines.FIFO{}},
		TopologyConfigMap: host.DefaultLeaseNamespace + "/goodsched-topology"})

	oneRack := func(m map[string]int, pods int) bool { return len(m) == 1 && slices.Collect(maps.Values(m))[0] == pods }
	driveUntil(t, ctx, h, 90*time.Second, "both required-rack gangs bound, each inside one rack", func() (bool, string) {
		a, b := racksOf(t, c, rackOf, "req-a"), racksOf(t, c, rackOf, "req-b")
		return oneRack(a, 6) && oneRack(b, 6), fmt.Sprintf("req-a %v, req-b %v", a, b)
	})
	checkDevices(t, c, "req-a", "req-b")
	before := map[string][]string{"req-a": boundNames(t, c, "req-a"), "req-b": boundNames(t, c, "req-b")}
	t.Logf("required-rack gangs: req-a %v, req-b %v", racksOf(t, c, rackOf, "req-a"), racksOf(t, c, rackOf, "req-b"))

	// Preemption that frees one rack.
	createJobs(t, c, gpuJob("urgent", 4, 1, required(10)))
	var victim, kept string
	driveUntil(t, ctx, h, 90*time.Second, "the urgent gang bound inside one rack", func() (bool, string) {
		u := racksOf(t, c, rackOf, "urgent")
		return oneRack(u, 4), fmt.Sprintf("urgent %v, req-a %v, req-b %v", u, racksOf(t, c, rackOf, "req-a"), racksOf(t, c, rackOf, "req-b"))
	})
	for _, j := range []string{"req-a", "req-b"} {
		if slices.Equal(boundNames(t, c, j), before[j]) {
			kept = j
		} else {
			victim = j
		}
	}
	if victim != "req-b" || kept != "req-a" {
		t.Fatalf("want req-b evicted and req-a (not preemptible) kept: req-a %v (was %v), req-b %v (was %v)",
			boundNames(t, c, "req-a"), before["req-a"], boundNames(t, c, "req-b"), before["req-b"])
	}
	u, k := racksOf(t, c, rackOf, "urgent"), racksOf(t, c, rackOf, kept)
	if maps.Equal(u, map[string]int{}) || slices.Equal(slices.Sorted(maps.Keys(u)), slices.Sorted(maps.Keys(k))) {
		t.Errorf("urgent %v shares a rack with the kept gang %s %v", u, kept, k)
	}
	if n := boundCount(livePods(t, c, victim)); n != 0 {
		t.Errorf("victim %s has %d bound pods, want 0 (no rack holds 6 now)", victim, n)
	}
	t.Logf("urgent %v evicted %s; %s kept %v", u, victim, kept, k)
	checkDevices(t, c, "req-a", "req-b", "urgent")

	// A preferred-rack gang larger than any rack's free GPUs spills over.
	createJobs(t, c, gpuJob("pref", 5, 1, map[string]string{host.AnnotationTopologyPreferred: labelRack, host.AnnotationPriority: "5"}))
	driveUntil(t, ctx, h, 90*time.Second, "the preferred-rack gang bound over two racks", func() (bool, string) {
		p := racksOf(t, c, rackOf, "pref")
		return len(p) == 2 && p[rackOf[strings.Split(boundNames(t, c, "urgent")[0], "@")[1]]] == 4, fmt.Sprintf("pref %v", p)
	})
	if !slices.Equal(boundNames(t, c, kept), before[kept]) {
		t.Errorf("the kept gang %s moved: %v, was %v", kept, boundNames(t, c, kept), before[kept])
	}
	if n := boundCount(livePods(t, c, victim)); n != 0 {
		t.Errorf("victim %s has %d bound pods, want 0", victim, n)
	}
	t.Logf("preferred gang spilled: %v", racksOf(t, c, rackOf, "pref"))
	checkDevices(t, c, "req-a", "req-b", "urgent", "pref")
}

// TestIntegrationTopologyBadInputWarnsAndSkips: a Job naming an unknown
// level gets a Warning Event naming the annotation and is skipped while
// the round binds the others; a malformed topology ConfigMap gets a
// Warning Event naming it, a Job asking for a level is skipped with a
// Warning naming the ConfigMap, and a Job without one is still bound.
func TestIntegrationTopologyBadInputWarnsAndSkips(t *testing.T) {
	c := startCluster(t)
	setupTopology(t, c, 1, 2)
	createJobs(t, c,
		gpuJob("bad", 2, 1, map[string]string{host.AnnotationTopologyRequired: "cloud.provider.com/topology-zone"}),
		gpuJob("good", 3, 2, map[string]string{host.AnnotationTopologyRequired: labelRack})) // pods of 2 GPUs, never split
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{}),
		TopologyConfigMap: host.DefaultLeaseNamespace + "/goodsched-topology"})
	warned := func(job, what string) (bool, string) {
		ev := jobEvents(t, c, "Job", job)
		for _, e := range ev {
			if strings.HasPrefix(e, "Warning InvalidAnnotation") && strings.Contains(e, what) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s events %q", job, ev)
	}
	driveUntil(t, ctx, h, 60*time.Second, "good bound, bad warned", func() (bool, string) {
		if ok, why := warned("bad", host.AnnotationTopologyRequired); !ok {
			return false, why
		}
		return boundCount(livePods(t, c, "good")) == 3, fmt.Sprintf("good: %d bound", boundCount(livePods(t, c, "good")))
	})
	r, err := h.RoundOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Skipped, host.JobKey(testNS+"/bad")) || boundCount(livePods(t, c, "bad")) != 0 {
		t.Errorf("bad: skipped %v, %d bound", r.Skipped, boundCount(livePods(t, c, "bad")))
	}

	cms := c.Client.CoreV1().ConfigMaps(host.DefaultLeaseNamespace)
	cm, err := cms.Get(ctx, "goodsched-topology", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[host.TopologyConfigKey] = "spec:\n  levels:\n  - nodeLabel: Not A Label!\n"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createJobs(t, c,
		gpuJob("asks", 1, 1, map[string]string{host.AnnotationTopologyPreferred: labelRack}),
		gpuJob("plain", 1, 1, nil))
	driveUntil(t, ctx, h, 60*time.Second, "plain bound, asks and the ConfigMap warned", func() (bool, string) {
		if ok, why := warned("asks", "goodsched-topology"); !ok {
			return false, why
		}
		l, err := c.Client.EventsV1().Events(host.DefaultLeaseNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		cmWarned := slices.ContainsFunc(l.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == "goodsched-topology" && e.Type == corev1.EventTypeWarning && e.Reason == "InvalidTopology"
		})
		if !cmWarned {
			return false, "no InvalidTopology Event on the ConfigMap"
		}
		return boundCount(livePods(t, c, "plain")) == 1, fmt.Sprintf("plain: %d bound", boundCount(livePods(t, c, "plain")))
	})
	if n := boundCount(livePods(t, c, "asks")); n != 0 {
		t.Errorf("asks: %d bound while the topology is malformed", n)
	}
	if n := boundCount(livePods(t, c, "good")); n != 3 {
		t.Errorf("good: %d bound, want its 3 pods kept", n)
	}
	checkDevices(t, c, "good", "plain")
}
