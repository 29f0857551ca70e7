package host

import (
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// TestSnapshotCountsHiddenGPUsByReason builds a cluster where each way of
// hiding GPUs occurs once and checks the counts per type and reason, and
// the words a waiting decision gets.
func TestSnapshotCountsHiddenGPUsByReason(t *testing.T) {
	j := job("j", 1, 1, nil)
	term := pod("term", j, 1, "busy", "3")
	now := metav1.Now()
	term.DeletionTimestamp = &now
	short := func(n *corev1.Node) { n.Status.Allocatable[ResourceGPU] = *resource.NewQuantity(2, resource.DecimalSI) }
	nodes := []*corev1.Node{
		node("new", "NVIDIA-A100-SXM4-40GB", 8, taint("node.kubernetes.io/not-ready")),
		node("gpu-tainted", "NVIDIA-A100-SXM4-40GB", 8, taint(ResourceGPU)), // tolerated: offered
		node("cordoned", "NVIDIA-A100-SXM4-40GB", 4, cordoned),
		node("down", "Tesla-T4", 4, notReady),
		node("busy", "Tesla-T4", 4),
		node("sick", "Tesla-T4", 4, short),
		node("h100", "NVIDIA-H100-80GB-HBM3", 8),
	}
	pods := []*corev1.Pod{
		pod("mine", j, 1, "cordoned", "0"), // holds 1 of the cordoned node's 4
		pod("other", nil, 2, "busy", ""),   // another scheduler's: 2 of busy's
		term,                               // terminating: busy's device 3
	}
	s := buildSnapshot(nodes, pods, []*batchv1.Job{j}, opts(), assumed{})
	want := map[accel.TypeKey]map[string]int{
		"a100-40gb": {HiddenTaint: 8, HiddenCordoned: 3},
		"t4":        {HiddenNotReady: 4, HiddenForeignPods: 2, HiddenTerminating: 1, HiddenUnallocatable: 2},
		"h100-80gb": {},
	}
	if got := s.hidden.types(); len(got) != len(want) {
		t.Errorf("types present %v, want %d", got, len(want))
	}
	for typ, reasons := range want {
		for _, r := range hiddenReasons {
			if got := s.hidden.count(typ, r); got != reasons[r] {
				t.Errorf("%s %s: %d hidden, want %d", typ, r, got, reasons[r])
			}
		}
	}
	if got := s.capacity["a100-40gb"]; got != 9 { // gpu-tainted's 8 and the held one
		t.Errorf("a100-40gb offered %d, want 9", got)
	}
	note := s.hidden.note([]accel.TypeKey{"a100-40gb", "t4"})
	wantNote := "; hidden: 11 a100-40gb (cordoned 3, taint node.kubernetes.io/not-ready 8), 8 t4 (not-ready 4, foreign-pods 2, unallocatable 2)"
	if note != wantNote {
		t.Errorf("note\n got %q\nwant %q", note, wantNote)
	}
	if n := s.hidden.note([]accel.TypeKey{"h100-80gb"}); n != "" {
		t.Errorf("nothing of h100-80gb is hidden, but note %q", n)
	}
	if n := s.hidden.note(nil); !strings.Contains(n, "a100-40gb") || !strings.Contains(n, "t4") {
		t.Errorf("a job of any type: note %q", n)
	}
}

// TestWaitingDecisionNamesTheTaint: the first contact — kwok
// nodes that kept node.kubernetes.io/not-ready — now says why the job
// waits, in the decision and in the gauges, with a series for every type.
func TestWaitingDecisionNamesTheTaint(t *testing.T) {
	nodes := []*corev1.Node{
		node("a", "NVIDIA-A100-SXM4-40GB", 8, taint("node.kubernetes.io/not-ready")),
		node("b", "Tesla-T4", 4, taint("node.kubernetes.io/not-ready")),
	}
	j := job("train", 1, 1, map[string]string{AnnotationKind: "elastic", AnnotationGPUTypes: "a100"})
	s := buildSnapshot(nodes, nil, []*batchv1.Job{j}, opts(), assumed{})
	if len(s.waitingNoType) != 1 {
		t.Fatalf("waiting for a type: %d units, want 1", len(s.waitingNoType))
	}
	if note := s.hidden.note(s.waitingNoType[0].spec.types); note != "; hidden: 8 a100-40gb (taint node.kubernetes.io/not-ready 8)" {
		t.Errorf("note %q", note)
	}

	// A job of any type is scheduled and waits: its Queue decision says why.
	any := job("any", 1, 1, nil)
	s = buildSnapshot(nodes[:1], nil, []*batchv1.Job{any}, opts(), assumed{})
	byKey := map[JobKey]*unit{}
	for _, u := range s.units {
		byKey[u.key] = u
	}
	ds := []scheduler.Decision{
		{Job: "ns/any", Action: placement.Queue, Message: "no capacity"},
		{Job: "ns/any", Action: placement.Queue},
		{Job: "ns/any", Action: placement.Keep, Message: "kept"},
	}
	s.explainWaits(ds, byKey)
	if want := "no capacity; hidden: 8 a100-40gb (taint node.kubernetes.io/not-ready 8)"; ds[0].Message != want {
		t.Errorf("message %q, want %q", ds[0].Message, want)
	}
	if want := "hidden: 8 a100-40gb (taint node.kubernetes.io/not-ready 8)"; ds[1].Message != want {
		t.Errorf("message %q, want %q", ds[1].Message, want)
	}
	if ds[2].Message != "kept" {
		t.Errorf("a Keep decision changed: %q", ds[2].Message)
	}

	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, false)
	if err != nil {
		t.Fatal(err)
	}
	m.setOffered(buildSnapshot(nodes, nil, nil, opts(), assumed{}))
	got := gauges(t, reg)
	if n := len(got["goodsched_gpus_offered"]); n != 2 {
		t.Errorf("goodsched_gpus_offered has %d series, want one per type (2): %v", n, got["goodsched_gpus_offered"])
	}
	if v, ok := got["goodsched_gpus_offered"]["t4"]; !ok || v != 0 {
		t.Errorf("offered t4 %v (%v), want a zero series", v, ok)
	}
	if n := len(got["goodsched_gpus_hidden"]); n != 2*len(hiddenReasons) {
		t.Errorf("goodsched_gpus_hidden has %d series, want %d", n, 2*len(hiddenReasons))
	}
	if v := got["goodsched_gpus_hidden"]["taint,a100-40gb"]; v != 8 {
		t.Errorf("hidden a100-40gb taint %v, want 8", v)
	}
	if v, ok := got["goodsched_gpus_hidden"]["cordoned,t4"]; !ok || v != 0 {
		t.Errorf("hidden t4 cordoned %v (%v), want a zero series", v, ok)
	}
}

