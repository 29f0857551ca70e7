package host_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/easyscale"
)

// gangView is a W-job's bound pods as its trainers see them.
type gangView struct {
	pods, workers int
	types         map[string]int // node GPU product → pods
	perPod        []string       // "pod@node=workers[ranks]"
	ranksOK       bool           // ranks 0..W-1, each once, matching the counts
}

func (g gangView) String() string {
	return fmt.Sprintf("%d pods hosting %d workers on %v: %s", g.pods, g.workers, g.types, strings.Join(g.perPod, " "))
}

// viewGang reads a W-job's bound pods (of W workers; products: each
// node's GPU product) and what their annotations tell them.
func viewGang(t *testing.T, products map[string]string, pods []corev1.Pod, W int) gangView {
	t.Helper()
	g := gangView{types: map[string]int{}, ranksOK: true}
	ranks := make([]int, W)
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		g.pods++
		g.types[products[p.Spec.NodeName]]++
		n, err := strconv.Atoi(p.Annotations[host.AnnotationPodWorkers])
		var first, last int
		_, rerr := fmt.Sscanf(p.Annotations[host.AnnotationPodWorkerRanks], "%d-%d", &first, &last)
		if err != nil || rerr != nil || n < 1 || last-first+1 != n || first < 0 || last >= W {
			g.ranksOK = false
		} else {
			for r := first; r <= last; r++ {
				ranks[r]++
			}
			g.workers += n
		}
		g.perPod = append(g.perPod, fmt.Sprintf("%s@%s=%s[%s]", p.Name, p.Spec.NodeName, p.Annotations[host.AnnotationPodWorkers], p.Annotations[host.AnnotationPodWorkerRanks]))
	}
	for _, r := range ranks {
		g.ranksOK = g.ranksOK && r == 1
	}
	return g
}

// TestIntegrationWorkersMixedGangKeepsW runs a Job of W = 8 logical
// workers (goodsched.io/workers) under the easyscale policy on kwok nodes
// of two GPU types: it grows from one pod to four, two on the A100 node
// and two on the T4 node, whose goodsched.io/pod-workers sum to 8 with
// ranks 0-7 each hosted once; max-replicas lowered to 3 shrinks it to
// three pods, still on both types and still hosting 8; the T4 node
// failing leaves the two A100 pods, which are told they host 4 each.
func TestIntegrationWorkersMixedGangKeepsW(t *testing.T) {
	const W = 8
	c := startCluster(t)
	createNodes(t, c, gpuNode("a100-0", productA100, 2, true), gpuNode("t4-0", productT4, 2, false))
	products := map[string]string{"a100-0": productA100, "t4-0": productT4}
	createJobs(t, c, gpuJob("easy", 1, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "4",
		host.AnnotationWorkers: strconv.Itoa(W)}))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{}),
		Scheduler: scheduler.Config{Policy: easyscale.Policy{}}})

	var sizes []int // bound pods each time the gang was whole
	stable := func(want int, types int) func() (bool, string) {
		return func() (bool, string) {
			pods := livePods(t, c, "easy")
			g := viewGang(t, products, pods, W)
			whole := len(pods) == g.pods && g.ranksOK && g.workers == W
			if whole && (len(sizes) == 0 || sizes[len(sizes)-1] != g.pods) {
				sizes = append(sizes, g.pods)
			}
			return whole && g.pods == want && len(g.types) == types, g.String()
		}
	}
	driveUntil(t, ctx, h, 60*time.Second, "4 pods on both types hosting 8 workers", stable(4, 2))
	g := viewGang(t, products, livePods(t, c, "easy"), W)
	if g.types[productA100] != 2 || g.types[productT4] != 2 {
		t.Errorf("gang %v, want 2 pods on each type", g)
	}
	t.Logf("grown: %v (whole gangs seen: %v pods)", g, sizes)
	checkDevices(t, c, "easy")
	j, err := c.Client.BatchV1().Jobs(testNS).Get(ctx, "easy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Annotations[host.AnnotationLastDecision]; !strings.Contains(d, "a100-40gb (4 workers) + 2 t4 (4 workers)") {
		t.Errorf("%s = %q, want the two types' shares", host.AnnotationLastDecision, d)
	}

	// The user lowers max-replicas: one pod goes, the three left host 8.
	j.Annotations[host.AnnotationMaxReplicas] = "3"
	if _, err := c.Client.BatchV1().Jobs(testNS).Update(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, ctx, h, 60*time.Second, "3 pods on both types hosting 8 workers", stable(3, 2))
	t.Logf("shrunk: %v", viewGang(t, products, livePods(t, c, "easy"), W))

	// The T4 node fails: its pod is deleted, the two A100 pods host 8.
	setNodeReady(t, c, "t4-0", false)
	driveUntil(t, ctx, h, 60*time.Second, "2 A100 pods hosting 8 workers", stable(2, 1))
	g = viewGang(t, products, livePods(t, c, "easy"), W)
	if g.types[productA100] != 2 {
		t.Errorf("after the T4 node failed: %v", g)
	}
	t.Logf("after the T4 node failed: %v", g)
	// The Job's Events say which running pods were told new shares.
	waitFor(t, 10*time.Second, "an Event naming the pods' new workers", func() (bool, string) {
		ev := strings.Join(jobEvents(t, c, "Job", "easy"), "; ")
		return strings.Contains(ev, "workers now ") && strings.Contains(ev, " 4 (ranks 4-7)"), ev
	})
	j, err = c.Client.BatchV1().Jobs(testNS).Get(ctx, "easy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *j.Spec.Parallelism != 2 {
		t.Errorf("parallelism %d, want 2", *j.Spec.Parallelism)
	}
	if sizes[0] != 1 || sizes[len(sizes)-1] != 2 || !containsAll(sizes, 4, 3) {
		t.Errorf("whole gangs seen with %v pods, want 1 first, 4 and 3, and 2 last", sizes)
	}

	// A malformed W is refused with a Warning; the round goes on.
	createJobs(t, c, gpuJob("bad", 1, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationWorkers: "many"}))
	driveUntil(t, ctx, h, 30*time.Second, "InvalidAnnotation Event on the bad Job", func() (bool, string) {
		ev := strings.Join(jobEvents(t, c, "Job", "bad"), "; ")
		return strings.Contains(ev, "Warning InvalidAnnotation") && strings.Contains(ev, host.AnnotationWorkers), ev
	})
}

func containsAll(xs []int, want ...int) bool {
	for _, w := range want {
		found := false
		for _, x := range xs {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}
