package host_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// Example runs one round on a fake clientset: a node with four T4s and a
// rigid Job of two one-GPU pods (no goodsched annotations, so a gang of
// spec.parallelism). The host binds both pods and writes its decision on
// the Job.
func Example() {
	gpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "t4-0", Labels: map[string]string{host.LabelGPUProduct: "Tesla-T4"}},
		Status: corev1.NodeStatus{Capacity: gpus(4), Allocatable: gpus(4),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	two := int32(2)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "bert", Namespace: "ml", UID: "uid-bert"},
		Spec: batchv1.JobSpec{Parallelism: &two, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			SchedulerName: host.DefaultSchedulerName,
			Containers:    []corev1.Container{{Name: "train", Resources: corev1.ResourceRequirements{Limits: gpus(1)}}},
		}}},
	}
	objs := []runtime.Object{node, job}
	yes := true
	for _, name := range []string{"bert-0", "bert-1"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", UID: types.UID("uid-" + name),
				Labels:          map[string]string{batchv1.JobNameLabel: "bert"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "bert", UID: job.UID, Controller: &yes}}},
			Spec: job.Spec.Template.Spec,
		}
		objs = append(objs, p)
	}
	cs := fake.NewClientset(objs...)
	var bound []string
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := a.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
		bound = append(bound, fmt.Sprintf("%s → %s (GPU %s)", b.Name, b.Target.Name, b.Annotations[host.AnnotationDevices]))
		return true, nil, nil
	})

	h, err := host.New(host.Config{Client: cs, Identity: "example", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	r, err := h.RoundOnce(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	sort.Strings(bound)
	fmt.Println("binds:", r.Binds)
	for _, b := range bound {
		fmt.Println(b)
	}
	// Output:
	// binds: 2
	// bert-0 → t4-0 (GPU 0)
	// bert-1 → t4-0 (GPU 1)
}
