package host_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

// TestIntegrationScale1000Nodes500Jobs is the scale check: 1,000 kwok
// nodes × 8 GPUs of two types, 500 Jobs of 4 one-GPU pods (2,000 pods; 400
// rigid gangs, 100 elastic), one round. It prints the time from the
// round's start until every planned pod is bound, the API writes of the
// round (binds, Job patches, Events) per bound pod, and the process's RSS
// (an upper bound on the scheduler's: the test's own clients share the
// process). Targets: ≤ 2 s, ≤ 2 writes per bound pod, ≤ 300 MB. Skipped
// with -short.
func TestIntegrationScale1000Nodes500Jobs(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test skipped with -short")
	}
	const nodes, gpusPerNode, jobs, podsPerJob = 1000, 8, 500, 4
	c := startCluster(t)
	ctx := context.Background()
	tStart := time.Now()

	var ns []*corev1.Node
	for i := range nodes {
		product, prefix := productA100, "a100"
		if i%2 == 1 {
			product, prefix = productT4, "t4"
		}
		ns = append(ns, gpuNode(fmt.Sprintf("%s-%04d", prefix, i), product, gpusPerNode, true))
	}
	createNodesBulk(t, c, ns)
	tNodes := time.Now()

	parallelDo(jobs, 32, func(i int) {
		ann := map[string]string{host.AnnotationGPUTypes: "a100"}
		if i%2 == 1 {
			ann[host.AnnotationGPUTypes] = "t4"
		}
		if i%5 == 0 {
			ann[host.AnnotationKind] = "elastic"
			ann[host.AnnotationMaxReplicas] = fmt.Sprint(podsPerJob)
		}
		j := gpuJob(fmt.Sprintf("job-%03d", i), podsPerJob, 1, ann)
		for {
			_, err := c.Client.BatchV1().Jobs(testNS).Create(ctx, j, metav1.CreateOptions{})
			if err == nil || strings.Contains(err.Error(), "already exists") {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	waitFor(t, 4*time.Minute, "2,000 pods created", func() (bool, string) {
		l, err := c.Client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		time.Sleep(500 * time.Millisecond)
		return len(l.Items) >= jobs*podsPerJob, fmt.Sprintf("%d pods", len(l.Items))
	})
	tPods := time.Now()

	log := &requestLog{}
	h, hctx := startHost(t, host.Config{Client: schedulerClientUnlimited(t, c, log), BindWorkers: 128})
	waitFor(t, time.Minute, "the host's informers see the pods", func() (bool, string) {
		n := 0
		for i := range jobs {
			n += len(h.PodsOfJob(host.JobKey(fmt.Sprintf("%s/job-%03d", testNS, i))))
		}
		return n >= jobs*podsPerJob, fmt.Sprintf("%d pods", n)
	})
	runtime.GC()
	_, w0, _ := log.counts()
	start := time.Now()
	r, err := h.RoundOnce(hctx)
	if err != nil {
		t.Fatal(err)
	}
	planned := 0
	for _, d := range r.Plan.Decisions {
		planned += d.To
	}
	waitFor(t, time.Minute, "every planned pod bound", func() (bool, string) {
		l, err := c.Client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		b := 0
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				b++
			}
		}
		return b >= planned, fmt.Sprintf("%d of %d bound", b, planned)
	})
	bound := time.Since(start)
	time.Sleep(3 * time.Second) // let the Event broadcaster flush
	_, w1, _ := log.counts()
	rss, hwm := procStatus("VmRSS"), procStatus("VmHWM")
	writes := w1 - w0
	t.Logf("setup: %d nodes in %v, %d Jobs' pods in %v", nodes, tNodes.Sub(tStart).Round(time.Millisecond), jobs, tPods.Sub(tNodes).Round(time.Millisecond))
	line := fmt.Sprintf("scale: %d nodes × %d GPUs (2 types), %d Jobs, %d pods planned: all bound %v after the round's start (round %v: snapshot %v, schedule %v, apply %v); %d binds, %d API writes in the round (%.2f per bound pod: binds %d, patches %d, Events and others %d); RSS %s (peak %s)",
		nodes, gpusPerNode, jobs, planned, bound.Round(time.Millisecond), r.Duration.Round(time.Millisecond), r.Snapshot.Round(time.Millisecond),
		r.Schedule.Round(time.Millisecond), r.Apply.Round(time.Millisecond), r.Binds, writes, float64(writes)/float64(max(r.Binds, 1)),
		r.Binds, r.Patches, writes-r.Binds-r.Patches, rss, hwm)
	t.Log(line)
	fmt.Println(line)
	if r.Binds != planned || r.BindFailures != 0 {
		t.Errorf("binds %d (failures %d), planned %d", r.Binds, r.BindFailures, planned)
	}
	if planned < jobs*podsPerJob {
		t.Errorf("planned %d pods, want all %d", planned, jobs*podsPerJob)
	}
	if per := float64(writes) / float64(max(r.Binds, 1)); per > 2 {
		t.Errorf("%.2f API writes per bound pod, want ≤ 2", per)
	}
}

// createNodesBulk creates many kwok nodes and waits until all are Ready,
// with their GPUs and untainted.
func createNodesBulk(t *testing.T, c *testcluster.Cluster, nodes []*corev1.Node) {
	t.Helper()
	ctx := context.Background()
	parallelDo(len(nodes), 32, func(i int) {
		for {
			_, err := c.Client.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
			if err == nil || strings.Contains(err.Error(), "already exists") {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	want := map[string]*corev1.Node{}
	for _, n := range nodes {
		want[n.Name] = n
	}
	waitFor(t, 3*time.Minute, "nodes ready with GPUs", func() (bool, string) {
		l, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var fix []corev1.Node
		ready := 0
		for _, n := range l.Items {
			w := want[n.Name]
			if w == nil {
				continue
			}
			q, wq := n.Status.Allocatable[host.ResourceGPU], w.Status.Allocatable[host.ResourceGPU]
			if q.Cmp(wq) != 0 || len(n.Spec.Taints) > 0 {
				fix = append(fix, n)
			} else if isReady(&n) {
				ready++
			}
		}
		parallelDo(len(fix), 32, func(i int) {
			n := fix[i]
			w := want[n.Name]
			if len(n.Spec.Taints) > 0 {
				n.Spec.Taints = nil
				got, err := c.Client.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{})
				if err != nil {
					return
				}
				n = *got
			}
			q, wq := n.Status.Allocatable[host.ResourceGPU], w.Status.Allocatable[host.ResourceGPU]
			if q.Cmp(wq) != 0 {
				if n.Status.Allocatable == nil {
					n.Status.Allocatable, n.Status.Capacity = corev1.ResourceList{}, corev1.ResourceList{}
				}
				for k, v := range w.Status.Allocatable {
					n.Status.Allocatable[k], n.Status.Capacity[k] = v, v
				}
				_, _ = c.Client.CoreV1().Nodes().UpdateStatus(ctx, &n, metav1.UpdateOptions{})
			}
		})
		if len(fix) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		return ready == len(nodes), fmt.Sprintf("%d of %d ready with GPUs, %d fixed", ready, len(nodes), len(fix))
	})
}

// parallelDo runs f(0..n-1) on w goroutines.
func parallelDo(n, w int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// procStatus returns a field of /proc/self/status ("VmRSS"), or "?".
func procStatus(field string) string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

var _ = batchv1.JobNameLabel

// schedulerClientUnlimited is schedulerClient without client-side rate
// limiting (the API server's priority and fairness still applies).
func schedulerClientUnlimited(t *testing.T, c *testcluster.Cluster, log *requestLog) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(c.UserConfig("scheduler"))
	cfg.WrapTransport = log.wrap
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
