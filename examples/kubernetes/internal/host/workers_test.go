package host

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/easyscale"
)

func TestParseSpecWorkers(t *testing.T) {
	for _, tc := range []map[string]string{
		{AnnotationWorkers: "0"},
		{AnnotationWorkers: "-3"},
		{AnnotationWorkers: "eight"},
		{AnnotationWorkers: "2.5"},
		{AnnotationWorkers: ""},
		{AnnotationWorkers: "99999999999999999999"},
		{AnnotationWorkers: strconv.Itoa(MaxWorkers + 1)},
		{AnnotationWorkers: "8", AnnotationKind: "adaptive"},
		{AnnotationWorkers: "2", AnnotationKind: "elastic", AnnotationMinReplicas: "3"},
	} {
		_, err := parseSpec(tc)
		if !errors.Is(err, ErrAnnotation) || !strings.Contains(err.Error(), AnnotationWorkers) {
			t.Errorf("%v: err %v, want ErrAnnotation naming %s", tc, err, AnnotationWorkers)
		}
	}
	sp, err := parseSpec(map[string]string{AnnotationWorkers: " 8 ", AnnotationKind: "elastic", AnnotationMaxReplicas: "16"})
	if err != nil || sp.workers != 8 || sp.maxReplicas != 16 {
		t.Errorf("got %+v, %v", sp, err)
	}
	// A W-job's pods have one GPU each.
	if _, err := unitSpec(map[string]string{AnnotationWorkers: "8"}, "ns", nil, 2, nil, opts()); !errors.Is(err, ErrAnnotation) || !strings.Contains(err.Error(), AnnotationWorkers) {
		t.Errorf("W-job of 2-GPU pods: %v", err)
	}
}

// TestSampleWorkersJob: deploy/sample-workers-job.yaml is a valid W-job
// whose trainer reads the annotations the host writes.
func TestSampleWorkersJob(t *testing.T) {
	j := readDeployFile[batchv1.Job](t, "../../deploy/sample-workers-job.yaml")
	sp, err := unitSpec(j.Annotations, j.Namespace, j.Labels, gpuCount(&j.Spec.Template.Spec), nil, opts())
	if err != nil || sp.workers != 8 || sp.kind != scheduler.Elastic {
		t.Errorf("sample: %+v, %v", sp, err)
	}
	var paths []string
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		paths = append(paths, e.ValueFrom.FieldRef.FieldPath)
	}
	for _, it := range j.Spec.Template.Spec.Volumes[0].DownwardAPI.Items {
		paths = append(paths, it.FieldRef.FieldPath)
	}
	for _, key := range []string{AnnotationPodWorkers, AnnotationPodWorkerRanks} {
		if want := "metadata.annotations['" + key + "']"; slices.Index(paths, want) < 0 || len(paths) != 4 {
			t.Errorf("the sample's trainer does not read %s: %v", want, paths)
		}
	}
}

// wPod is a bound pod of W-job j on node's device dev hosting workers
// (no AnnotationPodWorkers when workers is "").
func wPod(name string, j *batchv1.Job, node, dev, workers string) *corev1.Pod {
	p := pod(name, j, 1, node, dev)
	if workers != "" {
		p.Annotations[AnnotationPodWorkers] = workers
	}
	return p
}

