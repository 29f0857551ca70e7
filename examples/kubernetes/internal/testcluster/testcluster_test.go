package testcluster

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStartRestart starts a control plane, restarts its API server and
// reads the same state back.
func TestStartRestart(t *testing.T) {
	c := Start(t, Options{})
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get default namespace: %v", err)
	}
	c.StopAPIServer()
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Fatal("API server answered while stopped")
	}
	c.StartAPIServer()
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

// TestJobControllerAndKwok checks the parts the host's tests rely on: the
// Job controller creates a Job's pods, and kwok makes a fake node Ready and
// runs a pod bound to it.
func TestJobControllerAndKwok(t *testing.T) {
	c := Start(t, Options{ControllerManager: true, Kwok: true})
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "fake-0",
		Annotations: map[string]string{KwokNodeAnnotation: "fake"},
	}}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	par := int32(2)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: &par,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName: "goodsched",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
	if _, err := c.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods *corev1.PodList
	poll(t, "Job controller creates 2 pods", func() bool {
		var err error
		pods, err = c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=j"})
		return err == nil && len(pods.Items) == 2
	})
	poll(t, "kwok makes the node Ready", func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "fake-0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	p := pods.Items[0]
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "fake-0"},
	}
	if err := c.Client.CoreV1().Pods("default").Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "kwok runs the bound pod", func() bool {
		got, err := c.Client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	})
}

func poll(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
