package host

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

func node(name, product string, gpus int, mod ...func(*corev1.Node)) *corev1.Node {
	q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelGPUProduct: product}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{ResourceGPU: q}, Capacity: corev1.ResourceList{ResourceGPU: q},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mod {
		m(n)
	}
	return n
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
func taint(key string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func job(name string, parallelism, gpus int, ann map[string]string) *batchv1.Job {
	p := int32(parallelism)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: ann,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: batchv1.JobSpec{Parallelism: &p, Template: corev1.PodTemplateSpec{Spec: podSpec("goodsched", gpus)}},
	}
}

func podSpec(sched string, gpus int) corev1.PodSpec {
	return corev1.PodSpec{SchedulerName: sched, Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}}}}}
}

// pod returns a pod of job j (nil: a pod of another scheduler), bound to
// nodeName with devices when nodeName is set.
func pod(name string, j *batchv1.Job, gpus int, nodeName, devices string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: map[string]string{}, Labels: map[string]string{}},
		Spec: podSpec("default-scheduler", gpus)}
	if j != nil {
		yes := true
		p.Spec.SchedulerName = "goodsched"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}}
		p.Labels[batchv1.JobNameLabel] = j.Name
	}
	p.Spec.NodeName = nodeName
	if devices != "" {
		p.Annotations[AnnotationDevices] = devices
		if j != nil {
			p.Annotations[AnnotationBinding] = bindingMAC(testKey, p.UID, nodeName, devices)
		}
	}
	return p
}

// testKey is the binding key of the mapping tests.
var testKey = []byte("0123456789abcdef0123456789abcdef")

func opts() snapshotOptions {
	return snapshotOptions{schedulerName: "goodsched", toleratedTaints: []string{ResourceGPU}, bindingKey: testKey}
}

func deviceIDs(c accel.Cluster, nodeName string) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.Name == nodeName {
			for _, d := range n.Devices {
				out = append(out, d.ID)
			}
		}
	}
	return out
}

func TestSnapshotNodesBecomeTheCluster(t *testing.T) {
	j := job("j", 1, 1, nil)
	term := pod("term", j, 1, "busy", "1")
	now := metav1.Now()
	term.DeletionTimestamp = &now
	nodes := []*corev1.Node{
		node("a100", "NVIDIA-A100-SXM4-40GB", 8),
		node("t4", "Tesla-T4", 4),
		node("a100-80", "NVIDIA-A100-PCIE", 2, func(n *corev1.Node) { n.Labels[LabelGPUMemory] = "81920" }),
		node("down", "Tesla-T4", 4, notReady),
		node("cordoned", "Tesla-T4", 4, cordoned),
		node("tainted", "Tesla-T4", 4, taint("dedicated")),
		node("gpu-tainted", "Tesla-T4", 2, taint(ResourceGPU)),
		node("busy", "Tesla-T4", 4),
		node("cpu-only", "", 0),
	}
	pods := []*corev1.Pod{
		pod("mine", j, 1, "cordoned", "0"),     // keeps device 0 of the cordoned node
		pod("other", nil, 2, "busy", ""),       // another scheduler's pod: 2 GPUs gone
		term,                                   // terminating: its device 1 is not offered
		pod("other-pending", nil, 2, "", ""),   // not bound: uses nothing
		pod("other-on-t4", nil, 1, "down", ""), // on a NotReady node: irrelevant
	}
	s := buildSnapshot(nodes, pods, []*batchv1.Job{j}, opts(), assumed{})
	want := map[string][]string{
		"a100":        {"a100/0", "a100/1", "a100/2", "a100/3", "a100/4", "a100/5", "a100/6", "a100/7"},
		"t4":          {"t4/0", "t4/1", "t4/2", "t4/3"},
		"a100-80":     {"a100-80/0", "a100-80/1"},
		"down":        nil,
		"cordoned":    {"cordoned/0"},
		"tainted":     nil,
		"gpu-tainted": {"gpu-tainted/0", "gpu-tainted/1"},
		"busy":        {"busy/0"}, // 1 terminating, 3 and 2 taken by the other pod
		"cpu-only":    nil,
	}
	for n, ids := range want {
		if got := deviceIDs(s.cluster, n); !slices.Equal(got, ids) {
			t.Errorf("node %s: devices %v, want %v", n, got, ids)
		}
	}
	types := map[string]accel.TypeKey{"a100": "a100-40gb", "t4": "t4", "a100-80": "a100-80gb"}
	for _, n := range s.cluster.Nodes {
		if w, ok := types[n.Name]; ok && n.Devices[0].Type != w {
			t.Errorf("node %s: type %s, want %s", n.Name, n.Devices[0].Type, w)
		}
	}
	if s.offered["cordoned"] || !s.offered["a100"] {
		t.Errorf("offered: %v", s.offered)
	}
	if err := s.cluster.Validate(); err != nil {
		t.Error(err)
	}
}

