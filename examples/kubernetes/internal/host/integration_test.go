package host_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// TestIntegrationTwoTypesThreeJobsBoundOnRightNodes runs the host (Run,
// as the binary does) on nodes of two GPU types with two elastic Jobs and
// one rigid gang, and checks that each Job's pods are bound on nodes of
// its type, the elastic Jobs grown to their maximum through
// spec.parallelism, the gang's pods each on four devices of one node, no
// device shared, and the decisions recorded as Events and annotations.
func TestIntegrationTwoTypesThreeJobsBoundOnRightNodes(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c,
		gpuNode("a100-0", productA100, 8, true), gpuNode("a100-1", productA100, 8, true),
		gpuNode("t4-0", productT4, 4, true), gpuNode("t4-1", productT4, 4, true))
	createJobs(t, c,
		gpuJob("elastic-a", 2, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "4", host.AnnotationGPUTypes: "a100"}),
		gpuJob("elastic-t", 1, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "4", host.AnnotationGPUTypes: "t4"}),
		gpuJob("gang", 2, 4, map[string]string{host.AnnotationGPUTypes: "a100-40gb"}))

	log := &requestLog{}
	cs := schedulerClient(t, c, log)
	// deploy/rbac.yaml is least privilege: no secrets, no pod creation.
	if _, err := cs.CoreV1().Secrets(testNS).List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler may list secrets: %v", err)
	}
	if _, err := cs.CoreV1().Pods(testNS).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler may create pods: %v", err)
	}
	h := newHost(t, host.Config{Client: cs, Interval: time.Second, MinInterval: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() { cancel(); <-done }()

	want := map[string]struct {
		pods, gpus int
		prefix     string
	}{"elastic-a": {4, 1, "a100-"}, "elastic-t": {4, 1, "t4-"}, "gang": {2, 4, "a100-"}}
	waitFor(t, 90*time.Second, "all three Jobs bound", func() (bool, string) {
		for name, w := range want {
			pods := livePods(t, c, name)
			if len(pods) != w.pods || boundCount(pods) != w.pods {
				return false, fmt.Sprintf("%s: %d pods, %d bound, want %d", name, len(pods), boundCount(pods), w.pods)
			}
		}
		return true, ""
	})
	for name, w := range want {
		for _, p := range livePods(t, c, name) {
			if !strings.HasPrefix(p.Spec.NodeName, w.prefix) {
				t.Errorf("%s: pod %s on node %s, want a %s* node", name, p.Name, p.Spec.NodeName, w.prefix)
			}
			if n := len(strings.Split(p.Annotations[host.AnnotationDevices], ",")); n != w.gpus {
				t.Errorf("%s: pod %s holds %d devices (%s), want %d", name, p.Name, n, p.Annotations[host.AnnotationDevices], w.gpus)
			}
		}
		j, err := c.Client.BatchV1().Jobs(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *j.Spec.Parallelism != int32(w.pods) {
			t.Errorf("%s: parallelism %d, want %d", name, *j.Spec.Parallelism, w.pods)
		}
		if !strings.HasPrefix(j.Annotations[host.AnnotationLastDecision], "start") && !strings.HasPrefix(j.Annotations[host.AnnotationLastDecision], "grow") {
			t.Errorf("%s: %s = %q", name, host.AnnotationLastDecision, j.Annotations[host.AnnotationLastDecision])
		}
	}
	checkDevices(t, c, "elastic-a", "elastic-t", "gang")
	waitFor(t, 10*time.Second, "an Event on each Job", func() (bool, string) {
		for name := range want {
			if len(jobEvents(t, c, "Job", name)) == 0 {
				return false, "no Event on " + name
			}
		}
		return true, ""
	})
	t.Logf("gang events: %q", jobEvents(t, c, "Job", "gang"))
	_ = batchv1.JobNameLabel
}

// startHost starts a host's informers for a test that drives rounds
// itself with RoundOnce.
func startHost(t *testing.T, cfg host.Config) (*host.Host, context.Context) {
	t.Helper()
	h := newHost(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h, ctx
}

// TestIntegrationNodeNotReadyJobReplacedNextRound binds a rigid gang on a
// node, turns the node NotReady and checks that the next round deletes
// the gang's pod there and the round after binds the replacement the Job
// controller creates on the other node.
func TestIntegrationNodeNotReadyJobReplacedNextRound(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 4, false)) // the test plays its kubelet
	createJobs(t, c, gpuJob("gang", 1, 4, nil))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	driveUntil(t, ctx, h, 30*time.Second, "gang bound on n0", func() (bool, string) {
		pods := livePods(t, c, "gang")
		return len(pods) == 1 && pods[0].Spec.NodeName == "n0", fmt.Sprintf("%d pods", len(pods))
	})
	first := livePods(t, c, "gang")[0].Name
	createNodes(t, c, gpuNode("n1", productA100, 4, true))
	setNodeReady(t, c, "n0", false)
	waitFor(t, 10*time.Second, "host sees n0 NotReady", func() (bool, string) {
		r, err := h.RoundOnce(ctx)
		if err != nil {
			return false, err.Error()
		}
		return r.Evictions == 1, fmt.Sprintf("round evicted %d", r.Evictions)
	})
	driveUntil(t, ctx, h, 30*time.Second, "gang re-placed on n1", func() (bool, string) {
		pods := livePods(t, c, "gang")
		return len(pods) == 1 && pods[0].Spec.NodeName == "n1" && pods[0].Name != first, fmt.Sprintf("%d pods %v", len(pods), nodesOf(pods))
	})
	if all := allPods(t, c, "gang"); len(all) != 1 {
		t.Errorf("the pod on the NotReady node is still there: %v", nodesOf(all))
	}
	waitFor(t, 10*time.Second, "NodeNotReady Event on the lost pod", func() (bool, string) {
		ev := jobEvents(t, c, "Pod", first)
		return len(ev) > 0 && strings.Contains(strings.Join(ev, ";"), "NodeNotReady"), fmt.Sprint(ev)
	})
}

func nodesOf(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.Spec.NodeName)
	}
	return out
}

