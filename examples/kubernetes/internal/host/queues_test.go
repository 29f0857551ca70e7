package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler/quota"
)

const sampleQueues = `queues:
- name: research
- name: vision
  parent: research
  weight: 2
  quotas:
  - type: a100
    nominal: 4
    borrowing_limit: 2
    lending_limit: 1
- name: speech
  parent: research
  quotas: [{type: a100-40gb, nominal: 2}]
- name: batch
  quotas: [{type: t4, nominal: 4}]
namespaces:
  team-vision: vision
default: batch
`

func queuesCM(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "goodsched-system", Name: "goodsched-queues"},
		Data: map[string]string{QueuesConfigKey: data}}
}

func TestParseQueueConfig(t *testing.T) {
	c, err := ParseQueueConfig(queuesCM(sampleQueues))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Queues) != 4 || c.Default != "batch" || c.Namespaces["team-vision"] != "vision" {
		t.Fatalf("%+v", c)
	}
	v := c.Queues[1]
	if v.Name != "vision" || v.Parent != "research" || v.Weight != 2 || len(v.Quotas) != 1 {
		t.Fatalf("vision %+v", v)
	}
	if q := v.Quotas[0]; q.Type != "a100-40gb" || q.Nominal != 4 || q.BorrowingLimit == nil || *q.BorrowingLimit != 2 || q.LendingLimit == nil || *q.LendingLimit != 1 {
		t.Errorf("vision quota %+v (the alias a100 is canonicalised)", q)
	}
	if q := c.Queues[2].Quotas[0]; q.BorrowingLimit != nil || q.LendingLimit != nil {
		t.Errorf("speech limits %v %v, want none", q.BorrowingLimit, q.LendingLimit)
	}
	// JSON is YAML too.
	if _, err := ParseQueueConfig(queuesCM(`{"queues": [{"name": "a", "quotas": [{"type": "t4", "nominal": 1}]}]}`)); err != nil {
		t.Errorf("JSON: %v", err)
	}
	for name, cm := range map[string]*corev1.ConfigMap{
		"no key":            {ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"other": "queues: []"}},
		"not YAML":          queuesCM("queues: [\n"),
		"unknown field":     queuesCM(strings.Replace(sampleQueues, "default:", "defualt:", 1)),
		"no queues":         queuesCM("queues: []\n"),
		"bad type":          queuesCM(strings.Replace(sampleQueues, "type: t4", "type: ''", 1)),
		"unknown parent":    queuesCM(strings.Replace(sampleQueues, "parent: research\n  weight", "parent: nope\n  weight", 1)),
		"over the cohort":   queuesCM(strings.Replace(sampleQueues, "- name: research\n", "- name: research\n  quotas: [{type: a100-40gb, nominal: 3}]\n", 1)),
		"negative limit":    queuesCM(strings.Replace(sampleQueues, "lending_limit: 1", "lending_limit: -1", 1)),
		"namespace→cohort":  queuesCM(strings.Replace(sampleQueues, "team-vision: vision", "team-vision: research", 1)),
		"default not leaf":  queuesCM(strings.Replace(sampleQueues, "default: batch", "default: research", 1)),
		"default unknown":   queuesCM(strings.Replace(sampleQueues, "default: batch", "default: nope", 1)),
		"duplicate queue":   queuesCM(sampleQueues + "- name: batch\n"),
		"cycle":             queuesCM("queues:\n- {name: a, parent: b}\n- {name: b, parent: a}\n"),
		"unnamed queue":     queuesCM("queues:\n- {weight: 1}\n"),
		"two quotas a type": queuesCM("queues:\n- name: a\n  quotas: [{type: t4, nominal: 1}, {type: t4, nominal: 2}]\n"),
	} {
		if _, err := ParseQueueConfig(cm); !errors.Is(err, ErrQueueConfig) {
			t.Errorf("%s: err %v, want ErrQueueConfig", name, err)
		}
	}
}