func TestSnapshotJobsBecomeSchedulerJobs(t *testing.T) {
	done := job("done", 1, 1, nil)
	done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	suspended := job("suspended", 1, 1, nil)
	yes := true
	suspended.Spec.Suspend = &yes
	other := job("other", 1, 1, nil)
	other.Spec.Template.Spec.SchedulerName = "default-scheduler"
	partly := job("partly", 2, 1, nil)
	four := int32(4)
	partly.Spec.Completions = &four
	partly.Status.Succeeded = 3
	jobs := []*batchv1.Job{
		job("rigid", 3, 2, nil),
		job("elastic", 2, 1, map[string]string{AnnotationKind: "elastic", AnnotationMinReplicas: "2", AnnotationMaxReplicas: "6",
			AnnotationWeight: "2.5", AnnotationPriority: "5", AnnotationPreemptible: "false", AnnotationGPUTypes: "t4, a100",
			AnnotationRestarts: "3"}),
		job("adaptive", 1, 1, map[string]string{AnnotationKind: "adaptive", AnnotationRestarts: "-1"}),
		job("wide-elastic", 1, 2, map[string]string{AnnotationKind: "elastic"}),
		done, suspended, other, partly,
	}
	groupPod := func(name string) *corev1.Pod {
		p := pod(name, nil, 1, "", "")
		p.Spec.SchedulerName = "goodsched"
		p.Labels[LabelGroup] = "g"
		p.Annotations[AnnotationGroupSize] = "3"
		return p
	}
	pods := []*corev1.Pod{groupPod("g-0"), groupPod("g-1")}
	s := buildSnapshot([]*corev1.Node{node("a100", "NVIDIA-A100-SXM4-40GB", 8), node("t4", "Tesla-T4", 4)}, pods, jobs, opts(), assumed{})
	got := map[string]scheduler.Job{}
	for _, u := range s.units {
		got[u.sj.ID] = u.sj
	}
	want := map[string]scheduler.Job{
		"ns/rigid":    {ID: "ns/rigid", Kind: scheduler.Rigid, Requested: 6, MinReplicas: 6, MaxReplicas: 6, Weight: 1},
		"ns/elastic":  {ID: "ns/elastic", Kind: scheduler.Elastic, Requested: 2, MinReplicas: 2, MaxReplicas: 6, Weight: 2.5, Priority: 5, NonPreemptible: true, Types: []accel.TypeKey{"a100-40gb", "t4"}, Restarts: 3},
		"ns/adaptive": {ID: "ns/adaptive", Kind: scheduler.Elastic, Requested: 1, MinReplicas: 1, Weight: 1},
		"ns/partly":   {ID: "ns/partly", Kind: scheduler.Rigid, Requested: 1, MinReplicas: 1, MaxReplicas: 1, Weight: 1},
		"ns/g":        {ID: "ns/g", Kind: scheduler.Rigid, Requested: 3, MinReplicas: 3, MaxReplicas: 3, Weight: 1},
	}
	if len(got) != len(want) {
		t.Errorf("units %v, want %d", slices.Sorted(func(y func(string) bool) {
			for k := range got {
				if !y(k) {
					return
				}
			}
		}), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: missing", id)
			continue
		}
		g.Submitted = time.Time{}
		if g.ID != w.ID || g.Kind != w.Kind || g.Requested != w.Requested || g.MinReplicas != w.MinReplicas || g.MaxReplicas != w.MaxReplicas ||
			g.Weight != w.Weight || g.Priority != w.Priority || g.NonPreemptible != w.NonPreemptible || !slices.Equal(g.Types, w.Types) ||
			g.Restarts != w.Restarts {
			t.Errorf("%s:\n got %+v\nwant %+v", id, g, w)
		}
	}
	if len(s.skipped) != 1 || s.skipped[0].key != "ns/wide-elastic" || !errors.Is(s.skipped[0].err, ErrAnnotation) {
		t.Errorf("skipped %+v, want ns/wide-elastic", s.skipped)
	}
}

