package host_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

const (
	productA100 = "NVIDIA-A100-SXM4-40GB"
	productT4   = "Tesla-T4"
	testNS      = "default"
)

// requestLog counts and records the API requests of one client.
type requestLog struct {
	mu     sync.Mutex
	reads  int
	writes int
	binds  []string // pod names, in order
	// before, if set, runs before each request is sent.
	before func(req *http.Request)
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		if req.Method == http.MethodGet {
			l.reads++
		} else {
			l.writes++
		}
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding") {
			parts := strings.Split(req.URL.Path, "/")
			l.binds = append(l.binds, parts[len(parts)-2])
		}
		before := l.before
		l.mu.Unlock()
		if before != nil {
			before(req)
		}
		return rt.RoundTrip(req)
	})
}

func (l *requestLog) counts() (reads, writes int, binds []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads, l.writes, slices.Clone(l.binds)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startCluster runs a control plane with the Job controller and kwok, and
// grants the user "scheduler" exactly what deploy/rbac.yaml grants the
// ServiceAccount, with deploy/namespace-rbac.yaml's opt-in in testNS.
func startCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true, Kwok: true}, "scheduler")
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: host.DefaultLeaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantRBAC(t, c, "scheduler", "../../deploy/rbac.yaml")
	grantRBACIn(t, c, "scheduler", "../../deploy/namespace-rbac.yaml", testNS)
	return c
}

// grantRBAC creates the ClusterRoles, Roles and bindings of the manifest
// file, with user as the subject of every binding (other kinds are
// skipped): user holds exactly what the file grants its ServiceAccount.
func grantRBAC(t *testing.T, c *testcluster.Cluster, user, file string) {
	t.Helper()
	grantRBACIn(t, c, user, file, "")
}

// configMapsIn returns the ConfigMaps of a multi-document YAML file,
// each decoded strictly.
func configMapsIn(t *testing.T, file string) []corev1.ConfigMap {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.ConfigMap
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "ConfigMap" {
			continue
		}
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
			t.Fatal(err)
		}
		out = append(out, cm)
	}
	return out
}

// grantRBACIn is grantRBAC for a file whose namespaced objects have no
// namespace of their own (a per-namespace opt-in): they go to ns.
func grantRBACIn(t *testing.T, c *testcluster.Cluster, user, file, ns string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subj := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.Unmarshal(doc, &r); err != nil {
				t.Fatal(err)
			}
			_, err = c.Client.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := yaml.Unmarshal(doc, &b); err != nil {
				t.Fatal(err)
			}
			b.Name += "-" + user
			b.Subjects = subj
			_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &b, metav1.CreateOptions{})
		case "Role":
			var r rbacv1.Role
			if err := yaml.Unmarshal(doc, &r); err != nil {
				t.Fatal(err)
			}
			if r.Namespace == "" {
				r.Namespace = ns
			}
			_, err = c.Client.RbacV1().Roles(r.Namespace).Create(ctx, &r, metav1.CreateOptions{})
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.Unmarshal(doc, &b); err != nil {
				t.Fatal(err)
			}
			if b.Namespace == "" {
				b.Namespace = ns
			}
			b.Name += "-" + user
			b.Subjects = subj
			_, err = c.Client.RbacV1().RoleBindings(b.Namespace).Create(ctx, &b, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %s: %v", file, meta.Kind, err)
		}
	}
}