// TestIntegrationShrinkKeepsThePlannedPods runs an elastic Job on four
// GPUs, lowers its max-replicas to 2 and checks that the round patches
// spec.parallelism to 2 and that the pods left running are exactly the two
// the plan keeps — none of the Job controller's choosing, and no
// replacement surviving — over several more rounds.
func TestIntegrationShrinkKeepsThePlannedPods(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 8, true))
	createJobs(t, c, gpuJob("elastic", 4, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "4"}))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	driveUntil(t, ctx, h, 30*time.Second, "4 pods bound", func() (bool, string) {
		pods := livePods(t, c, "elastic")
		return len(pods) == 4 && boundCount(pods) == 4, fmt.Sprint(nodesOf(pods))
	})
	before := livePods(t, c, "elastic")
	devOf := map[string]string{}
	for _, p := range before {
		devOf[p.Spec.NodeName+"/"+p.Annotations[host.AnnotationDevices]] = p.Name
	}
	j, err := c.Client.BatchV1().Jobs(testNS).Get(ctx, "elastic", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restartsBefore := j.Annotations[host.AnnotationRestarts]
	j.Annotations[host.AnnotationMaxReplicas] = "2"
	if _, err := c.Client.BatchV1().Jobs(testNS).Update(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var kept []string
	waitFor(t, 10*time.Second, "the shrink round", func() (bool, string) {
		r, err := h.RoundOnce(ctx)
		if err != nil {
			return false, err.Error()
		}
		d, _ := r.Plan.Decision("default/elastic")
		if d.To != 2 {
			return false, fmt.Sprintf("decision %v %d→%d", d.Action, d.From, d.To)
		}
		for _, id := range d.Assignment.Devices {
			kept = append(kept, devOf[id])
		}
		return true, ""
	})
	slices.Sort(kept)
	names := func() []string {
		var out []string
		for _, p := range livePods(t, c, "elastic") {
			out = append(out, p.Name)
		}
		return out
	}
	driveUntil(t, ctx, h, 30*time.Second, "only the kept pods left", func() (bool, string) {
		all := allPods(t, c, "elastic")
		var gone []string
		for _, p := range all {
			if p.DeletionTimestamp != nil {
				gone = append(gone, fmt.Sprintf("%s phase %s finalizers %v grace %v", p.Name, p.Status.Phase, p.Finalizers, *p.DeletionGracePeriodSeconds))
			}
		}
		return slices.Equal(names(), kept) && len(all) == 2, fmt.Sprintf("live %v (all %d: %v), want %v", names(), len(all), gone, kept)
	})
	j, err = c.Client.BatchV1().Jobs(testNS).Get(ctx, "elastic", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *j.Spec.Parallelism != 2 {
		t.Errorf("parallelism %d, want 2", *j.Spec.Parallelism)
	}
	// The shrink restarted the running job once: the count the goodput
	// policy's restart penalty reads went up by one, in the Job's patch.
	n, _ := strconv.Atoi(restartsBefore)
	if got, want := j.Annotations[host.AnnotationRestarts], strconv.Itoa(n+1); got != want {
		t.Errorf("%s = %q after the shrink, want %q (was %q)", host.AnnotationRestarts, got, want, restartsBefore)
	}
	// More rounds and time for the Job controller: still exactly the kept
	// pods, nothing pending beside them.
	for range 10 {
		if _, err := h.RoundOnce(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := names(); !slices.Equal(got, kept) {
		t.Errorf("after more rounds the live pods are %v, want the kept %v", got, kept)
	}
	if all := allPods(t, c, "elastic"); len(all) != 2 {
		t.Errorf("%d pods exist, want 2: %v", len(all), nodesOf(all))
	}
	for _, p := range before {
		if slices.Contains(kept, p.Name) {
			continue
		}
		waitFor(t, 10*time.Second, "Shrunk Event on evicted pod "+p.Name, func() (bool, string) {
			ev := strings.Join(jobEvents(t, c, "Pod", p.Name), "; ")
			return strings.Contains(ev, "Normal Shrunk"), ev
		})
	}
}

// TestIntegrationAPIServerDownMidGangNoHalfBoundGang kills kube-apiserver
// between the binds of one gang (after its first bind went through) and
// restarts it: after recovery the gang is never half bound — the pod that
// did bind is deleted, then the whole gang binds — and no Job is lost.
func TestIntegrationAPIServerDownMidGangNoHalfBoundGang(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 8, true), gpuNode("n1", productA100, 8, true))
	createJobs(t, c, gpuJob("gang", 4, 2, nil), gpuJob("other", 2, 1, nil))
	waitFor(t, 30*time.Second, "pods created", func() (bool, string) {
		return len(livePods(t, c, "gang")) == 4 && len(livePods(t, c, "other")) == 2, ""
	})
	log := &requestLog{}
	var killed sync.Once
	var firstBound string
	restarted := make(chan struct{})
	log.before = func(req *http.Request) {
		if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/binding") || !strings.Contains(req.URL.Path, "/pods/gang-") {
			return
		}
		_, _, binds := log.counts()
		var gangBinds []string
		for _, b := range binds {
			if strings.HasPrefix(b, "gang-") {
				gangBinds = append(gangBinds, b)
			}
		}
		if len(gangBinds) == 2 { // the gang's second bind: the server dies first
			killed.Do(func() {
				firstBound = gangBinds[0]
				c.StopAPIServer()
				go func() {
					time.Sleep(2 * time.Second)
					c.StartAPIServer()
					close(restarted)
				}()
			})
		}
	}
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, log), BindWorkers: 1})
	r, _ := h.RoundOnce(ctx)
	if r.BindFailures == 0 {
		t.Fatalf("the round saw no failed bind: %+v", r)
	}
	<-restarted
	halfSeen := false
	driveUntil(t, ctx, h, 60*time.Second, "every Job fully bound after recovery", func() (bool, string) {
		gang, other := livePods(t, c, "gang"), livePods(t, c, "other")
		if b := boundCount(gang); b > 0 && b < 4 {
			halfSeen = true
		}
		return boundCount(gang) == 4 && len(gang) == 4 && boundCount(other) == 2, fmt.Sprintf("gang %v other %v", nodesOf(gang), nodesOf(other))
	})
	if halfSeen {
		t.Error("a half-bound gang was seen after the API server came back")
	}
	for _, p := range livePods(t, c, "gang") {
		if p.Name == firstBound {
			t.Errorf("pod %s, bound before the crash, survived; it should have been rolled back", firstBound)
		}
	}
	checkDevices(t, c, "gang", "other")
	for _, name := range []string{"gang", "other"} {
		if _, err := c.Client.BatchV1().Jobs(testNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("job %s lost: %v", name, err)
		}
	}
}

