// Package hack holds the scripts that build and run what examples/kubernetes
// needs outside a cluster; its test runs local-up.sh and local-down.sh as a
// user would.
package hack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

// TestLocalUpDown runs local-up.sh with its defaults (two A100 and two T4
// nodes, the sample elastic and rigid Jobs): the last line of stdout is a
// kubeconfig, every pod of the samples is bound on a node of a type it
// allows and each Job has a decision; then local-down.sh leaves no process
// it started and no state directory.
func TestLocalUpDown(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: local-up.sh builds the scheduler and starts a control plane")
	}
	assets := testcluster.Assets(t)
	if _, err := os.Stat(filepath.Join(assets, "kubectl")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s has no kubectl: run examples/kubernetes/hack/testbin.sh", assets)
		}
		t.Skip("local-up test skipped: " + assets + " has no kubectl; run examples/kubernetes/hack/testbin.sh")
	}
	state := filepath.Join(t.TempDir(), "local")
	t.Cleanup(func() { _ = exec.Command("./local-down.sh", "--dir", state).Run() })

	var stdout, stderr bytes.Buffer
	up := exec.Command("./local-up.sh", "--dir", state, "--timeout", "240")
	up.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+assets)
	up.Stdout, up.Stderr = &stdout, &stderr
	start := time.Now()
	err := up.Run()
	t.Logf("local-up.sh took %v; its stderr:\n%s", time.Since(start).Round(100*time.Millisecond), stderr.String())
	if err != nil {
		t.Fatalf("local-up.sh: %v", err)
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	kubeconfig := lines[len(lines)-1]
	if kubeconfig != filepath.Join(state, "admin.kubeconfig") {
		t.Fatalf("last line of stdout %q, want the kubeconfig in %s", kubeconfig, state)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	product := map[string]string{}
	for _, n := range nodes.Items {
		product[n.Name] = n.Labels["nvidia.com/gpu.product"]
		if len(n.Spec.Taints) > 0 {
			t.Errorf("node %s is tainted: %v", n.Name, n.Spec.Taints)
		}
	}
	if len(product) != 4 {
		t.Errorf("%d nodes, want 2 A100 and 2 T4: %v", len(product), product)
	}
	for _, name := range []string{"resnet-elastic", "bert-rigid"} {
		job, err := cs.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != int(*job.Spec.Parallelism) || len(pods.Items) == 0 {
			t.Errorf("%s: %d pods, parallelism %d", name, len(pods.Items), *job.Spec.Parallelism)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || product[p.Spec.NodeName] == "" {
				t.Errorf("%s: pod %s not bound on a GPU node (%q)", name, p.Name, p.Spec.NodeName)
			}
		}
		if d := job.Annotations["goodsched.io/last-decision"]; d == "" {
			t.Errorf("%s has no goodsched.io/last-decision", name)
		} else {
			t.Logf("%s: %d pods bound; last decision: %s", name, len(pods.Items), d)
		}
	}
	metricsURL, err := os.ReadFile(filepath.Join(state, "metrics-url"))
	if err != nil {
		t.Fatal(err)
	}
	metrics := get(t, strings.TrimSpace(string(metricsURL)))
	for _, want := range []string{`goodsched_gpus_offered{type="a100-40gb"} 16`, `goodsched_gpus_hidden{reason="taint",type="t4"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	pidsText, err := os.ReadFile(filepath.Join(state, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, line := range strings.Split(strings.TrimSpace(string(pidsText)), "\n") {
		var name string
		var pid int
		if _, err := fmt.Sscan(line, &name, &pid); err != nil {
			t.Fatalf("pids line %q: %v", line, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 5 {
		t.Errorf("local-up recorded %d processes, want 5 (etcd, kube-apiserver, kube-controller-manager, kwok, goodsched-scheduler)", len(pids))
	}
	down := exec.Command("./local-down.sh", "--dir", state)
	if out, err := down.CombinedOutput(); err != nil {
		t.Fatalf("local-down.sh: %v\n%s", err, out)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d survived local-down.sh", pid)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("local-down.sh left %s (%v)", state, err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
