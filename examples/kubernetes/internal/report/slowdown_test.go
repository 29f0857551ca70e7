package report

import (
	"math"
	"net/http"
	"sync"
	"testing"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
)

// TestReportStepsHookVariability: Config.Steps receives the step times of
// each report the endpoint stored (the optimizer step plus its
// accumulation passes), and nothing of a refused report or a pure
// reconfiguration poll.
func TestReportStepsHookVariability(t *testing.T) {
	var mu sync.Mutex
	got := map[host.JobKey][][]host.StepTime{}
	f := newFixture(t, Config{Steps: func(job host.JobKey, steps []host.StepTime) error {
		mu.Lock()
		defer mu.Unlock()
		got[job] = append(got[job], steps)
		return nil
	}})
	rep := report("ml/a")
	rep.Steps = append(rep.Steps, client.Steps{Nodes: 1, Replicas: 2, Local: 64, Accum: 2, Count: 5, OptimSeconds: 0.2, AccumCount: 10, AccumSeconds: 0.05})
	if code, _, body := f.post("tok-a-0", rep); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	// Refused: job b's pod reports for job a.
	if code, _, _ := f.post("tok-b-0", report("ml/a")); code == http.StatusOK {
		t.Fatal("a report for another job was accepted")
	}
	if code, _, body := f.post("tok-b-0", client.Report{Job: "ml/b", Reconfigure: true}); code != http.StatusOK {
		t.Fatalf("poll: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || len(got["ml/a"]) != 1 || len(got["ml/a"][0]) != 2 {
		t.Fatalf("Steps calls %+v, want one for ml/a with 2 configurations", got)
	}
	s := got["ml/a"][0]
	if s[0].Replicas != 1 || s[0].Local != 128 || s[0].Seconds != 0.1 {
		t.Errorf("first configuration %+v, want 1 replica, local 128, 0.1 s", s[0])
	}
	if s[1].Replicas != 2 || s[1].Local != 64 || s[1].Accum != 2 || math.Abs(s[1].Seconds-0.3) > 1e-12 {
		t.Errorf("second configuration %+v, want 2 replicas, local 64, accum 2, 0.2 + 2×0.05 s", s[1])
	}
}