// TestIntegrationLeaderFailoverNoDoubleBind runs two hosts with leader
// election on one Lease. The leader binds the first Job; it is stopped;
// the other takes over and binds the second Job. No pod is bound by both,
// the non-leader never sends a bind, and no two pods share a device.
func TestIntegrationLeaderFailoverNoDoubleBind(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 8, true))
	createJobs(t, c, gpuJob("first", 2, 2, nil))
	type replica struct {
		h      *host.Host
		log    *requestLog
		cancel context.CancelFunc
		done   chan error
		rogue  []string // binds sent while not leading
		mu     sync.Mutex
	}
	start := func(id string) *replica {
		r := &replica{log: &requestLog{}, done: make(chan error, 1)}
		r.log.before = func(req *http.Request) {
			if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding") && !r.h.IsLeader() {
				r.mu.Lock()
				r.rogue = append(r.rogue, req.URL.Path)
				r.mu.Unlock()
			}
		}
		r.h = newHost(t, host.Config{Client: schedulerClient(t, c, r.log), Identity: id, LeaderElection: true,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 300 * time.Millisecond,
			Interval: 500 * time.Millisecond, MinInterval: 100 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() { r.done <- r.h.Run(ctx) }()
		return r
	}
	a, b := start("replica-a"), start("replica-b")
	defer func() {
		for _, r := range []*replica{a, b} {
			r.cancel()
			<-r.done
		}
	}()
	waitFor(t, 60*time.Second, "first Job bound", func() (bool, string) {
		pods := livePods(t, c, "first")
		return len(pods) == 2 && boundCount(pods) == 2, fmt.Sprint(nodesOf(pods))
	})
	leader, follower := a, b
	if b.h.IsLeader() {
		leader, follower = b, a
	}
	if !leader.h.IsLeader() || follower.h.IsLeader() {
		t.Fatalf("leaders: a %v, b %v", a.h.IsLeader(), b.h.IsLeader())
	}
	leader.cancel()
	<-leader.done
	leader.done <- nil // for the deferred cleanup
	createJobs(t, c, gpuJob("second", 2, 2, nil))
	waitFor(t, 60*time.Second, "second Job bound by the new leader", func() (bool, string) {
		pods := livePods(t, c, "second")
		return len(pods) == 2 && boundCount(pods) == 2, fmt.Sprint(nodesOf(pods))
	})
	_, _, bindsL := leader.log.counts()
	_, _, bindsF := follower.log.counts()
	for _, p := range bindsL {
		if slices.Contains(bindsF, p) {
			t.Errorf("pod %s was bound by both replicas", p)
		}
		if strings.HasPrefix(p, "second-") {
			t.Errorf("the stopped leader bound %s", p)
		}
	}
	for _, p := range bindsF {
		if strings.HasPrefix(p, "first-") {
			t.Errorf("the new leader bound %s again", p)
		}
	}
	if len(bindsL) != 2 || len(bindsF) != 2 {
		t.Errorf("binds: old leader %v, new leader %v; want 2 each", bindsL, bindsF)
	}
	for _, r := range []*replica{a, b} {
		r.mu.Lock()
		if len(r.rogue) > 0 {
			t.Errorf("binds sent while not leading: %v", r.rogue)
		}
		r.mu.Unlock()
	}
	checkDevices(t, c, "first", "second")
}