func TestParseSpecRejectsMalformedAnnotations(t *testing.T) {
	for _, tc := range []struct {
		ann map[string]string
		key string
	}{
		{map[string]string{AnnotationKind: "gang"}, AnnotationKind},
		{map[string]string{AnnotationMinReplicas: "0"}, AnnotationMinReplicas},
		{map[string]string{AnnotationMinReplicas: "two"}, AnnotationMinReplicas},
		{map[string]string{AnnotationMaxReplicas: "-1"}, AnnotationMaxReplicas},
		{map[string]string{AnnotationMinReplicas: "5", AnnotationMaxReplicas: "4"}, AnnotationMinReplicas},
		{map[string]string{AnnotationWeight: "0"}, AnnotationWeight},
		{map[string]string{AnnotationWeight: "NaN"}, AnnotationWeight},
		{map[string]string{AnnotationWeight: "heavy"}, AnnotationWeight},
		{map[string]string{AnnotationPriority: "1.5"}, AnnotationPriority},
		{map[string]string{AnnotationPreemptible: "maybe"}, AnnotationPreemptible},
		{map[string]string{AnnotationGPUTypes: "a100,,t4"}, AnnotationGPUTypes},
		{map[string]string{AnnotationGPUTypes: "H100 SXM"}, AnnotationGPUTypes},
		{map[string]string{AnnotationDeadline: "tomorrow"}, AnnotationDeadline},
		{map[string]string{AnnotationDeadline: "2026-12-09"}, AnnotationDeadline},
		{map[string]string{AnnotationDelayTolerant: "yes", AnnotationDeadline: "2026-12-09T06:00:00Z"}, AnnotationDelayTolerant},
		{map[string]string{AnnotationDelayTolerant: "true"}, AnnotationDeadline}, // a delay-tolerant job needs a deadline
		{map[string]string{AnnotationWork: "0s"}, AnnotationWork},
		{map[string]string{AnnotationWork: "-3h"}, AnnotationWork},
		{map[string]string{AnnotationWork: "36"}, AnnotationWork},
		{map[string]string{AnnotationTier: "gold"}, AnnotationTier},
		{map[string]string{AnnotationTier: ""}, AnnotationTier},
	} {
		_, err := parseSpec(tc.ann)
		if !errors.Is(err, ErrAnnotation) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%v: err %v, want ErrAnnotation naming %s", tc.ann, err, tc.key)
		}
	}
	sp, err := parseSpec(map[string]string{AnnotationDelayTolerant: "true", AnnotationDeadline: "2026-12-09T06:00:00+01:00", AnnotationWork: "36h"})
	if err != nil || !sp.tolerant || !sp.deadline.Equal(time.Date(2026, 12, 9, 5, 0, 0, 0, time.UTC)) || sp.work != 36*time.Hour {
		t.Errorf("delay-tolerant spec: got %+v, %v", sp, err)
	}
	if sp, err := parseSpec(map[string]string{AnnotationTier: " Premium"}); err != nil || sp.tier != tiers.Premium {
		t.Errorf("tier: got %v, %v", sp.tier, err)
	}
	sp, err = parseSpec(map[string]string{AnnotationKind: " Elastic ", AnnotationGPUTypes: "A100,a100-40gb,t4"})
	if err != nil || sp.kind != scheduler.Elastic || !slices.Equal(sp.types, []accel.TypeKey{"a100-40gb", "t4"}) {
		t.Errorf("got %+v, %v", sp, err)
	}
	for _, v := range []string{"", "1,1", "-1", "a", "0,x", "8", "0,1,2,3,4,5,6,7,8"} {
		if _, err := parseDevices(v, 8); !errors.Is(err, ErrAnnotation) {
			t.Errorf("parseDevices(%q, 8): %v", v, err)
		}
	}
	if _, err := parseDevices(strings.Repeat("0,", MaxDevicesAnnotationBytes), 8); !errors.Is(err, ErrAnnotationTooLong) {
		t.Errorf("parseDevices of %d bytes: %v, want ErrAnnotationTooLong", 2*MaxDevicesAnnotationBytes, err)
	}
	if d, err := parseDevices(" 3, 1,0", 4); err != nil || !slices.Equal(d, []int{0, 1, 3}) {
		t.Errorf("parseDevices(\" 3, 1,0\", 4) = %v, %v", d, err)
	}
}

