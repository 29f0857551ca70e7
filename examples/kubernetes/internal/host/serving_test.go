package host

import (
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/serving"
)

// readDeployFile decodes a one-object YAML file of deploy/ strictly.
func readDeployFile[T any](t *testing.T, file string) *T {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.UnmarshalStrict(data, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func sampleService(t *testing.T) *appsv1.Deployment {
	t.Helper()
	return readDeployFile[appsv1.Deployment](t, "../../deploy/sample-service-deployment.yaml")
}

// TestSampleServiceDeployment: deploy/sample-service-deployment.yaml is a
// valid service for the default scheduler name.
func TestSampleServiceDeployment(t *testing.T) {
	d := sampleService(t)
	h := &Host{cfg: Config{SchedulerName: DefaultSchedulerName, Serving: &ServingConfig{MetricsURL: DefaultMetricsURL}}}
	su := h.parseService(d, nil)
	want := serving.Service{Name: "default/llama-chat", Model: "llama-3.1-8b", GPUType: "a100-40gb", GPUsPerReplica: 1,
		SLO: serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond}, Startup: 3 * time.Minute, MinReplicas: 1, MaxReplicas: 8}
	if su.err != nil || su.svc != want || su.url != "http://{ip}:8000/metrics" || su.spec.preemptible || len(su.spec.types) != 1 {
		t.Errorf("sample: %+v, %v", su, su.err)
	}
	if d.Spec.Template.Spec.SchedulerName != DefaultSchedulerName {
		t.Errorf("the sample's pods name scheduler %q", d.Spec.Template.Spec.SchedulerName)
	}
}

// TestParseServiceErrors: every malformed annotation of a service is named
// at once, wrapped in ErrAnnotation.
func TestParseServiceErrors(t *testing.T) {
	h := &Host{cfg: Config{SchedulerName: DefaultSchedulerName, Serving: &ServingConfig{MetricsURL: DefaultMetricsURL}}}
	for _, c := range []struct {
		name string
		mod  func(d *appsv1.Deployment)
		want []string
	}{
		{"no ttft objective", func(d *appsv1.Deployment) { delete(d.Annotations, AnnotationTTFTP90) }, []string{AnnotationTTFTP90 + " is required"}},
		{"zero tpot objective", func(d *appsv1.Deployment) { d.Annotations[AnnotationTPOTP90] = "0s" }, []string{AnnotationTPOTP90, "positive"}},
		{"bad startup and type", func(d *appsv1.Deployment) {
			d.Annotations[AnnotationStartup] = "soon"
			d.Annotations[AnnotationGPUTypes] = "t44"
		}, []string{AnnotationStartup, "unknown GPU type t44"}},
		{"no GPU", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Resources.Limits = nil }, []string{"asks for no nvidia.com/gpu"}},
		{"max below min", func(d *appsv1.Deployment) { d.Annotations[AnnotationMinReplicas] = "9" }, []string{AnnotationMinReplicas}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := sampleService(t)
			c.mod(d)
			su := h.parseService(d, map[accel.TypeKey]bool{"a100-40gb": true})
			if !errors.Is(su.err, ErrAnnotation) {
				t.Fatalf("err %v, want ErrAnnotation", su.err)
			}
			for _, w := range c.want {
				if !strings.Contains(su.err.Error(), w) {
					t.Errorf("err %q does not name %q", su.err, w)
				}
			}
		})
	}
}

// servicePod is a pending replica pod of Deployment d (through its
// ReplicaSet d.Name-abc).
func servicePod(name string, d *appsv1.Deployment) *corev1.Pod {
	yes := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, UID: types.UID("uid-" + name),
		Labels:          map[string]string{"app": d.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: d.Name + "-abc", UID: "rs", Controller: &yes}}},
		Spec: d.Spec.Template.Spec}
}

// reserveRound builds a round's assembly from the objects and runs the
// services' reservation on it.
func reserveRound(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, jobs []*batchv1.Job, d *appsv1.Deployment) *assembly {
	t.Helper()
	h := &Host{cfg: Config{SchedulerName: "goodsched", Serving: &ServingConfig{MetricsURL: DefaultMetricsURL}},
		svc: &servingState{services: map[JobKey]*serviceState{}}, recorder: events.NewFakeRecorder(100), log: slog.Default()}
	o := opts()
	key := serviceKey(d)
	o.serviceOf, o.services = map[types.UID]JobKey{}, map[JobKey]*serviceUnit{key: h.parseService(d, nil)}
	for _, p := range pods {
		if p.Labels["app"] == d.Name {
			o.serviceOf[p.UID] = key
		}
	}
	snap := buildSnapshot(nodes, pods, jobs, o, assumed{})
	a := &assembly{snap: snap, byKey: map[JobKey]*unit{}, in: scheduler.Input{Cluster: snap.cluster, Current: snap.current}}
	for _, u := range snap.units {
		a.byKey[u.key] = u
		a.in.Jobs = append(a.in.Jobs, u.sj)
	}
	if len(snap.services) != 1 {
		t.Fatalf("%d services in the snapshot, want 1", len(snap.services))
	}
	h.reserveServices(a)
	return a
}

