package host_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/variability"
)

// TestIntegrationVariabilityGangAvoidsSlowNode: a gang fills one of three
// nodes and reports steps 2× slower than before there (interference
// starts); the host's estimate of that node's GPUs becomes 2
// (goodsched_device_slowdown), the gang moves to a fast node, and a new
// gang is bound on the other fast node, not on the slow node, although
// it is free (without the estimates the placer picks n0, the first free
// node, where the first gang lands and reports).
func TestIntegrationVariabilityGangAvoidsSlowNode(t *testing.T) {
	c := startCluster(t)
	createNodes(t, c, gpuNode("n0", productA100, 2, true), gpuNode("n1", productA100, 2, true), gpuNode("n2", productA100, 2, true))
	createJobs(t, c, gpuJob("old", 2, 1, nil))
	h, ctx := startHost(t, host.Config{Client: schedulerClient(t, c, &requestLog{}), Variability: &variability.Options{}})
	slow := ""
	driveUntil(t, ctx, h, 30*time.Second, "old's gang bound on one node", func() (bool, string) {
		pods := livePods(t, c, "old")
		ok := len(pods) == 2 && boundCount(pods) == 2 && pods[0].Spec.NodeName == pods[1].Spec.NodeName
		if ok {
			slow = pods[0].Spec.NodeName
		}
		return ok, fmt.Sprint(nodesOf(pods))
	})
	if _, err := h.RoundOnce(ctx); err != nil { // the host now knows old's devices
		t.Fatal(err)
	}
	job := host.JobKey(testNS + "/old")
	steps := func(sec float64) []host.StepTime {
		return []host.StepTime{{Replicas: 2, Local: 32, Seconds: sec}}
	}
	if err := h.ObserveSteps(job, steps(1)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := h.ObserveSteps(job, steps(2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.ObserveSteps(job, steps(-1)); err == nil {
		t.Error("a negative step time was accepted")
	}
	if _, err := h.RoundOnce(ctx); err != nil {
		t.Fatal(err)
	}
	metrics := scrape(t, h)
	series := regexp.MustCompile(`goodsched_device_slowdown\{gpu="(\d+)",node="(n\d)"\} (\S+)`).FindAllStringSubmatch(metrics, -1)
	slowGPUs := 0
	for _, s := range series {
		switch {
		case s[2] == slow && s[3] == "2":
			slowGPUs++
		case s[3] != "1":
			t.Errorf("GPU %s of %s: slowdown %s, want 1", s[1], s[2], s[3])
		}
	}
	if len(series) != 6 || slowGPUs != 2 {
		t.Fatalf("goodsched_device_slowdown: %d series, %d GPUs of %s at 2; want 6 series and %s's 2 GPUs at 2:\n%v", len(series), slowGPUs, slow, slow, series)
	}
	if !strings.Contains(metrics, `goodsched_errors_total{op="slowdown"} 1`) {
		t.Error(`goodsched_errors_total{op="slowdown"} is not 1 after one refused step time`)
	}

	onOneFastNode := func(job string) func() (bool, string) {
		return func() (bool, string) {
			pods := livePods(t, c, job)
			ok := len(pods) == 2 && boundCount(pods) == 2 && pods[0].Spec.NodeName == pods[1].Spec.NodeName && pods[0].Spec.NodeName != slow
			return ok, fmt.Sprint(nodesOf(pods))
		}
	}
	driveUntil(t, ctx, h, 60*time.Second, "old's gang moved off the slow node "+slow, onOneFastNode("old"))
	createJobs(t, c, gpuJob("new", 2, 1, nil))
	driveUntil(t, ctx, h, 30*time.Second, "new's gang bound on a fast node, not on the free slow node "+slow, onOneFastNode("new"))
	for range 3 { // and it stays there
		if _, err := h.RoundOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, job := range []string{"old", "new"} {
		if ok, where := onOneFastNode(job)(); !ok {
			t.Errorf("%s's gang: %s, want both pods on one node other than %s", job, where, slow)
		}
	}
	t.Logf("slow node %s; old now on %v, new on %v", slow, nodesOf(livePods(t, c, "old")), nodesOf(livePods(t, c, "new")))
	checkDevices(t, c, "old", "new")
}

// scrape returns the host's /metrics page.
func scrape(t *testing.T, h *host.Host) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