func TestSnapshotCurrentFromPods(t *testing.T) {
	gang := job("gang", 2, 2, nil)
	half := job("half", 2, 1, nil)
	el := job("el", 3, 1, map[string]string{AnnotationKind: "elastic"})
	lost := job("lost", 1, 1, nil)
	pods := []*corev1.Pod{
		pod("gang-0", gang, 2, "a", "0,1"), pod("gang-1", gang, 2, "a", "2,3"),
		pod("half-0", half, 1, "a", "4"), pod("half-1", half, 1, "", ""),
		pod("el-0", el, 1, "b", "0"), pod("el-1", el, 1, "b", "0"), pod("el-2", el, 1, "", ""),
		pod("lost-0", lost, 1, "down", "0"),
	}
	pods[5].CreationTimestamp = metav1.NewTime(time.Now()) // el-1 is newer: el-0 keeps device 0
	nodes := []*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 8), node("b", "NVIDIA-A100-SXM4-40GB", 8), node("down", "Tesla-T4", 1, notReady)}
	s := buildSnapshot(nodes, pods, []*batchv1.Job{gang, half, el, lost}, opts(), assumed{})
	cur := map[string][]string{}
	for _, a := range s.current {
		cur[a.Job] = a.Devices
	}
	if want := []string{"a/0", "a/1", "a/2", "a/3"}; !slices.Equal(cur["ns/gang"], want) {
		t.Errorf("gang current %v, want %v", cur["ns/gang"], want)
	}
	if want := []string{"b/0"}; !slices.Equal(cur["ns/el"], want) {
		t.Errorf("el current %v, want %v", cur["ns/el"], want)
	}
	if cur["ns/half"] != nil || cur["ns/lost"] != nil {
		t.Errorf("current %v: half and lost must not run", cur)
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(s.broken); !slices.Equal(got, []string{"half-0"}) {
		t.Errorf("broken %v, want [half-0]", got)
	}
	if got := names(s.lost); !slices.Equal(got, []string{"lost-0"}) {
		t.Errorf("lost %v", got)
	}
	if got := names(s.conflicting); !slices.Equal(got, []string{"el-1"}) {
		t.Errorf("conflicting %v", got)
	}
	// An assumed bind counts as bound before the informer shows it.
	s = buildSnapshot(nodes, pods, []*batchv1.Job{gang, half, el, lost}, opts(),
		assumed{binds: map[types.UID]bindRecord{"uid-half-1": {node: "a", devices: []int{5}}}})
	if len(s.broken) != 0 {
		t.Errorf("with the assumed bind, broken %v", names(s.broken))
	}
}

