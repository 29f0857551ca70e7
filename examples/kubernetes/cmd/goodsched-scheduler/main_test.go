package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/easyscale"
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

// TestHelpAndBadFlags: -h prints the usage and exits 0; a bad flag or
// argument is one line and exit status 2.
func TestHelpAndBadFlags(t *testing.T) {
	var help bytes.Buffer
	err := run([]string{"-h"}, &help)
	if !errors.Is(err, flag.ErrHelp) || exitCode(err) != 0 || !strings.HasPrefix(help.String(), "usage: goodsched-scheduler [flags]\n") || !strings.Contains(help.String(), "-tolerated-taints") {
		t.Errorf("-h: err %v, exit %d, stderr %q", err, exitCode(err), help.String())
	}
	for _, args := range [][]string{{"-no-such-flag"}, {"-interval", "10"}, {"extra"}, {"-policy", "bogus"}} {
		var stderr bytes.Buffer
		err := run(args, &stderr)
		if exitCode(err) != 2 || stderr.Len() != 0 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v, exit %d, stderr %q", args, err, exitCode(err), stderr.String())
		}
	}
	if exitCode(nil) != 0 || exitCode(errors.New("boom")) != 1 {
		t.Error("exitCode")
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
		if err != nil || pol != (baselines.FIFO{}) {
			t.Errorf("-policy fifo -parallel=%v: %#v, %v", parallel, pol, err)
		}
		pol, err = policyFor("goodput-mix", parallel)
		m, _ := pol.(easyscale.Mix)
		if g, ok := m.Policy.(scheduler.Pollux); err != nil || !ok || g.Parallel != parallel {
			t.Errorf("-policy goodput-mix -parallel=%v: %#v, %v", parallel, pol, err)
		}
	}
	if _, err := policyFor("bogus", true); err == nil || !strings.Contains(err.Error(), "easyscale, easyscale-homo, fifo, goodput, goodput-carbon, goodput-mix, optimus, tiresias") {
		t.Errorf("-policy bogus: %v", err)
	}
}
