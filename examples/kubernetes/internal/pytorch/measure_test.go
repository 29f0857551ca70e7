package pytorch_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/goodput"
)

// EnvMeasureSeeds lists the seeds of TestMeasureDigitsTimeToAccuracy
// ("1,2,3"); unset, the measurement is skipped.
const EnvMeasureSeeds = "GOODSCHED_DIGITS_SEEDS"

// targetAccuracy is the validation accuracy both runs train to.
const targetAccuracy = 0.98

// TestMeasureDigitsTimeToAccuracy measures, for each seed of
// GOODSCHED_DIGITS_SEEDS, the training time the digits example needs to
// reach targetAccuracy (on up to 2 replicas, as the scheduler gives them) when it follows the scheduler's batch
// plans and when it trains at its initial batch (--fixed-batch: it still
// reports), with the same data, seed and evaluation points, and what the
// job's fitted goodput model predicted for the plan it followed against
// the fixed batch. It is a measurement for the README, not a check: it
// asserts only that both runs reach the target.
func TestMeasureDigitsTimeToAccuracy(t *testing.T) {
	spec := os.Getenv(EnvMeasureSeeds)
	if spec == "" {
		t.Skipf("measurement: set %s=1,2,3 to run it", EnvMeasureSeeds)
	}
	var seeds []int
	for _, f := range strings.Split(spec, ",") {
		s, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("%s: %v", EnvMeasureSeeds, err)
		}
		seeds = append(seeds, s)
	}
	e := startEnv(t, 3*time.Second)
	type result struct {
		seconds   float64
		steps     int
		samples   int
		batches   []int
		predRatio float64
	}
	var lines []string
	var sumA, sumF float64
	for i, seed := range seeds {
		res := map[bool]result{}
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, adaptive := range order {
			name := fmt.Sprintf("digits-%d-fixed", seed)
			args := []string{"--seed", strconv.Itoa(seed), "--report-period", "1", "--target-accuracy", fmt.Sprint(targetAccuracy),
				"--eval-samples", "360", "--checkpoint-every", "1000000"}
			if adaptive {
				name = fmt.Sprintf("digits-%d-plan", seed)
			} else {
				args = append(args, "--fixed-batch")
			}
			// Adaptive jobs start on one GPU until their first report
			// (a minimum of 2 would never start): both variants go
			// through the same 1 → 2 resize.
			e.createJob(adaptiveJob(name, 1, 2))
			l := e.newLauncher(name, args...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			l.watch(ctx)
			cancel()
			if err := l.err(); err != nil {
				t.Fatal(err)
			}
			ls, err := readSteps(l.logPath())
			if err != nil {
				t.Fatal(err)
			}
			r := result{}
			for _, s := range ls {
				if s.isStep() && (len(r.batches) == 0 || r.batches[len(r.batches)-1] != s.Batch) {
					r.batches = append(r.batches, s.Batch)
				}
				if s.Eval != nil && s.Acc >= targetAccuracy && r.steps == 0 {
					r.seconds, r.steps = s.TrainSeconds, *s.Eval
				}
			}
			if r.steps == 0 {
				t.Fatalf("%s: never reached %.2f", name, targetAccuracy)
			}
			if m, ok := e.srv.Model(host.JobKey(namespace+"/"+name), goodput.AnyType); ok && adaptive {
				last := lastStep(l.logPath())
				r.predRatio = m.Goodput(1, 2, last.Local, last.Accum) / m.Goodput(1, 2, 16, 0)
			}
			res[adaptive] = r
			bg := metav1.DeletePropagationBackground
			_ = e.cs.BatchV1().Jobs(namespace).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &bg})
			waitFor(t, 2*time.Minute, "the Job's pods gone", func() (bool, string) {
				ps, err := e.runningPods(name)
				return err == nil && len(ps) == 0, fmt.Sprint(len(ps), err)
			})
		}
		a, f := res[true], res[false]
		sumA += a.seconds
		sumF += f.seconds
		line := fmt.Sprintf("seed %d: plan followed %.2f s (%d steps, batches %v; model: final plan %.2fx the fixed batch's goodput), fixed batch 32 %.2f s (%d steps): ratio %.2f",
			seed, a.seconds, a.steps, a.batches, a.predRatio, f.seconds, f.steps, a.seconds/f.seconds)
		t.Log(line)
		lines = append(lines, line)
	}
	n := float64(len(seeds))
	summary := fmt.Sprintf("digits to %.0f%% on up to 2 replicas, mean over %d seeds: plan followed %.2f s, fixed batch %.2f s, ratio %.2f",
		100*targetAccuracy, len(seeds), sumA/n, sumF/n, (sumA/n)/(sumF/n))
	if math.IsNaN(sumA) {
		t.Fatal("no result")
	}
	t.Log(summary)
	fmt.Println(strings.Join(append(lines, summary), "\n"))
}
