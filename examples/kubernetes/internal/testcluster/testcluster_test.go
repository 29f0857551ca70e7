package testcluster

import (
	"context"
	"testing"

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