// TestIntegrationMalformedAnnotationsWarnAndSkip checks that a Job with
// malformed annotations gets a Warning Event and no pod bound, while the
// round goes on for the others.
func TestIntegrationMalformedAnnotationsWarnAndSkip(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 8, true))
	createJobs(t, c,
		gpuJob("bad-kind", 1, 1, map[string]string{host.AnnotationKind: "bogus"}),
		gpuJob("bad-bounds", 1, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMinReplicas: "3", host.AnnotationMaxReplicas: "2"}),
		gpuJob("bad-type", 1, 1, map[string]string{host.AnnotationGPUTypes: "A100!"}),
		gpuJob("good", 2, 1, nil))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	driveUntil(t, ctx, h, 30*time.Second, "good Job bound", func() (bool, string) {
		pods := livePods(t, c, "good")
		return len(pods) == 2 && boundCount(pods) == 2, fmt.Sprint(nodesOf(pods))
	})
	r, err := h.RoundOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bad-kind", "bad-bounds", "bad-type"} {
		if !slices.Contains(r.Skipped, host.JobKey(testNS+"/"+name)) {
			t.Errorf("%s not skipped: %v", name, r.Skipped)
		}
		if b := boundCount(livePods(t, c, name)); b != 0 {
			t.Errorf("%s: %d pods bound", name, b)
		}
		waitFor(t, 10*time.Second, "Warning Event on "+name, func() (bool, string) {
			ev := strings.Join(jobEvents(t, c, "Job", name), "; ")
			return strings.Contains(ev, "Warning InvalidAnnotation"), ev
		})
	}
	t.Logf("events: %q", jobEvents(t, c, "Job", "bad-bounds"))
}