// TestUnknownGPUTypeAndEveryBadAnnotationReported: "t44" is an
// InvalidAnnotation like any malformed value, a type only a node has is
// not, and a Job with several bad annotations hears of all of them, in one
// line.
func TestUnknownGPUTypeAndEveryBadAnnotationReported(t *testing.T) {
	nodes := []*corev1.Node{node("x", "Acme-Tensor-9000", 4)}
	nodeType, _ := nodeType(nodes[0])
	jobs := []*batchv1.Job{
		job("typo", 1, 1, map[string]string{AnnotationGPUTypes: "t44"}),
		job("node-type", 1, 1, map[string]string{AnnotationGPUTypes: string(nodeType)}),
		job("catalog-type", 1, 1, map[string]string{AnnotationGPUTypes: "h100-80gb"}),
		job("many", 1, 2, map[string]string{AnnotationKind: "elastic", AnnotationWeight: "heavy", AnnotationGPUTypes: "t4,t44"}),
	}
	s := buildSnapshot(nodes, nil, jobs, opts(), assumed{})
	errs := map[JobKey]error{}
	for _, sk := range s.skipped {
		errs[sk.key] = sk.err
	}
	if len(errs) != 2 {
		t.Errorf("skipped %v, want ns/typo and ns/many", errs)
	}
	if err := errs["ns/typo"]; !errors.Is(err, ErrAnnotation) || !strings.Contains(err.Error(), "unknown GPU type t44") {
		t.Errorf("ns/typo: %v", err)
	}
	text := errorText(errs["ns/many"])
	for _, want := range []string{AnnotationWeight, "unknown GPU type t44", AnnotationKind + "=elastic needs pods of one"} {
		if !strings.Contains(text, want) {
			t.Errorf("ns/many: %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "\n") || strings.Count(text, ErrAnnotation.Error()) != 1 {
		t.Errorf("ns/many: not one line with one prefix: %q", text)
	}
}

// gauges gathers reg's gauges: name → label values (comma-joined, in
// the order of the label names) → value.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		series := map[string]float64{}
		for _, m := range mf.GetMetric() {
			var vals []string
			for _, l := range m.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			series[strings.Join(vals, ",")] = m.GetGauge().GetValue()
		}
		out[mf.GetName()] = series
	}
	return out
}