func TestQueueOf(t *testing.T) {
	c, err := ParseQueueConfig(queuesCM(sampleQueues))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		want   string
	}{
		{"team-vision", nil, "vision"}, // namespaces map
		{"speech", nil, "speech"},      // a leaf named like the namespace
		{"research", nil, "batch"},     // a cohort is no leaf: the default
		{"elsewhere", nil, "batch"},    // the default
		{"team-vision", map[string]string{LabelQueue: " speech "}, "speech"}, // the label first
	} {
		if got, err := c.QueueOf(tc.ns, tc.labels); err != nil || got != tc.want {
			t.Errorf("QueueOf(%q, %v) = %q, %v; want %q", tc.ns, tc.labels, got, err, tc.want)
		}
	}
	for _, l := range []string{"research", "nope", ""} {
		if _, err := c.QueueOf("team-vision", map[string]string{LabelQueue: l}); !errors.Is(err, ErrAnnotation) || !strings.Contains(err.Error(), LabelQueue) {
			t.Errorf("label %q: err %v, want ErrAnnotation naming %s", l, err, LabelQueue)
		}
	}
	c.Default = ""
	if _, err := c.QueueOf("elsewhere", nil); !errors.Is(err, ErrAnnotation) {
		t.Errorf("no default: err %v", err)
	}
}

// TestSnapshotJobsGetQueues maps Jobs and pod groups to their leaf queues
// in the snapshot; a job whose label names no leaf queue is skipped.
func TestSnapshotJobsGetQueues(t *testing.T) {
	c, err := ParseQueueConfig(queuesCM(sampleQueues))
	if err != nil {
		t.Fatal(err)
	}
	plain := job("plain", 1, 1, nil)
	labelled := job("labelled", 1, 1, nil)
	labelled.Labels = map[string]string{LabelQueue: "vision"}
	bad := job("bad", 1, 1, nil)
	bad.Labels = map[string]string{LabelQueue: "research"}
	gp := pod("g-0", nil, 1, "", "")
	gp.Spec.SchedulerName = "goodsched"
	gp.Labels[LabelGroup] = "g"
	gp.Labels[LabelQueue] = "speech"
	o := opts()
	o.queueOf = c.QueueOf
	s := buildSnapshot([]*corev1.Node{node("a100", "NVIDIA-A100-SXM4-40GB", 8)}, []*corev1.Pod{gp}, []*batchv1.Job{plain, labelled, bad}, o, assumed{})
	got := map[string]string{}
	for _, u := range s.units {
		got[u.sj.ID] = u.sj.Queue
	}
	want := map[string]string{"ns/plain": "batch", "ns/labelled": "vision", "ns/g": "speech"}
	if len(got) != len(want) {
		t.Errorf("units %v, want %v", got, want)
	}
	for id, q := range want {
		if got[id] != q {
			t.Errorf("%s: queue %q, want %q", id, got[id], q)
		}
	}
	if len(s.skipped) != 1 || s.skipped[0].key != "ns/bad" || !errors.Is(s.skipped[0].err, ErrAnnotation) {
		t.Errorf("skipped %+v, want ns/bad", s.skipped)
	}
	// Without queues no job has one.
	s = buildSnapshot([]*corev1.Node{node("a100", "NVIDIA-A100-SXM4-40GB", 8)}, nil, []*batchv1.Job{plain, bad}, opts(), assumed{})
	for _, u := range s.units {
		if u.sj.Queue != "" {
			t.Errorf("%s: queue %q without queues", u.sj.ID, u.sj.Queue)
		}
	}
}

