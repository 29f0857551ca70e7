package host_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
	"github.com/goodsched/goodsched/serving"
)

// vllmLoad is what the stub's replicas serve.
type vllmLoad struct {
	rate    float64       // requests/s, shared by the replicas scraped in the last 10 s
	ttft    time.Duration // every request's time to first token
	prefill time.Duration // every request's prefill time (ttft less its queueing)
	tpot    time.Duration // every output token's time
	waiting int
	running int
	kv      float64
}

// vLLM's histogram buckets (vllm/engine/metrics.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
)

const (
	stubPromptTokens = 1000 // per request
	stubOutputTokens = 100
)

// vllmStub serves a vLLM-like /metrics per pod, on loopback: each
// replica's counters grow at the load in force while time passes.
type vllmStub struct {
	srv    *httptest.Server
	mu     sync.Mutex
	load   vllmLoad
	broken bool // serve text that is not Prometheus's format
	pods   map[string]*stubPod
}

type stubPod struct {
	last       time.Time
	scrapes    int
	carry      float64 // fractional requests not yet counted
	requests   int
	ttftSum    float64
	ttftCum    []int
	prefillSum float64
	prefillCum []int
	tpotN      int
	tpotSum    float64
	tpotCum    []int
}

func newVLLMStub(t *testing.T, load vllmLoad) *vllmStub {
	s := &vllmStub{load: load, pods: map[string]*stubPod{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *vllmStub) set(l vllmLoad, broken bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, p := range s.pods {
		s.advance(p, now) // the old load up to now
	}
	s.load, s.broken = l, broken
}

// scraped returns how many times each pod's endpoint was read.
func (s *vllmStub) scraped() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for name, p := range s.pods {
		out[name] = p.scrapes
	}
	return out
}

func (s *vllmStub) advance(p *stubPod, now time.Time) {
	l := s.load
	active := 0
	for _, q := range s.pods {
		if now.Sub(q.last) < 10*time.Second || q == p {
			active++
		}
	}
	x := p.carry + l.rate/float64(active)*now.Sub(p.last).Seconds()
	n := int(math.Floor(x))
	p.carry, p.last = x-float64(n), now
	p.requests += n
	p.ttftSum += float64(n) * l.ttft.Seconds()
	for i, b := range ttftBuckets {
		if l.ttft.Seconds() <= b {
			p.ttftCum[i] += n
		}
	}
	p.prefillSum += float64(n) * l.prefill.Seconds()
	for i, b := range ttftBuckets {
		if l.prefill.Seconds() <= b {
			p.prefillCum[i] += n
		}
	}
	k := n * (stubOutputTokens - 1)
	p.tpotN += k
	p.tpotSum += float64(k) * l.tpot.Seconds()
	for i, b := range tpotBuckets {
		if l.tpot.Seconds() <= b {
			p.tpotCum[i] += k
		}
	}
}

func (s *vllmStub) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		fmt.Fprintln(w, "vllm:num_requests_waiting{model_name=\"chat\" 3 <- not Prometheus")
		return
	}
	name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/metrics")
	now := time.Now()
	p := s.pods[name]
	if p == nil {
		p = &stubPod{last: now, ttftCum: make([]int, len(ttftBuckets)), prefillCum: make([]int, len(ttftBuckets)), tpotCum: make([]int, len(tpotBuckets))}
		s.pods[name] = p
	}
	s.advance(p, now)
	p.scrapes++
	l := s.load
	var b strings.Builder
	gauge := func(name string, v float64) {
		fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s gauge\n%s{model_name=\"chat\"} %g\n", name, name, name, v)
	}
	counter := func(name string, v float64) {
		fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s counter\n%s{model_name=\"chat\"} %g\n", name, name, name, v)
	}
	hist := func(name string, bounds []float64, cum []int, n int, sum float64) {
		fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s histogram\n", name, name)
		for i, le := range bounds {
			fmt.Fprintf(&b, "%s_bucket{le=\"%g\",model_name=\"chat\"} %d\n", name, le, cum[i])
		}
		fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\",model_name=\"chat\"} %d\n%s_sum{model_name=\"chat\"} %g\n%s_count{model_name=\"chat\"} %d\n", name, n, name, sum, name, n)
	}
	gauge(host.MetricRunning, float64(l.running))
	gauge(host.MetricWaiting, float64(l.waiting))
	gauge(host.MetricKVUsage, l.kv)
	counter(host.MetricPromptTokens, float64(p.requests*stubPromptTokens))
	counter(host.MetricGenerationTokens, float64(p.requests*stubOutputTokens))
	hist(host.MetricTTFT, ttftBuckets, p.ttftCum, p.requests, p.ttftSum)
	hist(host.MetricTPOT, tpotBuckets, p.tpotCum, p.tpotN, p.tpotSum)
	hist(host.MetricPrefillTime, ttftBuckets, p.prefillCum, p.requests, p.prefillSum)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprint(w, b.String())
}