// schedulerClient returns a clientset of the user "scheduler" whose
// requests go through log.
func schedulerClient(t *testing.T, c *testcluster.Cluster, log *requestLog) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(c.UserConfig("scheduler"))
	cfg.WrapTransport = log.wrap
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// newHost builds a host for the test; cfg.Client must be set.
func newHost(t *testing.T, cfg host.Config) *host.Host {
	t.Helper()
	if cfg.Identity == "" {
		cfg.Identity = "test"
	}
	if cfg.Logger == nil {
		level := slog.LevelWarn
		if os.Getenv("GOODSCHED_TEST_LOG") == "debug" {
			level = slog.LevelDebug
		}
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// gpuNode returns a Node with gpus GPUs of product; kwok manages it when
// kwok is true (otherwise the test sets its status).
func gpuNode(name, product string, gpus int, kwok bool) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{host.LabelGPUProduct: product, "kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	if kwok {
		n.Annotations = map[string]string{testcluster.KwokNodeAnnotation: "fake"}
	}
	return n
}

// createNodes creates the nodes and waits until they are Ready (setting
// the status itself for nodes kwok does not manage).
func createNodes(t *testing.T, c *testcluster.Cluster, nodes ...*corev1.Node) {
	t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The API server drops the status of a created Node: set the GPUs
	// (and, for nodes kwok does not manage, Ready) through the status
	// subresource, again if kwok's initialisation raced with it.
	waitFor(t, 2*time.Minute, "nodes ready with GPUs", func() (bool, string) {
		for _, n := range nodes {
			got, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			q := got.Status.Allocatable[host.ResourceGPU]
			want := n.Status.Allocatable[host.ResourceGPU]
			manual := n.Annotations[testcluster.KwokNodeAnnotation] != "fake"
			if q.Cmp(want) != 0 || (manual && !isReady(got)) {
				for k, v := range n.Status.Allocatable {
					if got.Status.Allocatable == nil {
						got.Status.Allocatable = corev1.ResourceList{}
						got.Status.Capacity = corev1.ResourceList{}
					}
					got.Status.Allocatable[k] = v
					got.Status.Capacity[k] = v
				}
				if manual {
					now := metav1.Now()
					got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now}}
				}
				if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
					return false, err.Error()
				}
				return false, n.Name + " has no GPUs yet"
			}
			if !isReady(got) {
				return false, n.Name + " not ready"
			}
			if len(got.Spec.Taints) > 0 {
				// What the node lifecycle controller (not run here) does
				// for a Ready node: lift the not-ready taint that
				// admission put on the new Node.
				got.Spec.Taints = nil
				if _, err := c.Client.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
					return false, err.Error()
				}
				return false, n.Name + " still tainted"
			}
		}
		return true, ""
	})
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setNodeReady sets a node's Ready condition (for nodes kwok does not
// manage).
func setNodeReady(t *testing.T, c *testcluster.Cluster, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// gpuJob returns a Job of parallelism pods of gpus GPUs each for the
// goodsched scheduler.
func gpuJob(name string, parallelism, gpus int, ann map[string]string) *batchv1.Job {
	p := int32(parallelism)
	backoff := int32(100)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Annotations: ann},
		Spec: batchv1.JobSpec{
			Parallelism:  &p,
			BackoffLimit: &backoff,
			// No podFailurePolicy (deploy/'s samples have one): with one the
			// Job controller waits for a terminal phase, which kwok's
			// pod-delete stage never sets, so evicted pods would keep the
			// job-tracking finalizer. BackoffLimit absorbs the evictions.
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName: host.DefaultSchedulerName,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "train", Image: "trainer:test",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}}}},
			}},
		},
	}
}

func createJobs(t *testing.T, c *testcluster.Cluster, jobs ...*batchv1.Job) {
	t.Helper()
	for _, j := range jobs {
		if _, err := c.Client.BatchV1().Jobs(j.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// livePods returns a Job's pods that are not terminating or finished,
// sorted by name.
func livePods(t *testing.T, c *testcluster.Cluster, job string) []corev1.Pod {
	t.Helper()
	return liveSelected(t, c, batchv1.JobNameLabel+"="+job)
}

// liveSelected returns the pods of testNS matching the label selector
// that are not terminating or finished, sorted by name.
func liveSelected(t *testing.T, c *testcluster.Cluster, selector string) []corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// allPods returns a Job's pods, terminating ones included.
func allPods(t *testing.T, c *testcluster.Cluster, job string) []corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func boundCount(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// driveUntil runs rounds every 200 ms until cond holds.
func driveUntil(t *testing.T, ctx context.Context, h *host.Host, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	waitFor(t, timeout, what, func() (bool, string) {
		if _, err := h.RoundOnce(ctx); err != nil {
			return false, "round: " + err.Error()
		}
		time.Sleep(100 * time.Millisecond)
		return cond()
	})
}

// checkDevices fails when two live bound pods of the listed Jobs share a
// device, or a bound pod lacks the devices annotation.
func checkDevices(t *testing.T, c *testcluster.Cluster, jobs ...string) {
	t.Helper()
	seen := map[string]string{}
	for _, j := range jobs {
		for _, p := range allPods(t, c, j) {
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			v, ok := p.Annotations[host.AnnotationDevices]
			if !ok {
				t.Errorf("pod %s bound to %s without %s", p.Name, p.Spec.NodeName, host.AnnotationDevices)
				continue
			}
			for _, d := range strings.Split(v, ",") {
				id := p.Spec.NodeName + "/" + d
				if other, dup := seen[id]; dup {
					t.Errorf("device %s held by %s and %s", id, other, p.Name)
				}
				seen[id] = p.Name
			}
		}
	}
}

// jobEvents returns the notes of the events.k8s.io Events regarding a
// Job, as "reason: note".
func jobEvents(t *testing.T, c *testcluster.Cluster, kind, name string) []string {
	t.Helper()
	l, err := c.Client.EventsV1().Events(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Note))
		}
	}
	return out
}
