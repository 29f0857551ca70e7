package host

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability"
)

// TestSlowdownEstimate: a job that reports 2× slower steps after it moved
// to node b makes b's GPUs 2× slower in goodsched_device_slowdown and in
// the round's Speeds, a one-off outlier moves nothing, and a malformed step
// time is refused, counted and changes no estimate.
func TestSlowdownEstimate(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := New(Config{Client: fake.NewClientset(), Identity: "t", Registry: reg, Variability: &variability.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	snap := buildSnapshot([]*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 2), node("b", "NVIDIA-A100-SXM4-40GB", 2)}, nil, nil, opts(), assumed{})
	c := snap.cluster
	on := func(devs ...string) []placement.Assignment {
		return []placement.Assignment{{Job: "ns/j", Devices: devs}}
	}
	report := func(sec float64) error {
		return h.ObserveSteps("ns/j", []StepTime{{Replicas: 2, Local: 32, Seconds: sec}, {Replicas: 4, Local: 32, Seconds: 9}})
	}
	if sp := h.slow.round(c, on("a/0", "a/1")); sp != nil {
		t.Fatalf("Speeds before any report: %v, want nil", sp)
	}
	for range 3 {
		if err := report(1); err != nil {
			t.Fatal(err)
		}
	}
	h.slow.round(c, on("b/0", "b/1"))
	for range 3 {
		if err := report(2); err != nil {
			t.Fatal(err)
		}
	}
	sp := h.slow.round(c, on("b/0", "b/1"))
	if sp == nil {
		t.Fatal("no Speeds after b reported 2× slower steps")
	}
	check := func(when string, wantB float64) {
		t.Helper()
		g := gauges(t, reg)["goodsched_device_slowdown"]
		// Labels in name order: gpu, node.
		for key, want := range map[string]float64{"0,a": 1, "1,a": 1, "0,b": wantB, "1,b": wantB} {
			if v, ok := g[key]; !ok || math.Abs(v-want) > 1e-9 {
				t.Errorf("%s: goodsched_device_slowdown{%s} = %v (%v), want %v", when, key, v, ok, want)
			}
		}
		if got := h.slow.est.Slowdown("b/0", ""); math.Abs(got-wantB) > 1e-9 {
			t.Errorf("%s: estimate of b/0 = %v, want %v", when, got, wantB)
		}
	}
	check("after 3 slow reports", 2)
	if got := sp.Slowdown("ns/other", "b/1"); got != 2 {
		t.Errorf("Speeds.Slowdown(b/1) = %v, want 2", got)
	}
	if got := sp.Slowdown("ns/other", "a/1"); got != 1 {
		t.Errorf("Speeds.Slowdown(a/1) = %v, want 1", got)
	}

	// A one-off outlier moves no estimate.
	if err := report(20); err != nil {
		t.Fatal(err)
	}
	h.slow.round(c, on("b/0", "b/1"))
	check("after an outlier", 2)

	// Malformed step times are refused and counted; nothing changes.
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if err := report(bad); !errors.Is(err, variability.ErrBadReport) {
			t.Errorf("step %v: err %v, want ErrBadReport", bad, err)
		}
	}
	h.slow.round(c, on("b/0", "b/1"))
	check("after malformed reports", 2)
	if n := counter(t, reg, "goodsched_errors_total", "slowdown"); n != 4 {
		t.Errorf(`goodsched_errors_total{op="slowdown"} = %v, want 4`, n)
	}
	// A job the host does not know holds nothing: its report is ignored.
	if err := h.ObserveSteps("ns/gone", []StepTime{{Replicas: 1, Seconds: 5}}); err != nil {
		t.Errorf("report of an unknown job: %v", err)
	}
}

// TestVariabilityOff: without Config.Variability the host exports no
// slowdown, ignores step times and rounds carry no Speeds.
func TestVariabilityOff(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := New(Config{Client: fake.NewClientset(), Identity: "t", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ObserveSteps("ns/j", []StepTime{{Replicas: 1, Seconds: -1}}); err != nil || h.slow != nil {
		t.Errorf("ObserveSteps without Variability: %v (slow %v)", err, h.slow)
	}
	if _, ok := gauges(t, reg)["goodsched_device_slowdown"]; ok {
		t.Error("goodsched_device_slowdown exported without Variability")
	}
	if _, err := New(Config{Client: fake.NewClientset(), Identity: "t", Variability: &variability.Options{LocalityPenalty: 0.5}}); !errors.Is(err, ErrConfig) || !errors.Is(err, variability.ErrInvalid) {
		t.Errorf("LocalityPenalty 0.5: %v, want ErrConfig and variability.ErrInvalid", err)
	}
}

// TestVariabilityRoundPlacesOnFastNode: a round with a learned slowdown
// passes it to the scheduler (Input.Speeds), which starts a new 2-GPU job
// on the other node, whichever of the two is slow.
func TestVariabilityRoundPlacesOnFastNode(t *testing.T) {
	for _, slow := range []string{"a", "b"} {
		j := job("el", 2, 1, nil)
		objs := []runtime.Object{node("a", "NVIDIA-A100-SXM4-40GB", 2), node("b", "NVIDIA-A100-SXM4-40GB", 2), j,
			pod("el-0", j, 1, "", ""), pod("el-1", j, 1, "", "")}
		cs := fake.NewClientset(objs...)
		var targets []string
		cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "binding" {
				return false, nil, nil
			}
			targets = append(targets, a.(k8stesting.CreateAction).GetObject().(*corev1.Binding).Target.Name)
			return true, nil, nil
		})
		models := &roundModels{fakeModels: fakeModels{}}
		h, err := New(Config{Client: cs, Identity: "t", Models: models, BindingKey: testKey, Registry: prometheus.NewRegistry(),
			Variability: &variability.Options{}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// What 3 reports of a gang on the slow node taught the estimator.
		devs := []string{slow + "/0", slow + "/1"}
		h.slow.est.AddDevices(buildSnapshot([]*corev1.Node{node("a", "NVIDIA-A100-SXM4-40GB", 2), node("b", "NVIDIA-A100-SXM4-40GB", 2)}, nil, nil, opts(), assumed{}).cluster)
		for range 3 {
			if err := h.slow.est.Observe(variability.Report{Job: "ns/old", Devices: devs, Step: 2 * time.Second, Base: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := h.RoundOnce(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if len(models.inputs) != 1 || models.inputs[0].Speeds == nil || models.inputs[0].Speeds.Slowdown("", slow+"/0") != 2 {
			t.Fatalf("slow %s: the round's Input.Speeds does not carry the estimate: %+v", slow, models.inputs)
		}
		if len(targets) != 2 || targets[0] == slow || targets[1] == slow {
			t.Errorf("slow node %s: the gang was bound to %v, want the other node", slow, targets)
		}
	}
}

// counter reads a counter's value by its one label value.
func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