// TestIntegrationPodGroupsBindAsGangs checks pod groups (pods sharing the
// goodsched.io/group label, made by any controller): a rigid group of 3
// waits until its third pod exists and then binds whole; an elastic group
// gets its target in goodsched.io/target-replicas on its pods and runs the
// pods it has.
func TestIntegrationPodGroupsBindAsGangs(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 8, true))
	ctx := context.Background()
	mk := func(name, group string, ann map[string]string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{host.LabelGroup: group}, Annotations: ann},
			Spec: gpuJob("x", 1, 1, nil).Spec.Template.Spec}
		if _, err := c.Client.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	groupPods := func(group string) []corev1.Pod {
		l, err := c.Client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: host.LabelGroup + "=" + group})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	gang := map[string]string{host.AnnotationGroupSize: "3"}
	mk("g-0", "g", gang)
	mk("g-1", "g", gang)
	el := map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "4"}
	mk("e-0", "e", el)
	mk("e-1", "e", el)
	h, hctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{})})
	driveUntil(t, hctx, h, 30*time.Second, "elastic group bound with its target published", func() (bool, string) {
		ps := groupPods("e")
		ok := boundCount(ps) == 2
		for _, p := range ps {
			ok = ok && p.Annotations[host.AnnotationTargetReplicas] == "4"
		}
		return ok, fmt.Sprint(nodesOf(ps))
	})
	for range 3 {
		if _, err := h.RoundOnce(hctx); err != nil {
			t.Fatal(err)
		}
	}
	if b := boundCount(groupPods("g")); b != 0 {
		t.Fatalf("%d pods of the rigid group of 3 bound with only 2 created", b)
	}
	mk("g-2", "g", gang)
	driveUntil(t, hctx, h, 30*time.Second, "rigid group bound whole", func() (bool, string) {
		ps := groupPods("g")
		return boundCount(ps) == 3, fmt.Sprint(nodesOf(ps))
	})
}
