package twin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/report"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// The twin's jobs are adaptive pod groups (goodsched.io/group) whose
// controller is the twin itself: it creates pods up to the target the host
// publishes on them. (Through batch/v1 Jobs the Job controller's own API
// backoffs — conflicts with the host's Job patches are retried after 1 s,
// 2 s, ... — are not compressed and stretch every resize by minutes of
// twin time.)
//
// The twin's scenario: the first 16 jobs of Pollux's workload-6 that are
// neither ImageNet nor YOLOv3 (hours-long jobs that would not fit in a
// short test), on 4 nodes × 4 T4, with the goodput policy, 60 s rounds
// and 30 s restarts, time compressed 60× (a round is one wall second).
const (
	numJobs     = 16
	clusterSpec = "4x4:t4"
	nodesN      = 4
	gpusPerNode = 4
	productT4   = "Tesla-T4"
	compress    = 60.0
	roundVirt   = 60 * time.Second
	namespace   = "twin"
	gpuType     = accel.TypeKey("t4")
	tick        = 20 * time.Millisecond
	// budget bounds the twin's wall time once the workload starts.
	budget = 170 * time.Second
)

func workload(t *testing.T) (map[string]*sim.Application, []sim.JobSpec) {
	t.Helper()
	apps, err := sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sim.LoadWorkloads(polluxdata.FS, "workloads/workload-6.csv")
	if err != nil {
		t.Fatal(err)
	}
	var jobs []sim.JobSpec
	for _, j := range ws[0].Jobs {
		if j.Application == "imagenet" || j.Application == "yolov3" {
			continue
		}
		jobs = append(jobs, j)
		if len(jobs) == numJobs {
			break
		}
	}
	return apps, jobs
}

// policy is the scheduler configuration both runs use.
func policy(restartDelay time.Duration) scheduler.Config {
	return scheduler.Config{Policy: scheduler.Pollux{RestartDelay: restartDelay}, Placer: placement.RoundPlacer{}}
}

// twin is the running experiment.
type twin struct {
	t      *testing.T
	cs     kubernetes.Interface
	apps   map[string]*sim.Application
	t0     time.Time
	dir    string
	caFile string
	addr   string

	pods corelisters.PodLister

	mu       sync.Mutex
	srv      *report.Server
	h        *host.Host
	stopHost func()
	stopSrv  func()
	// stopWatch ends the server's watch of the stored state.
	stopWatch func()
	rounds    int
}

// virt is the twin's virtual time in seconds since the workload's start.
func (tw *twin) virt() float64 { return time.Since(tw.t0).Seconds() * compress }

// startServer starts a report endpoint; before, if set, runs once the new
// server has loaded the stored state and before it serves.
func (tw *twin) startServer(before func(*report.Server)) {
	t := tw.t
	srv, err := report.New(report.Config{Client: tw.cs, Rate: 100, Burst: 200})
	if err != nil {
		t.Fatal(err)
	}
	watch, stopWatch := context.WithCancel(context.Background())
	if err := srv.Start(watch); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ln net.Listener
	for i := 0; ; i++ { // the port of the previous server may take a moment to free
		ln, err = net.Listen("tcp", tw.addr)
		if err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	tw.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.ServeTLSListener(ctx, ln, filepath.Join(tw.dir, "tls.crt"), filepath.Join(tw.dir, "tls.key")); err != nil {
			t.Errorf("report endpoint: %v", err)
		}
	}()
	tw.mu.Lock()
	tw.srv = srv
	tw.stopSrv = func() { cancel(); <-done }
	tw.stopWatch = stopWatch
	tw.mu.Unlock()
}