func currentOf(in scheduler.Input, job string) []string {
	for _, as := range in.Current {
		if as.Job == job {
			return as.Devices
		}
	}
	return nil
}

// TestReserveServicesFreeFirstThenFewest: a 2-GPU replica takes a node's
// free GPUs when one has enough; otherwise the node whose jobs hold the
// fewest GPUs (b's single GPU beside a free one, not rigid a's two), where
// b, left below its minimum, is placed again from nothing; an elastic job
// that keeps enough shrinks instead. The replica is bound at once only on
// free GPUs; the policy sees the service pinned on its devices.
func TestReserveServicesFreeFirstThenFewest(t *testing.T) {
	d := sampleService(t)
	d.Namespace = "ns"
	d.Spec.Template.Spec.Containers[0].Resources.Limits[ResourceGPU] = *resource.NewQuantity(2, resource.DecimalSI)
	a100 := "NVIDIA-A100-SXM4-40GB"
	ja := job("a", 1, 2, nil)
	jb := job("b", 1, 1, map[string]string{AnnotationKind: "elastic"})
	jc := job("c", 3, 1, map[string]string{AnnotationKind: "elastic"})
	sid := string(serviceKey(d))

	// A free node: bound there at once, nobody loses anything.
	a := reserveRound(t, []*corev1.Node{node("n0", a100, 2), node("n1", a100, 2)},
		[]*corev1.Pod{pod("a-0", ja, 2, "n0", "0,1"), servicePod("chat-0", d)}, []*batchv1.Job{ja}, d)
	if len(a.serviceBinds) != 1 || a.serviceBinds[0].slot.node != "n1" || !slices.Equal(currentOf(a.in, sid), []string{"n1/0", "n1/1"}) ||
		!slices.Equal(currentOf(a.in, "ns/a"), []string{"n0/0", "n0/1"}) {
		t.Errorf("free node: binds %+v, current %+v", a.serviceBinds, a.in.Current)
	}

	// No free node: b's (1 GPU) is cheaper than a's (2); b is preempted.
	a = reserveRound(t, []*corev1.Node{node("n0", a100, 2), node("n1", a100, 2)},
		[]*corev1.Pod{pod("a-0", ja, 2, "n0", "0,1"), pod("b-0", jb, 1, "n1", "0"), servicePod("chat-0", d)}, []*batchv1.Job{ja, jb}, d)
	if len(a.serviceBinds) != 0 || !slices.Equal(currentOf(a.in, sid), []string{"n1/0", "n1/1"}) || currentOf(a.in, "ns/b") != nil ||
		len(currentOf(a.in, "ns/a")) != 2 {
		t.Errorf("fewest: binds %+v, current %+v", a.serviceBinds, a.in.Current)
	}
	var pinned *scheduler.Job
	for i := range a.in.Jobs {
		if a.in.Jobs[i].ID == sid {
			pinned = &a.in.Jobs[i]
		}
	}
	if pinned == nil || pinned.Kind != scheduler.Rigid || !pinned.NonPreemptible || pinned.Requested != 2 || pinned.MinReplicas != 2 {
		t.Errorf("the service's job %+v, want rigid, not preemptible, on its 2 GPUs", pinned)
	}

	// An elastic job on 3 of a 4-GPU node's GPUs keeps the 2 the replica
	// does not take: it shrinks.
	a = reserveRound(t, []*corev1.Node{node("n0", a100, 4)},
		[]*corev1.Pod{pod("c-0", jc, 1, "n0", "0"), pod("c-1", jc, 1, "n0", "1"), pod("c-2", jc, 1, "n0", "2"), servicePod("chat-0", d)}, []*batchv1.Job{jc}, d)
	if got := currentOf(a.in, "ns/c"); len(got) != 2 || len(a.serviceBinds) != 0 || len(currentOf(a.in, sid)) != 2 ||
		slices.ContainsFunc(got, func(id string) bool { return slices.Contains(currentOf(a.in, sid), id) }) {
		t.Errorf("shrink: c holds %v, service %v, binds %d", got, currentOf(a.in, sid), len(a.serviceBinds))
	}
}