func TestSnapshotWorkersFromPods(t *testing.T) {
	nodes := []*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 4), node("t", "Tesla-T4", 4)}
	ann := map[string]string{AnnotationKind: "elastic", AnnotationWorkers: "6", AnnotationMaxReplicas: "8"}
	j := job("w", 2, 1, ann)
	// A gang of two types: the pods' counts are read back, in the
	// assignment's device order.
	s := buildSnapshot(nodes, []*corev1.Pod{wPod("w-0", j, "t", "1", "2"), wPod("w-1", j, "a", "3", "4")}, []*batchv1.Job{j}, opts(), assumed{})
	if len(s.skipped) != 0 || len(s.current) != 1 {
		t.Fatalf("skipped %v, current %v", s.skipped, s.current)
	}
	if c := s.current[0]; !slices.Equal(c.Devices, []string{"a/3", "t/1"}) || !slices.Equal(c.Workers, []int{4, 2}) {
		t.Errorf("current %+v, want a/3 hosting 4 and t/1 hosting 2", c)
	}
	if sj := s.units[0].sj; sj.Workers != 6 || sj.Kind != scheduler.Elastic || sj.MaxReplicas != 8 {
		t.Errorf("job %+v", sj)
	}
	// Counts that do not sum to W (a pod lost, an annotation edited) are
	// not read: the scheduler spreads W again.
	for _, ws := range [][2]string{{"2", "3"}, {"", "6"}, {"0", "6"}, {"x", "4"}} {
		s = buildSnapshot(nodes, []*corev1.Pod{wPod("w-0", j, "t", "1", ws[0]), wPod("w-1", j, "a", "3", ws[1])}, []*batchv1.Job{j}, opts(), assumed{})
		if len(s.current) != 1 || s.current[0].Workers != nil {
			t.Errorf("pods hosting %v: current %+v, want no workers", ws, s.current)
		}
	}
	// The host's own patch, not yet seen by the informers, counts.
	s = buildSnapshot(nodes, []*corev1.Pod{wPod("w-0", j, "t", "1", "2"), wPod("w-1", j, "a", "3", "2")}, []*batchv1.Job{j}, opts(),
		assumed{workers: map[types.UID]int{"uid-w-1": 4}})
	if !slices.Equal(s.current[0].Workers, []int{4, 2}) {
		t.Errorf("with the assumed patch: %+v", s.current)
	}

	// A pod group is a W-job when its pods say so.
	gp := func(name, node, dev, workers string) *corev1.Pod {
		p := wPod(name, nil, node, dev, workers)
		p.Spec.SchedulerName = "goodsched"
		p.Labels[LabelGroup] = "g"
		p.Annotations[AnnotationKind] = "elastic"
		p.Annotations[AnnotationWorkers] = "5"
		if node != "" {
			p.Annotations[AnnotationBinding] = bindingMAC(testKey, p.UID, node, dev)
		}
		return p
	}
	s = buildSnapshot(nodes, []*corev1.Pod{gp("g-0", "a", "0", "3"), gp("g-1", "t", "0", "2"), gp("g-2", "", "", "")}, nil, opts(), assumed{})
	if len(s.units) != 1 || s.units[0].sj.Workers != 5 || len(s.current) != 1 || !slices.Equal(s.current[0].Workers, []int{3, 2}) {
		t.Errorf("pod group of W 5: units %d, current %+v", len(s.units), s.current)
	}

	// More GPUs held than workers (W lowered by hand): the job is skipped
	// with its GPUs withheld; the round goes on.
	small := job("small", 3, 1, map[string]string{AnnotationKind: "elastic", AnnotationWorkers: "2"})
	other := job("other", 1, 1, nil)
	s = buildSnapshot(nodes, []*corev1.Pod{wPod("s-0", small, "a", "0", "1"), wPod("s-1", small, "a", "1", "1"), wPod("s-2", small, "a", "2", "1"), pod("o-0", other, 1, "", "")},
		[]*batchv1.Job{small, other}, opts(), assumed{})
	if len(s.skipped) != 1 || s.skipped[0].key != "ns/small" || !errors.Is(s.skipped[0].err, ErrAnnotation) || !strings.Contains(s.skipped[0].err.Error(), AnnotationWorkers) {
		t.Errorf("skipped %+v", s.skipped)
	}
	if len(s.units) != 1 || s.units[0].key != "ns/other" || slices.Contains(deviceIDs(s.cluster, "a"), "a/1") {
		t.Errorf("units %v, a's devices %v", len(s.units), deviceIDs(s.cluster, "a"))
	}
	// A rigid W-job whose gang is larger than W.
	s = buildSnapshot(nodes, nil, []*batchv1.Job{job("r", 4, 1, map[string]string{AnnotationWorkers: "3"})}, opts(), assumed{})
	if len(s.skipped) != 1 || !strings.Contains(s.skipped[0].err.Error(), "gang's 4 pods") {
		t.Errorf("rigid gang of 4 with W 3: skipped %+v", s.skipped)
	}
	// Only a W-job may run on two types.
	plain := job("plain", 2, 1, map[string]string{AnnotationKind: "elastic"})
	s = buildSnapshot(nodes, []*corev1.Pod{pod("p-0", plain, 1, "a", "0"), pod("p-1", plain, 1, "t", "0")}, []*batchv1.Job{plain}, opts(), assumed{})
	if len(s.skipped) != 1 || !strings.Contains(s.skipped[0].err.Error(), AnnotationWorkers) || len(s.cluster.Nodes) != 2 || len(deviceIDs(s.cluster, "a")) != 3 {
		t.Errorf("a plain job on two types: skipped %+v, a's devices %v", s.skipped, deviceIDs(s.cluster, "a"))
	}
}