func TestPlanUnitKeepsPlannedPodsAndChunksDevices(t *testing.T) {
	el := job("el", 4, 1, map[string]string{AnnotationKind: "elastic", AnnotationMaxReplicas: "4"})
	pods := []*corev1.Pod{pod("el-0", el, 1, "a", "0"), pod("el-1", el, 1, "a", "1"), pod("el-2", el, 1, "a", "2"), pod("el-3", el, 1, "a", "3")}
	nodes := []*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 8)}
	h := &Host{}
	s := buildSnapshot(nodes, pods, []*batchv1.Job{el}, opts(), assumed{})
	up := h.planUnit(s.units[0], scheduler.Decision{Job: "ns/el", Action: placement.Shrink, To: 2, Assignment: assign("ns/el", "a/1", "a/3")})
	var ev []string
	for _, p := range up.evict {
		ev = append(ev, p.pod.Name)
	}
	if !slices.Equal(ev, []string{"el-0", "el-2"}) || len(up.bind) != 0 || up.targetPods != 2 {
		t.Errorf("shrink: evict %v, bind %d, target %d", ev, len(up.bind), up.targetPods)
	}

	rigid := job("r", 2, 2, nil)
	rp := []*corev1.Pod{pod("r-0", rigid, 2, "", ""), pod("r-1", rigid, 2, "", "")}
	s = buildSnapshot(nodes, rp, []*batchv1.Job{rigid}, opts(), assumed{})
	up = h.planUnit(s.units[0], scheduler.Decision{Job: "ns/r", Action: placement.Start, To: 4, Assignment: assign("ns/r", "a/6", "a/4", "a/5", "a/7")})
	if len(up.bind) != 2 || !slices.Equal(up.slots[0].devices, []int{4, 5}) || !slices.Equal(up.slots[1].devices, []int{6, 7}) {
		t.Errorf("rigid start: slots %+v, bind %d", up.slots, len(up.bind))
	}
	up = h.planUnit(s.units[0], scheduler.Decision{Job: "ns/r", Action: placement.Start, To: 4, Assignment: assign("ns/r", "a/0", "a/1", "a/2", "b/0")})
	if up.deferred == "" || len(up.bind) != 0 {
		t.Errorf("3+1 devices for pods of 2 must not bind: %+v", up)
	}
	// A rigid gang that moves restarts whole.
	rb := []*corev1.Pod{pod("r-0", rigid, 2, "a", "0,1"), pod("r-1", rigid, 2, "a", "2,3")}
	s = buildSnapshot(nodes, rb, []*batchv1.Job{rigid}, opts(), assumed{})
	up = h.planUnit(s.units[0], scheduler.Decision{Job: "ns/r", Action: placement.Move, To: 4, Assignment: assign("ns/r", "a/0", "a/1", "a/4", "a/5")})
	if len(up.evict) != 2 {
		t.Errorf("rigid move: evict %d, want 2", len(up.evict))
	}
}

func assign(job string, ids ...string) (a placement.Assignment) {
	a.Job, a.Devices = job, ids
	return a
}