// TestRoundWithQueues runs rounds against a fake API server: the quotas of
// the ConfigMap bound what starts (a rigid 4-GPU job of a queue with 2
// GPUs and no borrowing waits, the other queue's 2-GPU job starts), the
// plan reports per queue, a malformed update keeps the last valid
// configuration, and without the ConfigMap no quota applies.
func TestRoundWithQueues(t *testing.T) {
	cfg := `queues:
- name: ns
  quotas: [{type: a100-40gb, nominal: 2, borrowing_limit: 0}]
- name: other
  quotas: [{type: a100-40gb, nominal: 2}]
`
	big := job("big", 4, 1, nil) // namespace "ns": queue ns
	small := job("small", 2, 1, nil)
	small.Labels = map[string]string{LabelQueue: "other"}
	objs := []runtime.Object{node("a", "NVIDIA-A100-SXM4-40GB", 4), queuesCM(cfg), big, small}
	for i := range 4 {
		objs = append(objs, pod("big-"+string(rune('0'+i)), big, 1, "", ""))
	}
	objs = append(objs, pod("small-0", small, 1, "", ""), pod("small-1", small, 1, "", ""))
	cs := fake.NewClientset(objs...)
	var bound []string
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		bound = append(bound, a.(k8stesting.CreateAction).GetObject().(*corev1.Binding).Name)
		return true, nil, nil
	})
	h, err := New(Config{Client: cs, Identity: "t", QueuesConfigMap: "goodsched-system/goodsched-queues"})
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
	if strings.Join(bound, ",") != "small-0,small-1" && strings.Join(bound, ",") != "small-1,small-0" {
		t.Errorf("bound %v, want small's two pods only; round %+v", bound, r)
	}
	var nsUsage *quota.Usage
	for i, u := range r.Plan.Queues {
		if u.Queue == "ns" && u.Type == accel.TypeKey("a100-40gb") {
			nsUsage = &r.Plan.Queues[i]
		}
	}
	if nsUsage == nil || nsUsage.Guaranteed != 2 || nsUsage.Used != 0 || nsUsage.Pending == 0 {
		t.Errorf("plan queues %+v", r.Plan.Queues)
	}
	if d, ok := r.Plan.Decision("ns/big"); !ok || d.To != 0 {
		t.Errorf("big: %+v", d)
	}

	// A malformed update keeps the last valid configuration.
	cms := cs.CoreV1().ConfigMaps("goodsched-system")
	if _, err := cms.Update(ctx, queuesCM("queues: [\n"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, ctx, func() bool {
		cm, err := h.queues.lister.ConfigMaps("goodsched-system").Get("goodsched-queues")
		return err == nil && cm.Data[QueuesConfigKey] == "queues: [\n"
	})
	if c := h.queueConfig(); c == nil || len(c.Queues) != 2 {
		t.Errorf("after a malformed update: %+v, want the last valid configuration", c)
	}
	// Without the ConfigMap, no quotas.
	if err := cms.Delete(ctx, "goodsched-queues", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, ctx, func() bool {
		_, err := h.queues.lister.ConfigMaps("goodsched-system").Get("goodsched-queues")
		return err != nil
	})
	if c := h.queueConfig(); c != nil {
		t.Errorf("without the ConfigMap: %+v, want none", c)
	}
	if _, err := New(Config{Client: cs, Identity: "t", QueuesConfigMap: "no-slash"}); !errors.Is(err, ErrConfig) {
		t.Errorf("QueuesConfigMap without a namespace: %v", err)
	}
}

// pollUntil waits (at most 10 s) until the informers show what cond
// checks.
func pollUntil(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseQueueConfig(f *testing.F) {
	f.Add(sampleQueues)
	f.Add(`{"queues": [{"name": "a", "quotas": [{"type": "t4", "nominal": 1}]}]}`)
	f.Add("queues:\n- {name: a, parent: b}\n- {name: b, parent: a}\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseQueueConfig(queuesCM(in))
		if err != nil {
			if !errors.Is(err, ErrQueueConfig) {
				t.Fatalf("error %v does not wrap ErrQueueConfig", err)
			}
			return
		}
		for _, ns := range []string{"", "default", "team-vision"} {
			q, err := c.QueueOf(ns, nil)
			if err == nil && !c.leaf[q] {
				t.Fatalf("namespace %q maps to %q, not a leaf", ns, q)
			}
		}
	})
}