// TestPlanUnitTellsEachPodItsWorkers: the binding and the kept pods carry
// the plan's workers per device and their ranks.
func TestPlanUnitTellsEachPodItsWorkers(t *testing.T) {
	nodes := []*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 4), node("t", "Tesla-T4", 4)}
	j := job("w", 3, 1, map[string]string{AnnotationKind: "elastic", AnnotationWorkers: "7"})
	pods := []*corev1.Pod{wPod("w-0", j, "a", "0", "7"), pod("w-1", j, 1, "", ""), pod("w-2", j, 1, "", "")}
	s := buildSnapshot(nodes, pods, []*batchv1.Job{j}, opts(), assumed{})
	d := scheduler.Decision{Job: "ns/w", Action: placement.Grow, From: 1, To: 3,
		Assignment: assign("ns/w", "a/0", "a/1", "t/2")}
	d.Assignment.Workers = []int{3, 3, 1}
	up := (&Host{}).planUnit(s.units[0], d)
	if len(up.bind) != 2 || up.slots[0].share != (workerShare{3, 3}) || up.slots[1].share != (workerShare{1, 6}) {
		t.Fatalf("slots %+v", up.slots)
	}
	if rl := up.relabels(); len(rl) != 1 || rl[0].p.pod.Name != "w-0" || rl[0].share != (workerShare{3, 0}) || rl[0].share.ranks() != "0-2" {
		t.Errorf("relabels %+v", rl)
	}
	up.deferred = "waiting"
	if len(up.relabels()) != 0 {
		t.Error("kept pods relabelled while the new pods wait")
	}
}

