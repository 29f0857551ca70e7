package pytorch_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/report"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
	"github.com/goodsched/goodsched/scheduler"
)

// InstallHint is the line the tests skip with when no Python has torch
// and scikit-learn.
const InstallHint = "PyTorch test skipped: no python3 with torch and sklearn; install them with: apt-get update && apt-get install -y python3-torch python3-sklearn"

const (
	namespace   = "pytorch"
	gpusPerNode = 2
	productT4   = "Tesla-T4"
)

// python returns an interpreter that imports torch and sklearn: Debian's
// /usr/bin/python3 first (the PATH's python3 may be another installation
// without them), or skips the test with InstallHint (fails under CI).
func python(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import torch, torch.distributed.run, sklearn.datasets").CombinedOutput()
		if err == nil {
			return path
		}
		tried = append(tried, fmt.Sprintf("%s: %s", path, lastLine(string(out))))
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but no python3 imports torch and sklearn (%s): apt-get update && apt-get install -y python3-torch python3-sklearn", strings.Join(tried, "; "))
	}
	t.Skip(InstallHint)
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// env is a running control plane with the scheduler host, the report
// endpoint and a fault-injecting front of it.
type env struct {
	t      *testing.T
	c      *testcluster.Cluster
	cs     kubernetes.Interface
	dir    string
	caFile string
	python string
	srv    *report.Server
	front  *front
	// url is the address trainers report to (the front).
	url  string
	logs *logRecorder
}