// serviceDeployment is a Deployment of an inference service: replicas of
// gpus GPUs each for the goodsched scheduler, scaled by goodsched.
func serviceDeployment(name string, gpus int, ann map[string]string) *appsv1.Deployment {
	one := int32(1)
	grace := int64(0)
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Annotations: ann},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SchedulerName:                 host.DefaultSchedulerName,
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:test",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{host.ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}}}},
				},
			},
		},
	}
}

// servicePods returns the live pods of a Deployment (by its app label).
func servicePods(t *testing.T, c *testcluster.Cluster, app string) []corev1.Pod {
	t.Helper()
	return liveSelected(t, c, "app="+app)
}

// errorsCounted reads goodsched_errors_total{op} from the host's registry.
func errorsCounted(t *testing.T, h *host.Host, op string) float64 {
	t.Helper()
	return metricValue(t, h, "goodsched_errors_total", "op="+op)
}

// TestIntegrationServingBurstShrinksTrainingAndGrowsBack: an inference
// service (a Deployment annotated goodsched.io/service, replicas of 2
// GPUs, its pods' vLLM metrics served by a stub on loopback) shares two
// 4-GPU nodes with an elastic training Job. At low load the service has
// one replica and training the other 6 GPUs. A burst makes goodsched's
// Predictive autoscaler scale the Deployment (its scale subresource) to
// its 3 replicas: the training Job shrinks to the 2 GPUs left, its pods on
// the replicas' devices evicted, and no device is held twice. While the
// metrics endpoints are malformed the replica count stays as decided and
// the failures are counted in goodsched_errors_total{op="serving-metrics"}.
// When the burst ends the service scales back to one replica and training
// grows back to 6 GPUs.
func TestIntegrationServingBurstShrinksTrainingAndGrowsBack(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 4, true), gpuNode("n1", productA100, 4, true))
	low := vllmLoad{rate: 1.5, ttft: 55 * time.Millisecond, prefill: 50 * time.Millisecond, tpot: 10 * time.Millisecond, running: 2, kv: 0.1}
	burst := vllmLoad{rate: 40, ttft: 1500 * time.Millisecond, prefill: 50 * time.Millisecond, tpot: 60 * time.Millisecond, waiting: 20, running: 64, kv: 0.9}
	stub := newVLLMStub(t, low)

	createJobs(t, c, gpuJob("train", 1, 1, map[string]string{host.AnnotationKind: "elastic", host.AnnotationMaxReplicas: "8"}))
	d := serviceDeployment("chat", 2, map[string]string{
		host.AnnotationService: "true", host.AnnotationModel: "llama2-70b",
		host.AnnotationTTFTP90: "1s", host.AnnotationTPOTP90: "50ms", host.AnnotationStartup: "2s",
		host.AnnotationMaxReplicas: "3",
		host.AnnotationMetricsURL:  stub.srv.URL + "/{namespace}/{pod}/metrics",
	})
	if _, err := c.Client.AppsV1().Deployments(testNS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Forecast buckets of one second (the default is 30 s) so that the
	// burst's spread leaves the forecast within a test's time.
	fast := func(s serving.Service, p *serving.Profile) serving.Autoscaler {
		return &serving.Predictive{Service: s, Profile: p, Bucket: time.Second, BurstWindow: 3 * time.Second, DownDelay: 3 * time.Second}
	}
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{}),
		Serving: &host.ServingConfig{Autoscaler: fast}})

	replicas := func() int {
		got, err := c.Client.AppsV1().Deployments(testNS).Get(ctx, "chat", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return int(*got.Spec.Replicas)
	}
	state := func() (svc, train int, msg string) {
		svc, train = boundCount(servicePods(t, c, "chat")), boundCount(livePods(t, c, "train"))
		return svc, train, fmt.Sprintf("service: %d replicas asked, %d bound; training: %d pods bound", replicas(), svc, train)
	}
	noDoubleDevices := func() {
		t.Helper()
		seen := map[string]string{}
		pods := append(servicePods(t, c, "chat"), livePods(t, c, "train")...)
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				continue
			}
			for _, dv := range strings.Split(p.Annotations[host.AnnotationDevices], ",") {
				id := p.Spec.NodeName + "/" + dv
				if other, dup := seen[id]; dup {
					t.Fatalf("device %s held by %s and %s", id, other, p.Name)
				}
				seen[id] = p.Name
			}
		}
	}

	driveUntil(t, ctx, h, 90*time.Second, "low load: one replica, training on the other 6 GPUs", func() (bool, string) {
		svc, train, msg := state()
		return svc == 1 && train == 6 && replicas() == 1, msg
	})
	noDoubleDevices()
	// The autoscaler learns the replicas' profile from a few scrapes at
	// low load (decode at batch 1) before the burst.
	driveUntil(t, ctx, h, 60*time.Second, "six scrapes at low load", func() (bool, string) {
		sc := stub.scraped()
		for _, n := range sc {
			if n >= 6 {
				return true, ""
			}
		}
		return false, fmt.Sprint(sc)
	})
	t.Log("low load settled: 1 replica, training on 6 GPUs")

	// The burst arrives while the endpoints are malformed: the count stays.
	before := errorsCounted(t, h, "serving-metrics")
	stub.set(burst, true)
	for range 8 {
		if _, err := h.RoundOnce(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if n := replicas(); n != 1 {
		t.Fatalf("replicas %d while the metrics are malformed, want the last decision (1)", n)
	}
	if after := errorsCounted(t, h, "serving-metrics"); after <= before {
		t.Fatalf("goodsched_errors_total{op=\"serving-metrics\"} %v, was %v: the malformed endpoint is not counted", after, before)
	}

	stub.set(burst, false)
	driveUntil(t, ctx, h, 120*time.Second, "burst: 3 replicas bound, training shrunk to 2 GPUs", func() (bool, string) {
		svc, train, msg := state()
		return svc == 3 && train == 2, msg
	})
	noDoubleDevices()
	if j, err := c.Client.BatchV1().Jobs(testNS).Get(ctx, "train", metav1.GetOptions{}); err != nil || *j.Spec.Parallelism != 2 {
		t.Fatalf("training Job after the burst: %v, parallelism %v, want 2", err, j.Spec.Parallelism)
	}
	if v := metricValue(t, h, "goodsched_service_replicas", "state=desired"); v != 3 {
		t.Errorf("goodsched_service_replicas{state=\"desired\"} %v after the burst, want 3", v)
	}
	ev := jobEvents(t, c, "Deployment", "chat")
	if !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "Normal ScaledUp: scale 1→") }) {
		t.Errorf("no ScaledUp Event on the Deployment: %q", ev)
	}
	t.Log("burst: 3 replicas, training on 2 GPUs")

	stub.set(low, false)
	driveUntil(t, ctx, h, 180*time.Second, "after the burst: one replica, training back on 6 GPUs", func() (bool, string) {
		svc, train, msg := state()
		return svc == 1 && train == 6 && replicas() == 1, msg
	})
	noDoubleDevices()
	t.Logf("Deployment Events: %q", jobEvents(t, c, "Deployment", "chat"))
}