// TestRoundOnceWithFakeClientset runs a round against client-go's fake
// clientset: the binding carries the devices annotation, the Job gets its
// last-decision annotation and the batch plan of the model, and the model
// source learns the decision, and a RoundSink the round.
func TestRoundOnceWithFakeClientset(t *testing.T) {
	j := job("el", 2, 1, map[string]string{AnnotationKind: "adaptive", AnnotationMaxReplicas: "2"})
	objs := []runtime.Object{node("a", "NVIDIA-A100-SXM4-40GB", 4), j, pod("el-0", j, 1, "", ""), pod("el-1", j, 1, "", "")}
	cs := fake.NewClientset(objs...)
	var binds []*corev1.Binding
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binds = append(binds, a.(k8stesting.CreateAction).GetObject().(*corev1.Binding))
		return true, nil, nil
	})
	models := &roundModels{fakeModels: fakeModels{s: linearPlan{}}}
	h, err := New(Config{Client: cs, Identity: "t", Models: models})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := h.RoundOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Binds != 2 || len(binds) != 2 {
		t.Fatalf("round %+v, binds %v", r, binds)
	}
	for _, b := range binds {
		if b.Target.Name != "a" || b.Annotations[AnnotationDevices] == "" || b.UID == "" {
			t.Errorf("binding %+v", b)
		}
	}
	got, err := cs.BatchV1().Jobs("ns").Get(ctx, "el", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Annotations[AnnotationLastDecision], "start 0→2") {
		t.Errorf("%s = %q", AnnotationLastDecision, got.Annotations[AnnotationLastDecision])
	}
	if want := `{"batch":64,"local":32,"accum":0,"goodput":123.5}`; got.Annotations[AnnotationBatchPlan] != want {
		t.Errorf("%s = %q, want %q", AnnotationBatchPlan, got.Annotations[AnnotationBatchPlan], want)
	}
	if d, ok := models.published["ns/el"]; !ok || d.To != 2 || d.Batch.Local != 32 {
		t.Errorf("published %+v", models.published)
	}
	// A RoundSink also learns the whole round (the report endpoint answers
	// DMR reconfiguration requests from it).
	if len(models.rounds) != 1 || len(models.inputs[0].Jobs) != 1 || models.inputs[0].Jobs[0].ID != "ns/el" {
		t.Fatalf("rounds published: %d, inputs %+v", len(models.rounds), models.inputs)
	}
	if d, ok := models.rounds[0].Decision("ns/el"); !ok || d.To != 2 {
		t.Errorf("round's decision for ns/el: %+v", d)
	}
	rec := httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{"goodsched_binds_total 2", `goodsched_gpus_allocated{type="a100-40gb"} 2`, `goodsched_jobs{state="running"} 1`, "goodsched_round_duration_seconds_count 1"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if _, err := New(Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("New without Client: %v", err)
	}
	if _, err := New(Config{Client: cs, Interval: -time.Second}); !errors.Is(err, ErrConfig) {
		t.Errorf("New with a negative Interval: %v", err)
	}
}

type fakeModels struct {
	s         goodput.Speedup
	published map[JobKey]scheduler.Decision
}

func (f *fakeModels) Speedup(JobKey) (goodput.Speedup, bool) { return f.s, true }
func (f *fakeModels) Publish(k JobKey, d scheduler.Decision) {
	if f.published == nil {
		f.published = map[JobKey]scheduler.Decision{}
	}
	f.published[k] = d
}

type linearPlan struct{}

func (linearPlan) Speedup(_ string, _, replicas int) float64 { return float64(replicas) }
func (linearPlan) BatchPlan(_ string, _, replicas int) goodput.BatchPlan {
	return goodput.BatchPlan{Batch: 32 * replicas, Local: 32, Goodput: 123.456}
}

// TestSnapshotAllocatableDropKeepsRunningPods: while the device plugin
// restarts (allocatable 0) or marks a GPU unhealthy (allocatable 7 of 8),
// our pods on high indices keep running (they are not conflicting) and no
// free GPU beyond allocatable is offered.
func TestSnapshotAllocatableDropKeepsRunningPods(t *testing.T) {
	el := job("el", 2, 1, map[string]string{AnnotationKind: "elastic"})
	pods := []*corev1.Pod{pod("el-0", el, 1, "a", "7"), pod("el-1", el, 1, "b", "7")}
	drop := func(alloc int64) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Allocatable[ResourceGPU] = *resource.NewQuantity(alloc, resource.DecimalSI)
		}
	}
	nodes := []*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 8, drop(0)), node("b", "NVIDIA-A100-SXM4-40GB", 8, drop(7))}
	s := buildSnapshot(nodes, pods, []*batchv1.Job{el}, opts(), assumed{})
	if len(s.conflicting) != 0 {
		t.Errorf("conflicting %v, want none", s.conflicting)
	}
	if len(s.current) != 1 || !slices.Equal(s.current[0].Devices, []string{"a/7", "b/7"}) {
		t.Errorf("current %v, want el on a/7 and b/7", s.current)
	}
	// a offers only its held GPU; b offers 7 of 8 (its held one included).
	if got := deviceIDs(s.cluster, "a"); !slices.Equal(got, []string{"a/7"}) {
		t.Errorf("node a offers %v, want [a/7]", got)
	}
	if got := len(deviceIDs(s.cluster, "b")); got != 7 {
		t.Errorf("node b offers %d GPUs, want 7", got)
	}
}