func startEnv(t *testing.T, restartDelay time.Duration) *env {
	py := python(t)
	t.Cleanup(func() {
		if msg, ok := failures.Load(t); ok {
			t.Logf("FAILED: %s", msg)
		}
	})
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true, Kwok: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{t: t, c: c, cs: c.Client, dir: t.TempDir(), python: py, logs: &logRecorder{}}
	cs := e.cs
	for _, ns := range []string{namespace, host.DefaultLeaseNamespace} { // the job's; the scheduler's (binding key, report state)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createNode("node-0")
	e.writeCerts()

	srv, err := report.New(report.Config{Client: cs, Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	backend := "https://" + ln.Addr().String()
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.ServeTLSListener(ctx, ln, filepath.Join(e.dir, "tls.crt"), filepath.Join(e.dir, "tls.key")); err != nil {
			t.Errorf("report endpoint: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-served })
	e.startFront(ctx, backend)

	h, err := host.New(host.Config{
		Client: cs, Namespace: namespace, Identity: "pytorch-test",
		Interval: time.Second, MinInterval: 200 * time.Millisecond,
		Scheduler: scheduler.Config{Policy: scheduler.Pollux{RestartDelay: restartDelay}},
		Models:    srv,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if err := h.Run(ctx); err != nil {
			t.Errorf("host: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-ran })
	return e
}

func (e *env) createNode(name string) {
	t, ctx := e.t, context.Background()
	rl := corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(gpusPerNode, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{host.LabelGPUProduct: productT4, "kubernetes.io/hostname": name},
			Annotations: map[string]string{testcluster.KwokNodeAnnotation: "fake"}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
	if _, err := e.cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "kwok node ready with GPUs", func() (bool, string) {
		got, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := got.Status.Allocatable[host.ResourceGPU]
		if q.Value() != gpusPerNode {
			// The API server drops a created Node's status; kwok may
			// race with this write: set the GPUs again until they stay.
			got.Status.Allocatable, got.Status.Capacity = rl.DeepCopy(), rl.DeepCopy()
			_, err := e.cs.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
			return false, fmt.Sprintf("no GPUs yet (%v)", err)
		}
		ready := false
		for _, c := range got.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			return false, "not ready"
		}
		if len(got.Spec.Taints) > 0 {
			// No node-lifecycle controller runs: lift the not-ready taint.
			got.Spec.Taints = nil
			_, err := e.cs.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{})
			return false, fmt.Sprintf("tainted (%v)", err)
		}
		return true, ""
	})
}

func (e *env) writeCerts() {
	caFile, err := testcluster.WriteServingFiles(e.dir, "pytorch-ca")
	if err != nil {
		e.t.Fatal(err)
	}
	e.caFile = caFile
}

// adaptiveJob is a Job of the goodsched scheduler, one GPU per pod,
// annotated adaptive with replicas between lo and hi.
func adaptiveJob(name string, lo, hi int) *batchv1.Job {
	j := gpuJob(name, 1)
	j.Annotations = map[string]string{host.AnnotationKind: "adaptive",
		host.AnnotationMinReplicas: strconv.Itoa(lo), host.AnnotationMaxReplicas: strconv.Itoa(hi)}
	return j
}

// gpuJob is a rigid Job of parallelism pods of one GPU each.
func gpuJob(name string, parallelism int) *batchv1.Job {
	p := int32(parallelism)
	backoff := int32(100)
	grace := int64(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: batchv1.JobSpec{
			Parallelism: &p,
			// No podFailurePolicy: kwok never gives an evicted pod a
			// terminal phase, which the policy would wait for;
			// BackoffLimit absorbs the evictions.
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				SchedulerName:      host.DefaultSchedulerName,
				ServiceAccountName: "trainer",
				RestartPolicy:      corev1.RestartPolicyNever,
				// The trainer checkpoints on SIGTERM within a step.
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "train", Image: "digits:test",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{host.ResourceGPU: resource.MustParse("1")}}}},
			}},
		},
	}
}

func (e *env) createJob(j *batchv1.Job) {
	if _, err := e.cs.BatchV1().Jobs(namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// runningPods returns the Job's pods that are bound, Running and not
// terminating, sorted by name.
func (e *env) runningPods(job string) ([]corev1.Pod, error) {
	ps, err := e.cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range ps.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// podToken asks the API server for a token bound to pod, audience
// goodsched, as the kubelet projects one into it.
func (e *env) podToken(p *corev1.Pod) (string, error) {
	exp := int64(3600)
	tok, err := e.cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), "trainer", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences: []string{report.Audience}, ExpirationSeconds: &exp,
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tok.Status.Token, nil
}

// launcher is the kubelet of one Job's kwok pods: it runs torchrun on this
// machine with as many processes as the Job has running pods, with a token
// bound to one of them, and restarts it (SIGTERM, then the new world size
// from the checkpoint) when that number changes.
type launcher struct {
	e        *env
	job      string
	args     []string // the trainer's arguments
	dir      string
	token    string
	tokenPod string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	world  int
	runs   []run
	done   bool // the trainer finished (exit 0 on its own)
	failed error
}

// run is one torchrun process.
type run struct {
	World   int
	Started time.Time
	Stopped time.Time
	Exit    string
}

func (e *env) newLauncher(job string, args ...string) *launcher {
	dir := filepath.Join(e.dir, job)
	if err := os.MkdirAll(filepath.Join(dir, "checkpoint"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	l := &launcher{e: e, job: job, args: args, dir: dir, token: filepath.Join(dir, "token")}
	if err := os.WriteFile(l.token, nil, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return l
}

func (l *launcher) logPath() string { return filepath.Join(l.dir, "steps.jsonl") }

// watch follows the Job's pods until ctx is done or the trainer finishes.
func (l *launcher) watch(ctx context.Context) {
	tk := time.NewTicker(200 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		if l.finished() {
			return
		}
		pods, err := l.e.runningPods(l.job)
		if err != nil {
			continue
		}
		job, err := l.e.cs.BatchV1().Jobs(namespace).Get(ctx, l.job, metav1.GetOptions{})
		if err != nil || job.Spec.Parallelism == nil {
			continue
		}
		want := len(pods)
		if want == 0 || want != int(*job.Spec.Parallelism) {
			continue // between two allocations: wait until the pods settle
		}
		l.refreshToken(pods)
		l.mu.Lock()
		same := l.cmd != nil && l.world == want
		l.mu.Unlock()
		if same {
			continue
		}
		l.stop()
		if l.finished() {
			return
		}
		l.start(want)
	}
}

func (l *launcher) finished() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done || l.failed != nil
}

// refreshToken writes a token bound to a running pod unless the current
// one is (the client reads the file before every report).
func (l *launcher) refreshToken(pods []corev1.Pod) {
	for _, p := range pods {
		if string(p.UID) == l.tokenPod {
			return
		}
	}
	tok, err := l.e.podToken(&pods[0])
	if err != nil {
		return
	}
	if err := os.WriteFile(l.token, []byte(tok), 0o600); err == nil {
		l.tokenPod = string(pods[0].UID)
	}
}

func (l *launcher) start(world int) {
	args := append([]string{"-m", "torch.distributed.run", "--standalone", "--nproc_per_node=" + strconv.Itoa(world),
		// Debian's torch 1.13 on Python 3.11 cannot parse the default "0"
		// (IntFlag no longer iterates the zero member): tee stderr.
		"--redirects", "2", "--tee", "2",
		trainerScriptPath, "--checkpoint", filepath.Join(l.dir, "checkpoint"), "--log", l.logPath()}, l.args...)
	cmd := exec.Command(l.e.python, args...)
	cmd.Env = append(os.Environ(),
		"GOODSCHED_URL="+l.e.url, "GOODSCHED_JOB="+namespace+"/"+l.job,
		"GOODSCHED_TOKEN_FILE="+l.token, "GOODSCHED_CA_FILE="+l.e.caFile,
		"GLOO_SOCKET_IFNAME=lo", "MASTER_ADDR=127.0.0.1", "OMP_NUM_THREADS=1", "PYTHONUNBUFFERED=1")
	out, err := os.OpenFile(filepath.Join(l.dir, "torchrun.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		l.e.t.Error(err)
		return
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		l.e.t.Errorf("start torchrun: %v", err)
		return
	}
	exited := make(chan struct{})
	l.mu.Lock()
	l.cmd, l.exited, l.world = cmd, exited, world
	l.runs = append(l.runs, run{World: world, Started: time.Now()})
	idx := len(l.runs) - 1
	l.mu.Unlock()
	go func() {
		err := cmd.Wait()
		out.Close()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.runs[idx].Stopped = time.Now()
		l.runs[idx].Exit = fmt.Sprint(err)
		if l.cmd == cmd {
			l.cmd = nil
			switch {
			case err == nil:
				l.done = true
			default:
				l.failed = fmt.Errorf("torchrun (world %d) exited on its own: %v\n%s", world, err, testcluster.Tail(filepath.Join(l.dir, "torchrun.log"), 30))
			}
		}
		close(exited)
	}()
}

// stop asks the running torchrun to stop (SIGTERM, which it forwards to
// the trainers: they checkpoint at the next step boundary and exit) and
// waits until it has exited.
func (l *launcher) stop() {
	l.mu.Lock()
	cmd, exited := l.cmd, l.exited
	l.cmd = nil
	l.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		l.e.t.Errorf("torchrun did not stop within 90 s of SIGTERM")
	}
}

// kill ends everything the launcher started (test cleanup).
func (l *launcher) kill() {
	l.mu.Lock()
	cmd, exited := l.cmd, l.exited
	l.mu.Unlock()
	if cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

func (l *launcher) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

func (l *launcher) history() []run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

// stepLine is one line of the trainer's --log.
type stepLine struct {
	Run          *int     `json:"run"`
	Step         int      `json:"step"`
	World        int      `json:"world"`
	Batch        int      `json:"batch"`
	Local        int      `json:"local"`
	Accum        int      `json:"accum"`
	Scale        float64  `json:"scale"`
	Sqr          *float64 `json:"sqr"`
	Var          *float64 `json:"var"`
	TrainSeconds float64  `json:"train_seconds"`
	ReportError  string   `json:"report_error"`
	Eval         *int     `json:"eval"`
	Acc          float64  `json:"acc"`
	Stopped      *int     `json:"stopped"`
	Done         *int     `json:"done"`
}

func (s stepLine) isStep() bool {
	return s.Run == nil && s.Eval == nil && s.Stopped == nil && s.Done == nil && s.Step > 0
}

// noiseScale is var/sqr, the gradient noise scale over the initial batch
// (+Inf when the estimate of |g|² is floored at 0; 0 without statistics).
func (s stepLine) noiseScale() float64 {
	if s.Sqr == nil || s.Var == nil {
		return 0
	}
	if *s.Sqr <= 0 {
		return math.Inf(1)
	}
	return *s.Var / *s.Sqr
}

func readSteps(path string) ([]stepLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []stepLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s stepLine
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// lastStep is the last step line of the log (zero before any).
func lastStep(path string) stepLine {
	ls, _ := readSteps(path)
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].isStep() {
			return ls[i]
		}
	}
	return stepLine{}
}

// front is a TLS reverse proxy in front of the report endpoint that can
// answer reports with faults: refusals in the client's status codes, or
// the endpoint's answer (the report was stored) replaced by a malformed
// one or by a plan the trainer cannot reach. It records the bodies of the
// reports it forwards.
type front struct {
	mu      sync.Mutex
	faults  []fault
	applied []string
	bodies  []string
}

// fault is what the front does to one report: status > 0 refuses it;
// otherwise the report goes through and body, if set, replaces the answer
// (a function of the endpoint's answer).
type fault struct {
	name   string
	status int
	body   func(answer []byte) []byte
}

func (e *env) startFront(ctx context.Context, backend string) {
	t := e.t
	u, _ := url.Parse(backend)
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(e.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	f := &front{}
	e.front = f
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	proxy.ModifyResponse = func(r *http.Response) error {
		fl, _ := r.Request.Context().Value(faultKey{}).(*fault)
		if fl == nil || fl.body == nil || r.StatusCode != http.StatusOK {
			return nil
		}
		answer, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		b := fl.body(answer)
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body.Close()
		f.mu.Lock()
		f.bodies = append(f.bodies, string(body))
		var fl *fault
		if len(f.faults) > 0 {
			fl = &f.faults[0]
			f.faults = f.faults[1:]
			f.applied = append(f.applied, fl.name)
		}
		f.mu.Unlock()
		if fl != nil && fl.status > 0 {
			if fl.status == http.StatusServiceUnavailable || fl.status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, "front: injected "+fl.name, fl.status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), faultKey{}, fl)))
	})
	cert, err := tls.LoadX509KeyPair(filepath.Join(e.dir, "tls.crt"), filepath.Join(e.dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	e.url = "https://" + ln.Addr().String()
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("front: %v", err)
		}
	}()
	t.Cleanup(func() { _ = hs.Close(); <-done })
}

type faultKey struct{}

func (f *front) inject(fs ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fs...)
}

func (f *front) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.faults)
}

func (f *front) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies)
}

// logRecorder is a slog.Handler that keeps the records' messages and
// attributes as text.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// failures keeps each test's waitFor timeout, which startEnv's first
// cleanup logs again after the control plane's log tails, so that the
// reason is the last thing a failed run prints.
var failures sync.Map

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		if why != "" {
			last = why
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("timed out after %v waiting for %s: %s", timeout, what, last)
			failures.Store(t, msg)
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// trainerScriptPath is the example's absolute path.
var trainerScriptPath = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "client", "python", "examples", "digits_ddp.py")
}()
