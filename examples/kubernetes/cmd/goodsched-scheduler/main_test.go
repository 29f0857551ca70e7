package main

import (
	"os"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
)

func TestRunRejectsBadFlags(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := run([]string{"-policy", "bogus"}, null); err == nil || !strings.Contains(err.Error(), "-policy") {
		t.Errorf("-policy bogus: %v", err)
	}
	if err := run([]string{"-kubeconfig", "/nonexistent/kubeconfig"}, null); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

// TestPolicyForParallel: -parallel reaches the goodput policy and leaves
// the others as they are.
func TestPolicyForParallel(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		pol, err := policyFor("goodput", parallel)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := pol.(scheduler.Pollux); !ok || g.Parallel != parallel {
			t.Errorf("-parallel=%v: policy %#v", parallel, pol)
		}
		pol, err = policyFor("fifo", parallel)
		if err != nil || pol != (scheduler.FIFO{}) {
			t.Errorf("-policy fifo -parallel=%v: %#v, %v", parallel, pol, err)
		}
	}
	if _, err := policyFor("bogus", true); err == nil || !strings.Contains(err.Error(), "fifo, goodput, optimus, tiresias") {
		t.Errorf("-policy bogus: %v", err)
	}
}