// TestSnapshotJobWithoutItsTypeKeepsItsGPUs: a running Job whose allowed
// types are no longer offered waits, and the GPUs its pods hold are offered
// to no one else.
func TestSnapshotJobWithoutItsTypeKeepsItsGPUs(t *testing.T) {
	el := job("el", 1, 1, map[string]string{AnnotationKind: "elastic", AnnotationGPUTypes: "t4"})
	s := buildSnapshot([]*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 2)}, []*corev1.Pod{pod("el-0", el, 1, "a", "1")},
		[]*batchv1.Job{el}, opts(), assumed{})
	if len(s.waitingNoType) != 1 {
		t.Fatalf("waitingNoType %d, want the Job", len(s.waitingNoType))
	}
	if got := deviceIDs(s.cluster, "a"); !slices.Equal(got, []string{"a/0"}) {
		t.Errorf("node a offers %v, want only the free a/0", got)
	}
}

// TestSnapshotTrustsOnlyOurBindings: another scheduler's pods count by what
// they request, whatever goodsched.io/devices they carry, and a pod of ours
// whose binding MAC does not verify (an annotation rewritten after the
// bind, or copied from another pod) holds nothing: it is conflicting, its
// GPUs counted by request, the refusal recorded.
func TestSnapshotTrustsOnlyOurBindings(t *testing.T) {
	j := job("j", 1, 2, map[string]string{AnnotationPreemptible: "false"})
	mine := pod("j-0", j, 2, "a", "0,1")
	liar := pod("liar", nil, 0, "a", "")
	liar.Annotations[AnnotationDevices] = "0,1,2,3,4,5,6,7"
	hog := pod("hog", nil, 8, "b", "")
	hog.Annotations[AnnotationDevices] = "0"
	nodes := []*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 8), node("b", "NVIDIA-A100-SXM4-40GB", 8)}
	s := buildSnapshot(nodes, []*corev1.Pod{mine, liar, hog}, []*batchv1.Job{j}, opts(), assumed{})
	if len(s.conflicting) != 0 || len(s.current) != 1 || !slices.Equal(s.current[0].Devices, []string{"a/0", "a/1"}) {
		t.Errorf("conflicting %v, current %v: want j-0 holding a/0, a/1", s.conflicting, s.current)
	}
	if got := len(deviceIDs(s.cluster, "a")); got != 8 {
		t.Errorf("node a offers %d GPUs, want 8 (6 free, 2 held by j-0)", got)
	}
	if got := len(deviceIDs(s.cluster, "b")); got != 0 {
		t.Errorf("node b offers %d GPUs, want 0 (the 8-GPU pod uses them all)", got)
	}

	// Rewritten after the bind: the MAC no longer matches.
	forged := pod("j-0", j, 2, "a", "0,1")
	forged.Annotations[AnnotationDevices] = "2,3"
	// Copied from another pod: the MAC is of another UID.
	copied := pod("k-0", j, 2, "a", "")
	copied.Annotations[AnnotationDevices], copied.Annotations[AnnotationBinding] = "0,1", mine.Annotations[AnnotationBinding]
	s = buildSnapshot(nodes, []*corev1.Pod{forged, copied}, []*batchv1.Job{j}, opts(), assumed{})
	if len(s.conflicting) != 2 || len(s.refused) != 2 || s.refused[0].reason != "binding-unverified" {
		t.Errorf("conflicting %d, refused %+v: want both pods refused as unverified", len(s.conflicting), s.refused)
	}
	if got := len(deviceIDs(s.cluster, "a")); got != 4 {
		t.Errorf("node a offers %d GPUs, want 4 (the two unverified pods' 4 GPUs counted by request)", got)
	}
}

// roundModels is a ModelSource that is also a RoundSink.
type roundModels struct {
	fakeModels
	rounds []scheduler.Plan
	inputs []scheduler.Input
}

func (r *roundModels) PublishRound(in scheduler.Input, plan scheduler.Plan) {
	r.inputs, r.rounds = append(r.inputs, in), append(r.rounds, plan)
}