// TestWorkersPropertySharesSumToW runs random rounds of the host's mapping
// (snapshot, Schedule, planUnits, and the writes applied as the API server
// would) with W-jobs under every policy, nodes that fail, pods that die
// pod annotations edited by hand and max-replicas changed. After every round whose binds all
// went through, the bound pods of each W-job host exactly W logical
// workers (each at least one, ranks 0..W-1 once each), never more pods
// than W, and every plan's Assignment.Workers sums to W.
func TestWorkersPropertySharesSumToW(t *testing.T) {
	policies := []struct {
		name string
		pol  scheduler.Policy
	}{
		{"easyscale", easyscale.Policy{}},
		{"easyscale-homo", easyscale.Policy{Homogeneous: true}},
		{"goodput", scheduler.Pollux{}},
		{"goodput-mix", easyscale.Mix{Policy: scheduler.Pollux{}}},
		{"fifo", baselines.FIFO{}},
	}
	rng := rand.New(rand.NewPCG(45, 2026))
	var checked, mixed, resized, relabelled int
	for trial := range 50 {
		pc := policies[trial%len(policies)]
		sched, err := scheduler.New(scheduler.Config{Policy: pc.pol})
		if err != nil {
			t.Fatal(err)
		}
		h := &Host{sched: sched}
		w := newWorld(rng)
		for round := range 25 {
			w.disturb(rng)
			w.controller()
			snap := buildSnapshot(w.nodes, w.pods, w.jobs, opts(), assumed{})
			a := &assembly{snap: snap, byKey: map[JobKey]*unit{}}
			for _, p := range slices.Concat(snap.lost, snap.broken, snap.conflicting) {
				a.cleanup = append(a.cleanup, deletion{pod: p})
			}
			a.in = scheduler.Input{Cluster: snap.cluster, Current: snap.current, Now: w.now, Jobs: h.inputJobs(snap, a.byKey)}
			plan, err := h.plan(context.Background(), a.in)
			if err != nil {
				t.Fatalf("trial %d (%s) round %d: %v", trial, pc.name, round, err)
			}
			for _, d := range plan.Decisions {
				u := a.byKey[JobKey(d.Job)]
				if W := u.spec.workers; W > 0 && d.To > 0 {
					if sum(d.Assignment.Workers) != W || len(d.Assignment.Devices) > W || slices.Min(d.Assignment.Workers) < 1 {
						t.Fatalf("trial %d (%s) round %d: %s (W %d): plan's workers %v on %d devices", trial, pc.name, round, d.Job, W, d.Assignment.Workers, len(d.Assignment.Devices))
					}
					if len(d.Shares) > 1 {
						mixed++
					}
					if d.From > 0 && d.To != d.From {
						resized++
					}
				}
			}
			ups := h.planUnits(a, plan)
			w.apply(a.cleanup, ups)
			for _, up := range ups {
				relabelled += len(up.relabels())
				if up.u.spec.workers == 0 || (up.deferred != "" && len(up.slots) > 0) {
					continue
				}
				if msg := w.checkShares(up.u.key, up.u.spec.workers, up.d.To); msg != "" {
					t.Fatalf("trial %d (%s) round %d: %s: %s", trial, pc.name, round, up.u.key, msg)
				}
				checked++
			}
			w.now = w.now.Add(time.Minute)
		}
	}
	t.Logf("%d W-job rounds checked; %d mixed-type decisions, %d resizes, %d running pods told new shares", checked, mixed, resized, relabelled)
	if mixed == 0 || resized == 0 || relabelled == 0 {
		t.Errorf("the rounds never mixed types (%d), resized (%d) or relabelled pods (%d)", mixed, resized, relabelled)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// world is a cluster the property test plays: nodes, Jobs and their pods,
// with the Job controller and the API server's effect of the host's
// writes.
type world struct {
	nodes  []*corev1.Node
	jobs   []*batchv1.Job
	pods   []*corev1.Pod
	down   string // a node NotReady this round
	serial int
	now    time.Time
}

func newWorld(rng *rand.Rand) *world {
	w := &world{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for k := range 1 + rng.IntN(3) {
		w.nodes = append(w.nodes, node(fmt.Sprintf("a%d", k), "NVIDIA-A100-SXM4-40GB", 1+rng.IntN(4)))
	}
	for k := range 1 + rng.IntN(3) {
		w.nodes = append(w.nodes, node(fmt.Sprintf("t%d", k), "Tesla-T4", 1+rng.IntN(4)))
	}
	for k := range 1 + rng.IntN(4) {
		W := 1 + rng.IntN(10)
		ann := map[string]string{AnnotationWorkers: strconv.Itoa(W)}
		par := 1 + rng.IntN(W)
		if rng.IntN(4) > 0 {
			ann[AnnotationKind] = "elastic"
			if rng.IntN(2) == 0 {
				ann[AnnotationMaxReplicas] = strconv.Itoa(1 + rng.IntN(W+2))
			}
			par = 1
		}
		j := job(fmt.Sprintf("w%d", k), par, 1, ann)
		j.CreationTimestamp = metav1.NewTime(w.now.Add(time.Duration(k) * time.Second))
		w.jobs = append(w.jobs, j)
	}
	if rng.IntN(2) == 0 {
		w.jobs = append(w.jobs, job("plain", 1, 1, map[string]string{AnnotationKind: "elastic", AnnotationMaxReplicas: "3"}))
	}
	return w
}

// disturb fails a node for a round, kills a bound pod or edits a bound
// pod's workers annotation or changes a Job's max-replicas, now and then.
func (w *world) disturb(rng *rand.Rand) {
	for _, n := range w.nodes {
		n.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	w.down = ""
	var bound []*corev1.Pod
	for _, p := range w.pods {
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
		}
	}
	switch r := rng.IntN(20); {
	case r == 0:
		n := w.nodes[rng.IntN(len(w.nodes))]
		n.Status.Conditions[0].Status = corev1.ConditionFalse
		w.down = n.Name
	case r == 1 && len(bound) > 0:
		dead := bound[rng.IntN(len(bound))]
		w.pods = slices.DeleteFunc(w.pods, func(p *corev1.Pod) bool { return p == dead })
	case r == 2 && len(bound) > 0:
		bound[rng.IntN(len(bound))].Annotations[AnnotationPodWorkers] = []string{"0", "x", "3", "12"}[rng.IntN(4)]
	case r == 3:
		// The user lowers (or lifts) an elastic Job's max-replicas.
		j := w.jobs[rng.IntN(len(w.jobs))]
		if j.Annotations[AnnotationKind] == "elastic" {
			j.Annotations[AnnotationMaxReplicas] = strconv.Itoa(1 + rng.IntN(4))
		}
	}
}

// controller is the Job controller: each Job gets pods up to its
// parallelism.
func (w *world) controller() {
	for _, j := range w.jobs {
		live := 0
		for _, p := range w.pods {
			if p.OwnerReferences[0].UID == j.UID {
				live++
			}
		}
		for ; live < int(*j.Spec.Parallelism); live++ {
			w.serial++
			p := pod(fmt.Sprintf("%s-%d", j.Name, w.serial), j, 1, "", "")
			p.CreationTimestamp = metav1.NewTime(w.now.Add(time.Duration(w.serial) * time.Millisecond))
			w.pods = append(w.pods, p)
		}
	}
}

// apply does to the world what the host's writes do: evictions, binds
// (with the binding's annotations), the kept pods' new shares and the
// elastic Jobs' parallelism.
func (w *world) apply(cleanup []deletion, ups []*unitPlan) {
	gone := map[types.UID]bool{}
	for _, d := range cleanup {
		gone[d.pod.UID] = true
	}
	for _, up := range ups {
		for _, p := range slices.Concat(up.evict, up.extra) {
			gone[p.pod.UID] = true
		}
		for k, p := range up.bind {
			s := up.slots[k]
			p.pod.Spec.NodeName = s.node
			p.pod.Annotations[AnnotationDevices] = formatDevices(s.devices)
			p.pod.Annotations[AnnotationBinding] = bindingMAC(testKey, p.pod.UID, s.node, formatDevices(s.devices))
			if s.share.count > 0 {
				p.pod.Annotations[AnnotationPodWorkers] = strconv.Itoa(s.share.count)
				p.pod.Annotations[AnnotationPodWorkerRanks] = s.share.ranks()
			}
		}
		for _, rl := range up.relabels() {
			rl.p.pod.Annotations[AnnotationPodWorkers] = strconv.Itoa(rl.share.count)
			rl.p.pod.Annotations[AnnotationPodWorkerRanks] = rl.share.ranks()
		}
		if up.u.job != nil && up.u.spec.kind != scheduler.Rigid {
			n := int32(up.targetPods)
			up.u.job.Spec.Parallelism = &n
		}
	}
	w.pods = slices.DeleteFunc(w.pods, func(p *corev1.Pod) bool { return gone[p.UID] })
}

// checkShares returns what is wrong with W-job key's bound pods after a
// round that planned to devices: "" when they host W workers, ranks 0..W-1
// once each, at most W pods, as many as the plan's devices.
func (w *world) checkShares(key JobKey, W, to int) string {
	var bound []*corev1.Pod
	for _, p := range w.pods {
		if p.Spec.NodeName != "" && JobKey("ns/"+p.OwnerReferences[0].Name) == key {
			bound = append(bound, p)
		}
	}
	if len(bound) != to || len(bound) > W {
		return fmt.Sprintf("%d bound pods, plan %d, W %d", len(bound), to, W)
	}
	if len(bound) == 0 {
		return ""
	}
	ranks := make([]int, W)
	total := 0
	for _, p := range bound {
		n, err := strconv.Atoi(p.Annotations[AnnotationPodWorkers])
		var first, last int
		_, rerr := fmt.Sscanf(p.Annotations[AnnotationPodWorkerRanks], "%d-%d", &first, &last)
		if err != nil || n < 1 || rerr != nil || last-first+1 != n || first < 0 || last >= W {
			return fmt.Sprintf("pod %s: %s=%q %s=%q", p.Name, AnnotationPodWorkers, p.Annotations[AnnotationPodWorkers], AnnotationPodWorkerRanks, p.Annotations[AnnotationPodWorkerRanks])
		}
		for r := first; r <= last; r++ {
			ranks[r]++
		}
		total += n
	}
	if total != W || slices.Min(ranks) != 1 || slices.Max(ranks) != 1 {
		return fmt.Sprintf("the pods host %d workers (W %d), ranks covered %v", total, W, ranks)
	}
	return ""
}
