package main

import (
	"os"
	"strings"
	"testing"
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