// startHost builds the real host on the current report server and drives
// its rounds on the twin's clock: one every round (start to start), and,
// when a round had to defer a grown job whose pods the Job controller had
// not created yet, one more as soon as they exist (the host's own Run loop
// kicks a round on such events).
func (tw *twin) startHost() {
	t := tw.t
	h, err := host.New(host.Config{
		Client: tw.cs, Namespace: namespace, Identity: "twin",
		Interval:  time.Duration(float64(roundVirt) / compress),
		Scheduler: policy(time.Duration(float64(30*time.Second) / compress)),
		Models:    tw.srv,
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		interval := time.Duration(float64(roundVirt) / compress)
		// Rounds at the virtual round boundaries, as the simulator's.
		next := tw.t0
		for next.Before(time.Now()) {
			next = next.Add(interval)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
			next = next.Add(interval)
			r, err := h.RoundOnce(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.Logf("round: %v", err)
			}
			tw.mu.Lock()
			tw.rounds++
			n := tw.rounds
			tw.mu.Unlock()
			if os.Getenv("TWIN_DEBUG") != "" && n%5 == 1 {
				var ds []string
				for _, d := range r.Plan.Decisions {
					ds = append(ds, fmt.Sprintf("%s:%s %d→%d (%s)", d.Job, d.Action, d.From, d.To, d.Message))
				}
				all, _ := tw.pods.Pods(namespace).List(labels.Everything())
				term, bound := 0, 0
				for _, p := range all {
					if p.DeletionTimestamp != nil {
						term++
					} else if p.Spec.NodeName != "" {
						bound++
					}
				}
				t.Logf("pods: %d, terminating %d, bound %d", len(all), term, bound)
				for _, p := range all {
					if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && time.Since(p.DeletionTimestamp.Time) > 2*time.Second {
						t.Logf("  stuck %s node %q phase %s finalizers %v deleted %v ago grace %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Finalizers, time.Since(p.DeletionTimestamp.Time), *p.DeletionGracePeriodSeconds)
					}
				}
				t.Logf("round %d at %.0f s: %v binds %d evict %d skipped %v deferred %v decisions %v", n, tw.virt(), r.Duration, r.Binds, r.Evictions, r.Skipped, r.Deferred, ds)
			}
			if len(r.Deferred) == 0 {
				continue
			}
			for deadline := time.Now().Add(interval / 3); time.Now().Before(deadline); {
				if tw.podsCreated(r.Deferred) {
					break
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
			if _, err := h.RoundOnce(ctx); err != nil && ctx.Err() == nil {
				t.Logf("follow-up round: %v", err)
			}
		}
	}()
	tw.mu.Lock()
	tw.h = h
	tw.stopHost = func() { cancel(); <-done }
	tw.mu.Unlock()
}

// podsCreated reports whether every deferred group has as many live pods
// as its target.
func (tw *twin) podsCreated(keys []host.JobKey) bool {
	for _, k := range keys {
		_, name, _ := strings.Cut(string(k), "/")
		pods := tw.livePods(name)
		if len(pods) < target(pods) {
			return false
		}
	}
	return true
}

// target is the pod count the host publishes on a group's pods (1 before
// it published any).
func target(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		var v int
		if _, err := fmt.Sscan(p.Annotations[host.AnnotationTargetReplicas], &v); err == nil {
			n = max(n, v)
		}
	}
	if n == 0 {
		return 1
	}
	return n
}

func (tw *twin) livePods(job string) []*corev1.Pod {
	ps, _ := tw.pods.Pods(namespace).List(labels.SelectorFromSet(labels.Set{host.LabelGroup: job}))
	out := ps[:0:0]
	for _, p := range ps {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

func (tw *twin) server() *report.Server {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.srv
}

// trainer emulates one job's training processes: it trains at the
// simulator's ground-truth speed on the pods the host runs, stalls for the
// restart delay whenever its pods change, follows the scheduler's batch
// plans and reports what a real job would measure.
type trainer struct {
	mu   sync.Mutex // guards the state below against restartScheduler's reads
	tw   *twin
	spec sim.JobSpec
	app  *sim.Application
	lo   int
	hi   int

	created float64 // virtual submit time

	// the allocation the job trains on: devices per node, by node name
	nodes  []string
	counts []int

	interrupted bool
	tInt        float64
	stallUntil  float64
	last        float64

	progress float64
	epoch    int
	local    int
	accum    int
	plan     goodput.BatchPlan

	confirmed bool      // the plan for the allocation came from the scheduler (or timed out)
	nextPoll  time.Time // next report / plan poll (wall)
	reported  map[[3]int]bool
	lastGrad  goodput.GradStats

	seq int // pods created

	cl       *client.Client
	tokenPod types.UID
	token    string

	acked    int
	done     bool
	finish   float64
	lastErrs []string
}

func (tr *trainer) fixed() bool { return tr.app.FixedBatch > 0 }

func (tr *trainer) running() bool {
	return len(tr.counts) > 0 && !tr.interrupted
}

// rate is the ground-truth progress per virtual second (sim's rate).
func (tr *trainer) rate() float64 {
	step, sync, ok := tr.app.StepTime(gpuType, tr.counts, float64(tr.local))
	if !ok || !(step > 0) {
		return 0
	}
	sync = min(sync, step)
	iter := step + float64(tr.accum)*(step-sync)
	return tr.app.Gain(float64(tr.batch()), tr.epoch) / iter
}

func (tr *trainer) replicas() int {
	n := 0
	for _, c := range tr.counts {
		n += c
	}
	return n
}

func (tr *trainer) batch() int { return tr.local * tr.replicas() * (tr.accum + 1) }

// advance trains from tr.last to now, epoch by epoch (sim's advance).
func (tr *trainer) advance(now float64) {
	from := tr.last
	tr.last = now
	if !tr.running() || tr.done {
		return
	}
	start := max(from, tr.stallUntil)
	rem := now - start
	t := start
	for rem > 0 && !tr.done {
		rate := tr.rate()
		if !(rate > 0) {
			return
		}
		next := tr.app.EpochProgress(tr.epoch + 1)
		if tr.progress+rate*rem < next {
			tr.progress += rate * rem
			return
		}
		delta := min(max((next-tr.progress)/rate, 0), rem)
		tr.progress = next
		tr.epoch++
		t += delta
		rem -= delta
		if tr.epoch >= tr.app.MaxEpochs {
			tr.done, tr.finish = true, t
		}
	}
}

// setPlan applies a batch plan to the allocation (sim's chooseBatch).
func (tr *trainer) setPlan(p goodput.BatchPlan) {
	reps := tr.replicas()
	if tr.fixed() {
		b := tr.app.FixedBatch
		tr.local, tr.accum = sim.SplitBatch(b, reps, tr.lo, tr.hi, max(tr.app.MaxBatch, b), reps == 1 && b > tr.app.InitBatch)
		tr.plan = goodput.BatchPlan{}
		return
	}
	if p.Local > 0 {
		tr.plan = p
		tr.local, tr.accum = min(max(p.Local, tr.lo), tr.hi), p.Accum
		return
	}
	tr.plan = goodput.BatchPlan{}
	b := max(tr.app.InitBatch, tr.lo*reps)
	tr.local, tr.accum = sim.SplitBatch(b, reps, tr.lo, tr.hi, tr.app.MaxBatch, reps == 1 && b > tr.app.InitBatch)
}

func (tr *trainer) limits() goodput.Limits {
	return goodput.Limits{InitBatch: tr.app.InitBatch, MaxBatch: tr.app.MaxBatch, MinLocal: tr.lo, MaxLocal: tr.hi, Accumulation: true}
}

// observe looks at the job's pods and updates the allocation: a change of
// its bound pods interrupts training; it resumes, after the restart delay
// counted from the interruption, once every pod the Job asks for runs.
func (tr *trainer) observe(now float64) {
	tw := tr.tw
	pods := tw.livePods(tr.spec.Name)
	per := map[string]int{}
	allRunning := true
	want := target(pods)
	bound := 0
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		per[p.Spec.NodeName]++
		if p.Status.Phase != corev1.PodRunning {
			allRunning = false
		}
	}
	nodes := slices.Sorted(func(yield func(string) bool) {
		for n := range per {
			if !yield(n) {
				return
			}
		}
	})
	counts := make([]int, len(nodes))
	for i, n := range nodes {
		counts[i] = per[n]
	}
	same := slices.Equal(nodes, tr.nodes) && slices.Equal(counts, tr.counts)
	if !tr.interrupted && !same {
		tr.interrupted, tr.tInt = true, now
	}
	if !tr.interrupted {
		return
	}
	if len(nodes) == 0 {
		tr.nodes, tr.counts, tr.interrupted = nil, nil, false
		return
	}
	if !allRunning || bound != want {
		return
	}
	tr.nodes, tr.counts, tr.interrupted = nodes, counts, false
	tr.stallUntil = tr.tInt + tr.app.RestartDelay.Seconds()
	tr.confirmed = false
	tr.nextPoll = time.Time{}
	tr.setPlan(goodput.BatchPlan{})
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range pods {
		if p.UID == tr.tokenPod {
			return
		}
	}
	tr.newToken(pods[0])
}

// newToken asks the API server for a token bound to pod, as the kubelet
// projects one into it.
func (tr *trainer) newToken(p *corev1.Pod) {
	exp := int64(3600)
	tok, err := tr.tw.cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), "trainer", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{report.Audience}, ExpirationSeconds: &exp,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		tr.lastErrs = append(tr.lastErrs, err.Error())
		return
	}
	if err := os.WriteFile(tr.token, []byte(tok.Status.Token), 0o600); err != nil {
		tr.tw.t.Error(err)
	}
	tr.tokenPod = p.UID
}

// poll reports (new configurations, changed gradient statistics, the plan
// it trains with) and follows the answer.
func (tr *trainer) poll(now float64) {
	if tr.fixed() || !tr.running() || tr.tokenPod == "" || time.Now().Before(tr.nextPoll) {
		return
	}
	wallRound := time.Duration(float64(roundVirt) / compress)
	rep := client.Report{Limits: ptr(tr.limits())}
	reps, n := tr.replicas(), len(tr.counts)
	if now >= tr.stallUntil {
		key := [3]int{n, reps, tr.local}
		if !tr.reported[key] {
			step, sync, ok := tr.app.StepTime(gpuType, tr.counts, float64(tr.local))
			if ok {
				sync = min(sync, step)
				s := client.Steps{Nodes: n, Replicas: reps, Local: tr.local, Accum: tr.accum, Count: 1, OptimSeconds: step, SyncSeconds: sync}
				if tr.accum > 0 {
					s.AccumCount, s.AccumSeconds = tr.accum, step-sync
				}
				rep.Steps = []client.Steps{s}
			}
		}
		sqr, v := tr.app.GradStats(float64(tr.batch()), tr.epoch)
		g := goodput.GradStats{Sqr: sqr, Var: v}
		old, cur := tr.lastGrad.NoiseScale(tr.app.InitBatch), g.NoiseScale(tr.app.InitBatch)
		if tr.lastGrad == (goodput.GradStats{}) || math.Abs(cur-old) > 0.01*math.Abs(old) {
			rep.Grad = &g
		}
	}
	if tr.plan.Local > 0 {
		cur := tr.plan
		cur.Local, cur.Accum, cur.Batch = tr.local, tr.accum, tr.batch()
		rep.Current = &cur
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	resp, err := tr.cl.Report(ctx, rep)
	cancel()
	if err != nil {
		tr.lastErrs = append(tr.lastErrs, err.Error())
		if len(tr.lastErrs) > 20 {
			tr.lastErrs = tr.lastErrs[len(tr.lastErrs)-20:]
		}
		tr.nextPoll = time.Now().Add(50 * time.Millisecond)
		return
	}
	tr.acked++
	for _, s := range rep.Steps {
		tr.reported[[3]int{s.Nodes, s.Replicas, s.Local}] = true
	}
	if rep.Grad != nil {
		tr.lastGrad = *rep.Grad
	}
	if resp.Replicas == reps && resp.Nodes == n {
		if resp.Plan.Local > 0 && (resp.Plan.Local != tr.local || resp.Plan.Accum != tr.accum || !tr.confirmed) {
			tr.setPlan(resp.Plan)
		}
		tr.confirmed = true
	}
	if !tr.confirmed && now < tr.stallUntil {
		tr.nextPoll = time.Now().Add(30 * time.Millisecond)
		return
	}
	tr.confirmed = true
	// Like the simulator's jobs, re-plan (and report new measurements)
	// about once a round.
	tr.nextPoll = time.Now().Add(wallRound / 2)
}

func ptr[T any](v T) *T { return &v }

// run is the trainer's goroutine.
func (tr *trainer) run(ctx context.Context) {
	tk := time.NewTicker(tick)
	defer tk.Stop()
	defer func() {
		// Done: the job's containers exit and free their GPUs.
		zero := int64(0)
		for _, p := range tr.tw.livePods(tr.spec.Name) {
			_ = tr.tw.cs.CoreV1().Pods(namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}()
	for !tr.done {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		tr.mu.Lock()
		now := tr.tw.virt()
		tr.advance(now)
		if !tr.done {
			tr.control(ctx)
			tr.observe(now)
			tr.poll(now)
		}
		tr.mu.Unlock()
	}
	// Done: the job's containers exit; the test removes the Job and its
	// pods at once, as a completed Job frees its GPUs.
	bg := metav1.DeletePropagationBackground
	zero := int64(0)
	_ = tr.tw.cs.BatchV1().Jobs(namespace).Delete(context.Background(), tr.spec.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	ps, _ := tr.tw.pods.Pods(namespace).List(labels.SelectorFromSet(labels.Set{batchv1.JobNameLabel: tr.spec.Name}))
	for _, p := range ps {
		_, _ = tr.tw.cs.CoreV1().Pods(namespace).Patch(context.Background(), p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = tr.tw.cs.CoreV1().Pods(namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
}

// control is the group's elastic controller: it creates pods until the
// group has as many as the target the host publishes on them (the host
// itself evicts the pods a shrink frees).
func (tr *trainer) control(ctx context.Context) {
	pods := tr.tw.livePods(tr.spec.Name)
	want := target(pods)
	// Surplus pods (from an older, larger target) that are not bound go.
	extra := len(pods) - want
	for _, p := range pods {
		if extra <= 0 {
			break
		}
		if p.Spec.NodeName == "" {
			zero := int64(0)
			if err := tr.tw.cs.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err == nil {
				extra--
			}
		}
	}
	for i := len(pods); i < want; i++ {
		p := podObject(tr.spec, tr.app, tr.seq, want)
		tr.seq++
		if _, err := tr.tw.cs.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			tr.lastErrs = append(tr.lastErrs, err.Error())
			return
		}
	}
}

// podObject is one pod of the job's pod group (an adaptive elastic group;
// the twin's control loop is its controller).
func podObject(spec sim.JobSpec, app *sim.Application, seq, want int) *corev1.Pod {
	grace := int64(0)
	maxRep := "64"
	if app.MaxReplicas > 0 {
		maxRep = fmt.Sprint(app.MaxReplicas)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", spec.Name, seq), Namespace: namespace,
			Labels: map[string]string{host.LabelGroup: spec.Name},
			Annotations: map[string]string{host.AnnotationKind: "adaptive", host.AnnotationMinReplicas: "1", host.AnnotationMaxReplicas: maxRep,
				host.AnnotationTargetReplicas: fmt.Sprint(want)}},
		Spec: corev1.PodSpec{
			SchedulerName:      host.DefaultSchedulerName,
			ServiceAccountName: "trainer",
			RestartPolicy:      corev1.RestartPolicyNever,
			// The emulated trainer checkpoints at once; its restart
			// delay is charged by the trainer itself.
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "train", Image: "trainer:twin",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{host.ResourceGPU: resource.MustParse("1")}}}},
		},
	}
}

func gpuNode(name string) *corev1.Node {
	rl := corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(gpusPerNode, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{host.LabelGPUProduct: productT4, "kubernetes.io/hostname": name},
			Annotations: map[string]string{testcluster.KwokNodeAnnotation: "fake"}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestTwin is the digital twin: see the package comment. It also restarts
// the scheduler (host and report endpoint) in the middle of the run and
// checks that the refitted models equal the ones before, and that a forged
// report from another job's pod is refused and changes nothing.
func TestTwin(t *testing.T) {
	apps, jobs := workload(t)
	cluster, err := accel.ParseSpec(clusterSpec)
	if err != nil {
		t.Fatal(err)
	}
	simStart := time.Now()
	simRes, err := sim.Run(context.Background(), sim.Config{Cluster: cluster, Jobs: jobs, Apps: apps,
		Scheduler: mustScheduler(t, policy(0)), Kind: scheduler.Adaptive, Interval: roundVirt})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("simulator: %d jobs, avg JCT %.0f s, makespan %.0f s, %d restarts (%v)", simRes.Completed, simRes.AvgJCT.Seconds(),
		simRes.Makespan.Seconds(), simRes.Restarts, time.Since(simStart).Round(time.Millisecond))

	c := testcluster.Start(t, testcluster.Options{ControllerManager: true, Kwok: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := c.Client
	for _, ns := range []string{namespace, host.DefaultLeaseNamespace} { // the jobs'; the scheduler's (binding key, report state)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range nodesN {
		if _, err := cs.CoreV1().Nodes().Create(ctx, gpuNode(fmt.Sprintf("node-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ns, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for i := range ns.Items {
				if nodeReady(&ns.Items[i]) {
					ready++
				}
			}
		}
		if ready == nodesN {
			// No node-lifecycle controller runs here: lift the not-ready
			// taint the API server put on the new nodes, as it would.
			for i := range ns.Items {
				n := &ns.Items[i]
				n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == corev1.TaintNodeNotReady })
				if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d kwok nodes ready", ready, nodesN)
		}
	}

	tw := &twin{t: t, cs: cs, apps: apps, dir: t.TempDir(), addr: "127.0.0.1:0"}
	writeCerts(t, tw)
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace))
	tw.pods = f.Core().V1().Pods().Lister()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	tw.startServer(nil)

	trainers := make([]*trainer, len(jobs))
	for i, js := range jobs {
		app := apps[js.Application]
		lo, hi, _ := app.LocalRange(app.DefaultType())
		tr := &trainer{tw: tw, spec: js, app: app, lo: lo, hi: hi, reported: map[[3]int]bool{},
			token: filepath.Join(tw.dir, js.Name+".token")}
		if err := os.WriteFile(tr.token, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		tr.cl, err = client.New(client.Config{URL: "https://" + tw.addr, Job: namespace + "/" + js.Name, TokenFile: tr.token, CAFile: tw.caFile})
		if err != nil {
			t.Fatal(err)
		}
		trainers[i] = tr
	}

	tw.t0 = time.Now()
	tw.startHost()
	var wg sync.WaitGroup
	runCtx, stopRun := context.WithTimeout(ctx, budget)
	defer stopRun()
	wg.Add(1)
	go func() { // submit the jobs at their (compressed) arrival times
		defer wg.Done()
		for _, tr := range trainers {
			at := tw.t0.Add(time.Duration(float64(tr.spec.Submit) / compress))
			select {
			case <-runCtx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			tr.created = tw.virt()
			tr.last = tr.created
			wg.Add(1)
			go func() { defer wg.Done(); tr.run(runCtx) }()
		}
	}()

	// Halfway through the simulator's makespan, restart the scheduler.
	restartAt := tw.t0.Add(time.Duration(simRes.Makespan.Seconds() / 2 / compress * float64(time.Second)))
	select {
	case <-runCtx.Done():
	case <-time.After(time.Until(restartAt)):
		restartScheduler(t, tw, trainers)
	}

	wg.Wait()
	tw.stopHost()
	var sum float64
	var twinJCT []float64
	for _, tr := range trainers {
		if !tr.done {
			t.Errorf("job %s did not complete (progress %.1f of %.1f, epoch %d/%d, allocation %v, errors %v)", tr.spec.Name,
				tr.progress, tr.app.TargetProgress(), tr.epoch, tr.app.MaxEpochs, tr.counts, tr.lastErrs)
			continue
		}
		jct := tr.finish - tr.created
		twinJCT = append(twinJCT, jct)
		sum += jct
	}
	if len(twinJCT) < len(trainers) {
		return
	}
	avg := sum / float64(len(twinJCT))
	simAvg := simRes.AvgJCT.Seconds()
	ratio := avg / simAvg
	for i, tr := range trainers {
		t.Logf("  %-16s twin JCT %6.0f s  simulator %6.0f s", tr.spec.Name, twinJCT[i], simRes.Jobs[i].JCT.Seconds())
	}
	tw.mu.Lock()
	rounds := tw.rounds
	tw.mu.Unlock()
	t.Logf("twin: %d rounds in %v wall (%d in the simulator)", rounds, time.Since(tw.t0).Round(time.Millisecond), simRes.Rounds)
	line := fmt.Sprintf("twin: avg JCT %.0f s, simulator %.0f s, ratio %.3f", avg, simAvg, ratio)
	fmt.Println(line)
	t.Log(line)
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("ratio %.3f is outside [0.85, 1.15]", ratio)
	}
}

func mustScheduler(t *testing.T, cfg scheduler.Config) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeCerts(t *testing.T, tw *twin) {
	caFile, err := testcluster.WriteServingFiles(tw.dir, "twin-ca")
	if err != nil {
		t.Fatal(err)
	}
	tw.caFile = caFile
}

// restartScheduler stops the host and the report endpoint (in-flight
// reports finish first), starts new ones that know only what is in the API
// server, and checks that every job's refitted model is the model the old
// scheduler had fitted, and that no acknowledged report was lost. Then it
// forges a report with one job's pod token for another job.
func restartScheduler(t *testing.T, tw *twin, trainers []*trainer) {
	start := time.Now()
	tw.stopHost()
	old := tw.server()
	tw.stopSrv()
	// Reports the old server wrote but could not acknowledge any more are
	// stored all the same: let its watch catch up with the API server, so
	// that it knows what a new server will read.
	time.Sleep(300 * time.Millisecond)
	tw.stopWatch()
	before := map[host.JobKey]snap{}
	for _, tr := range trainers {
		k := host.JobKey(namespace + "/" + tr.spec.Name)
		m, ok := old.Model(k, goodput.AnyType)
		var n int64
		if st := old.State(k); st != nil {
			n = st.Reports
		}
		tr.mu.Lock()
		acked := tr.acked
		tr.mu.Unlock()
		if int64(acked) > n {
			t.Errorf("restart: job %s: %d reports acknowledged, %d stored", k, acked, n)
		}
		before[k] = snap{m, ok, n}
	}
	models := 0
	tw.startServer(func(srv *report.Server) { models = compareModels(t, before, srv) })
	tw.startHost()
	gap := time.Since(start)
	srv := tw.server()
	t.Logf("restart at %.0f s (virtual): %d fitted models, all equal after the restart; scheduler down %v wall", tw.virt(), models, gap.Round(time.Millisecond))

	// A forged report: the pod of one running job reports for another.
	var thief, victim *trainer
	var thiefPod *corev1.Pod
	for _, tr := range trainers {
		if ps := tw.livePods(tr.spec.Name); len(ps) > 0 && thief == nil && ps[0].Spec.NodeName != "" {
			thief, thiefPod = tr, ps[0]
		} else if victim == nil && srv.State(host.JobKey(namespace+"/"+tr.spec.Name)) != nil {
			victim = tr
		}
	}

	if thief == nil || victim == nil {
		t.Errorf("restart: no pair of jobs to forge a report with")
		return
	}
	vk := host.JobKey(namespace + "/" + victim.spec.Name)
	stBefore := srv.State(vk)
	exp := int64(600)
	tok, err := tw.cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), "trainer", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{report.Audience}, ExpirationSeconds: &exp,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: thiefPod.Name, UID: thiefPod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stolen := filepath.Join(tw.dir, "stolen.token")
	if err := os.WriteFile(stolen, []byte(tok.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	forger, err := client.New(client.Config{URL: "https://" + tw.addr, Job: string(vk), TokenFile: stolen, CAFile: tw.caFile})
	if err != nil {
		t.Fatal(err)
	}
	_, err = forger.Report(context.Background(), client.Report{Limits: ptr(victim.limits()),
		Steps: []client.Steps{{Nodes: 1, Replicas: 1, Local: victim.lo, Count: 1000, OptimSeconds: 100}}})
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != 403 {
		t.Errorf("forged report from %s's pod for %s: %v, want 403", thief.spec.Name, victim.spec.Name, err)
	}
	if st := srv.State(vk); st == nil || st.Reports != stBefore.Reports || len(st.Configs) != len(stBefore.Configs) {
		t.Errorf("the forged report changed %s's state", victim.spec.Name)
	}
	t.Logf("forged report from %s's pod for %s: %v", thief.spec.Name, victim.spec.Name, err)
	empty := filepath.Join(tw.dir, "empty.token")
	_ = os.WriteFile(empty, nil, 0o600)
	anon, _ := client.New(client.Config{URL: "https://" + tw.addr, Job: string(vk), TokenFile: empty, CAFile: tw.caFile})
	if _, err := anon.Report(context.Background(), client.Report{}); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("report without a token: %v, want 401", err)
	}
}

// compareModels checks that the new server refits every job's model
// exactly and knows every acknowledged report; it returns the number of
// fitted models.
func compareModels(t *testing.T, before map[host.JobKey]snap, srv *report.Server) int {
	models := 0
	for _, k := range sortedKeys(before) {
		b := before[k]
		m, ok := srv.Model(k, goodput.AnyType)
		var n int64
		if st := srv.State(k); st != nil {
			n = st.Reports
		}
		if ok != b.ok || m != b.model || n != b.reports {
			t.Errorf("restart: job %s: model %v %+v (%d reports) before, %v %+v (%d reports) after", k, b.ok, b.model, b.reports, ok, m, n)
		}
		if ok {
			models++
		}
	}
	return models
}

// snap is what a scheduler knew of a job's model.
type snap struct {
	model   goodput.Model
	ok      bool
	reports int64
}

func sortedKeys(m map[host.JobKey]snap) []host.JobKey {
	keys := make([]host.JobKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("TWIN_DEBUG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
