package pytorch_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/examples/kubernetes/internal/report"
	"github.com/goodsched/goodsched/goodput"
)

// TestPyTorchDigitsDDPEndToEnd runs the digits example under torchrun
// against the real control plane, host and report endpoint, and checks:
// its reports are accepted and refitted into the job's model; the batch
// plan it follows grows as its gradient noise grows; the scheduler's
// resizes (1 → 2 replicas as the model learns, 2 → 1 when a second Job
// arrives) are honoured by restarting torchrun with the new world size
// from the last checkpoint, with no step lost or repeated; refused,
// malformed and unreachable answers leave it training on its plan; a
// forged token is refused. It also checks the client's gradient noise
// estimate against goodput.NoiseScale fed offline from the per-replica
// gradients the trainer saved (1e-9 relative). It logs how far the model
// fitted before the job ever ran on 2 replicas was from the step time then
// measured there (issue 43's 25%; on a shared 2-core machine that figure
// measures CPU contention, so it is not asserted).
func TestPyTorchDigitsDDPEndToEnd(t *testing.T) {
	start := time.Now()
	// The restart factor's δ: a torchrun restart costs a few seconds here.
	e := startEnv(t, 3*time.Second)
	const job = "digits"
	key := host.JobKey(namespace + "/" + job)
	grads := filepath.Join(e.dir, "grads")
	e.createJob(adaptiveJob(job, 1, gpusPerNode))
	l := e.newLauncher(job, "--seed", "1", "--report-period", "1", "--checkpoint-every", "50",
		"--save-grads", grads, "--save-grads-steps", "12")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); l.kill() })
	wg.Add(2)
	go func() { defer wg.Done(); l.watch(ctx) }()

	// The model the scheduler had while no configuration with 2 replicas
	// was measured: its prediction for 2 replicas is checked at the end.
	var mu sync.Mutex
	var unseen goodput.Model
	var unseenOK bool
	// Whether a stored state ever had gradient statistics: the last one
	// may have none (a report right after a restart, before the first
	// gradient difference).
	var gradSeen bool
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if st := e.srv.State(key); st != nil && st.Grad.Var > 0 {
				mu.Lock()
				gradSeen = true
				mu.Unlock()
			}
			if st := e.srv.State(key); st != nil && !slices.ContainsFunc(st.Configs, func(m report.Measured) bool { return m.Replicas > 1 }) {
				if m, ok := e.srv.Model(key, goodput.AnyType); ok {
					mu.Lock()
					unseen, unseenOK = m, true
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	alive := func() {
		t.Helper()
		if err := l.err(); err != nil {
			t.Fatal(err)
		}
	}

	// 1. The scheduler grows the job to 2 replicas once it has a model.
	waitFor(t, 150*time.Second, "the trainer restarted on 2 replicas", func() (bool, string) {
		alive()
		h := l.history()
		return len(h) >= 2 && h[len(h)-1].World == 2 && lastStep(l.logPath()).World == 2,
			fmt.Sprintf("runs %+v, last step %+v", h, lastStep(l.logPath()))
	})
	t.Logf("%v: running on 2 replicas (runs %v)", time.Since(start).Round(time.Second), worlds(l.history()))

	// 2. The plan grows with the noise scale.
	waitFor(t, 120*time.Second, "a larger batch plan followed as the noise scale grew", func() (bool, string) {
		alive()
		ls, _ := readSteps(l.logPath())
		_, ok := planGrowth(ls)
		return ok, "plans followed: " + planSegments(ls)
	})
	t.Logf("%v: the plan grew", time.Since(start).Round(time.Second))

	// 3. Bad answers: the trainer keeps training on its plan.
	before := lastStep(l.logPath())
	unreachable := func(answer []byte) []byte {
		var r client.Response
		_ = json.Unmarshal(answer, &r)
		// For the world size the trainer runs on now (the scheduler may
		// have resized it): a plan for another one is not followed anyway.
		w := max(lastStep(l.logPath()).World, 1)
		r.Plan = goodput.BatchPlan{Batch: 2048, Local: 2048 / w, Accum: 0, Goodput: 1e9}
		r.Replicas, r.Nodes = w, 1
		b, _ := json.Marshal(r)
		return b
	}
	e.front.inject(
		fault{name: "401", status: 401}, fault{name: "403", status: 403}, fault{name: "413", status: 413},
		fault{name: "429", status: 429},
		fault{name: "503 once (the client retries)", status: 503},
		fault{name: "not JSON", body: func([]byte) []byte { return []byte("{not json") }},
		fault{name: "plan of the wrong type", body: func([]byte) []byte { return []byte(`{"plan":{"batch":"x","local":[1]},"replicas":2}`) }},
		fault{name: "inconsistent plan", body: func([]byte) []byte {
			w := max(lastStep(l.logPath()).World, 1)
			return []byte(fmt.Sprintf(`{"plan":{"batch":999,"local":3,"accum":0,"goodput":1e9},"replicas":%d,"nodes":1}`, w))
		}},
		fault{name: "unreachable plan", body: unreachable},
	)
	waitFor(t, 60*time.Second, "the injected faults consumed", func() (bool, string) {
		alive()
		return e.front.pending() == 0, fmt.Sprintf("%d faults left", e.front.pending())
	})
	nReq := len(e.front.requests())
	waitFor(t, 30*time.Second, "two more reports", func() (bool, string) {
		alive()
		return len(e.front.requests()) >= nReq+2, ""
	})
	after := lastStep(l.logPath())
	if after.Step <= before.Step {
		t.Errorf("training did not go on through the faults: step %d (world %d) before, %d (world %d) after", before.Step, before.World, after.Step, after.World)
	}
	ls, _ := readSteps(l.logPath())
	for _, s := range ls {
		if s.isStep() && s.Step > before.Step && (s.Batch == 2048 || s.Batch == 999 || s.Local == 3) {
			t.Errorf("step %d followed an injected bad plan: batch %d local %d", s.Step, s.Batch, s.Local)
		}
	}
	reqs := e.front.requests()
	if !slices.ContainsFunc(reqs[nReq-1:], func(b string) bool { return strings.Contains(b, `"error"`) && strings.Contains(b, "global batch 2048") }) {
		t.Errorf("no report after the unreachable plan carried its error; last bodies:\n%s", strings.Join(reqs[max(0, len(reqs)-3):], "\n"))
	}
	if !slices.ContainsFunc(e.logs.all(), func(s string) bool {
		return strings.Contains(s, "kept its plan") && strings.Contains(s, "global batch 2048")
	}) {
		t.Errorf("the endpoint did not log the trainer's error: %v", e.logs.all())
	}
	t.Logf("%v: faults %v answered; training went on from step %d to %d on plan batch %d", time.Since(start).Round(time.Second),
		e.front.applied, before.Step, after.Step, after.Batch)

	// 4. A second Job arrives: the scheduler shrinks the first to one GPU.
	// Its pod's token, used to report for the first job, is refused.
	e.createJob(gpuJob("other", 1))
	var otherPod string
	waitFor(t, 30*time.Second, "the other Job's pod", func() (bool, string) {
		ps, err := e.cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=other"})
		if err != nil || len(ps.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		tok, err := e.podToken(&ps.Items[0])
		if err != nil {
			return false, err.Error()
		}
		otherPod = tok
		return true, ""
	})
	forged := filepath.Join(e.dir, "forged.token")
	if err := os.WriteFile(forged, []byte(otherPod), 0o600); err != nil {
		t.Fatal(err)
	}
	forger, err := client.New(client.Config{URL: e.url, Job: string(key), TokenFile: forged, CAFile: e.caFile})
	if err != nil {
		t.Fatal(err)
	}
	marker := client.Steps{Nodes: 1, Replicas: 1, Local: 7, Count: 1000, OptimSeconds: 100}
	_, err = forger.Report(context.Background(), client.Report{Limits: &goodput.Limits{InitBatch: 32, MaxBatch: 512, MinLocal: 8, MaxLocal: 256, Accumulation: true},
		Steps: []client.Steps{marker}})
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != 403 {
		t.Errorf("a report for %s with the other Job's pod token: %v, want 403", key, err)
	}
	if err := os.WriteFile(forged, []byte("not-a-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Report(context.Background(), client.Report{Steps: []client.Steps{marker}}); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("a report with a made-up token: %v, want 401", err)
	}
	waitFor(t, 120*time.Second, "the trainer restarted on 1 replica after the shrink", func() (bool, string) {
		alive()
		h := l.history()
		last := lastStep(l.logPath())
		return len(h) >= 3 && h[len(h)-1].World == 1 && last.World == 1, fmt.Sprintf("runs %v", worlds(h))
	})
	shrunkAt := lastStep(l.logPath()).Step
	waitFor(t, 60*time.Second, "steps on 1 replica", func() (bool, string) {
		alive()
		return lastStep(l.logPath()).Step >= shrunkAt+5, ""
	})
	cancel()
	wg.Wait()
	l.stop()
	t.Logf("%v: stopped; runs %v", time.Since(start).Round(time.Second), worlds(l.history()))

	// Every run but none lost or repeated a step.
	ls, err = readSteps(l.logPath())
	if err != nil {
		t.Fatal(err)
	}
	checkSteps(t, ls, l.history())

	// Reports accepted and refitted.
	st := e.srv.State(key)
	if st == nil {
		t.Fatal("no stored state for the job")
	}
	if slices.ContainsFunc(st.Configs, func(m report.Measured) bool { return m.Local == 7 }) {
		t.Errorf("the forged report's measurements were stored")
	}
	replicas := map[int]int64{}
	for _, m := range st.Configs {
		replicas[m.Replicas] += m.OptimCount
	}
	m, ok := e.srv.Model(key, goodput.AnyType)
	mu.Lock()
	grad := gradSeen || st.Grad.Var > 0
	mu.Unlock()
	if st.Reports < 10 || replicas[1] == 0 || replicas[2] == 0 || !ok || !grad {
		t.Errorf("stored state: %d reports, steps per replica count %v, grad %+v (positive variance stored at some point: %v); model %v", st.Reports, replicas, st.Grad, grad, ok)
	}
	t.Logf("stored: %d reports, %d configurations, optimizer steps per replica count %v; fitted %+v", st.Reports, len(st.Configs), replicas, m.Params)

	// The plan followed grew with the noise scale.
	g, ok := planGrowth(ls)
	if !ok {
		t.Errorf("no plan growth with a growing noise scale in the log")
	}
	t.Logf("plan growth on %d replicas: %s; plans followed: %s", g.world, g, planSegments(ls))

	checkNoiseOffline(t, grads)

	mu.Lock()
	pm, pok := unseen, unseenOK
	mu.Unlock()
	if !pok {
		t.Fatal("no model was fitted before the job ran on 2 replicas")
	}
	checkPrediction(t, pm, st)
	t.Logf("total %v", time.Since(start).Round(time.Second))
}

// planSegments lists the plans a log followed: world, first step, batch
// and the noise scale at that step.
func planSegments(ls []stepLine) string {
	var b strings.Builder
	prev := stepLine{}
	for _, s := range ls {
		if s.isStep() && (s.Batch != prev.Batch || s.World != prev.World) {
			fmt.Fprintf(&b, "[%d replicas, step %d: batch %d, noise scale %.2f] ", s.World, s.Step, s.Batch, s.noiseScale())
		}
		if s.isStep() {
			prev = s
		}
	}
	last := lastStepOf(ls)
	fmt.Fprintf(&b, "… step %d noise scale %.2f", last.Step, last.noiseScale())
	return b.String()
}

func lastStepOf(ls []stepLine) stepLine {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].isStep() {
			return ls[i]
		}
	}
	return stepLine{}
}

func worlds(h []run) []int {
	out := make([]int, len(h))
	for i, r := range h {
		out[i] = r.World
	}
	return out
}

// growth is a plan change at one world size: from the first step of one
// plan to the first step of the next.
type growth struct {
	world       int
	from, to    stepLine
	noiseBefore float64
	noiseAtSwap float64
}

func (g growth) String() string {
	return fmt.Sprintf("batch %d (step %d, noise scale %.2f) → %d (step %d, noise scale %.2f)",
		g.from.Batch, g.from.Step, g.noiseBefore, g.to.Batch, g.to.Step, g.noiseAtSwap)
}

// planGrowth finds two plans followed on the same number of replicas, the
// later one with a larger global batch, adopted when the noise scale was
// larger than while the earlier one was in force. The earlier plan's noise
// scale is the first finite, positive one logged under it: a run starts
// with an empty estimate (0) and a converged model's estimate of |g|² can
// floor at 0 (+Inf), neither of which says what the noise was when the
// plan was chosen. +Inf at the later plan counts as larger.
func planGrowth(ls []stepLine) (growth, bool) {
	type segment struct {
		first stepLine // the plan's first step
		noise float64  // the first finite, positive noise scale under it
	}
	var segs []segment
	prev := stepLine{}
	for _, s := range ls {
		if !s.isStep() {
			continue
		}
		if s.Batch != prev.Batch || s.World != prev.World {
			segs = append(segs, segment{first: s})
		}
		if seg := &segs[len(segs)-1]; seg.noise == 0 {
			if n := s.noiseScale(); n > 0 && !math.IsInf(n, 1) {
				seg.noise = n
			}
		}
		prev = s
	}
	for j, b := range segs {
		for _, a := range segs[:j] {
			nb := b.first.noiseScale()
			if a.first.World == b.first.World && b.first.Batch > a.first.Batch && a.noise > 0 && nb > a.noise {
				return growth{world: a.first.World, from: a.first, to: b.first, noiseBefore: a.noise, noiseAtSwap: nb}, true
			}
		}
	}
	return growth{}, false
}

// checkSteps checks that the steps logged over every run are 1..n, each
// once, in order, that each run resumed right after the step the previous
// one stopped at, and that every run but the last stopped on SIGTERM with
// a checkpoint.
func checkSteps(t *testing.T, ls []stepLine, h []run) {
	t.Helper()
	next := 1
	lastStopped := 0
	runs := 0
	var runWorlds []int
	for _, s := range ls {
		switch {
		case s.Run != nil:
			runs++
			runWorlds = append(runWorlds, s.World)
			if *s.Run != next-1 {
				t.Errorf("run %d started from step %d, want %d", runs, *s.Run, next-1)
			}
		case s.Stopped != nil:
			lastStopped = *s.Stopped
			if lastStopped != next-1 {
				t.Errorf("run %d stopped at step %d after logging step %d", runs, lastStopped, next-1)
			}
		case s.isStep():
			if s.Step != next {
				t.Errorf("step %d logged where %d was due (lost or repeated)", s.Step, next)
				next = s.Step
			}
			next++
		}
	}
	if lastStopped != next-1 {
		t.Errorf("the last run stopped at step %d, the log ends at %d", lastStopped, next-1)
	}
	// A torchrun stopped before its trainers started logs no run.
	if len(runWorlds) < 3 || runWorlds[0] != 1 || !slices.Contains(runWorlds[1:], 2) || runWorlds[len(runWorlds)-1] != 1 {
		t.Errorf("runs on %v replicas, want 1, then 2, then 1 again", runWorlds)
	}
	t.Logf("%d steps over %d runs on %v replicas (torchrun started on %v), none lost or repeated", next-1, runs, runWorlds, worlds(h))
}

// savedStep is one line of a run's steps.jsonl in --save-grads.
type savedStep struct {
	Step   int     `json:"step"`
	World  int     `json:"world"`
	Scale  float64 `json:"scale"`
	Sqr    float64 `json:"sqr"`
	Var    float64 `json:"var"`
	Before struct {
		Theta  float64 `json:"theta"`
		Weight float64 `json:"weight"`
		Biased bool    `json:"biased"`
	} `json:"before"`
}

// checkNoiseOffline recomputes, for each saved window that starts from an
// empty estimate, the client's gradient statistics with goodput.NoiseScale
// from the per-replica gradients, and compares them to 1e-9 relative.
func checkNoiseOffline(t *testing.T, root string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "run-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no saved gradients in %s (%v)", root, err)
	}
	checked := map[string]int{}
	worst := 0.0
	for _, d := range dirs {
		steps, err := readSaved(filepath.Join(d, "steps.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var ns *goodput.NoiseScale
		var prev []float64
		updates := 0
		for i, s := range steps {
			vecs := make([][]float64, s.World)
			for r := range s.World {
				vecs[r], err = readF64(filepath.Join(d, fmt.Sprintf("step-%06d-rank-%d.f64", s.Step, r)))
				if err != nil {
					t.Fatal(err)
				}
				if len(vecs[r]) != len(vecs[0]) || len(vecs[r]) == 0 {
					t.Fatalf("%s step %d: rank %d saved %d values, rank 0 %d", d, s.Step, r, len(vecs[r]), len(vecs[0]))
				}
			}
			if s.World == 1 {
				g := vecs[0]
				p := prev
				prev = g
				if p == nil {
					continue // the first gradient of a run only starts the difference
				}
				if ns == nil {
					if s.Before.Weight != 0 {
						break // starts from a restored estimate: not checked
					}
					ns = &goodput.NoiseScale{Theta: s.Before.Theta}
				}
				avg := make([]float64, len(g))
				for k := range g {
					avg[k] = (p[k] + g[k]) / 2
				}
				if err := ns.Update((sqNorm(p)+sqNorm(g))/2, sqNorm(avg), 2, 2*s.Scale); err != nil {
					t.Fatal(err)
				}
			} else {
				if ns == nil {
					if i != 0 || (s.Before.Weight != 0 && !s.Before.Biased) {
						break
					}
					ns = &goodput.NoiseScale{Theta: s.Before.Theta}
				}
				mean, avg := 0.0, make([]float64, len(vecs[0]))
				for _, v := range vecs {
					mean += sqNorm(v)
					for k, x := range v {
						avg[k] += x / float64(s.World)
					}
				}
				mean /= float64(s.World)
				if err := ns.Update(mean, sqNorm(avg), s.World, s.Scale); err != nil {
					t.Fatal(err)
				}
			}
			updates++
			got, _ := ns.Stats()
			for _, c := range [][2]float64{{s.Sqr, got.Sqr}, {s.Var, got.Var}} {
				rel := math.Abs(c[0]-c[1]) / math.Max(math.Abs(c[1]), 1e-300)
				worst = max(worst, rel)
				if rel > 1e-9 {
					t.Errorf("%s step %d (%d replicas): client %v, offline goodput.NoiseScale %v (relative %.2g)", filepath.Base(d), s.Step, s.World, c[0], c[1], rel)
				}
			}
		}
		if updates > 0 {
			kind := "differenced (1 replica)"
			if steps[0].World > 1 {
				kind = "DDP (several replicas)"
			}
			checked[kind] += updates
		}
	}
	if len(checked) < 2 {
		t.Errorf("offline check covered only %v; want both the differenced and the DDP estimator", checked)
	}
	t.Logf("gradient noise: client vs goodput.NoiseScale offline, %v steps, worst relative difference %.2g", checked, worst)
}

func readSaved(path string) ([]savedStep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []savedStep
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s savedStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func readF64(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%s: %d bytes", path, len(b))
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}

func sqNorm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}

// checkPrediction compares the step time that m (fitted before the job
// ran on 2 replicas) predicts for each measured 2-replica configuration
// with the measured mean, and logs the figures. The one reported isolates the world
// size: of the configurations with at least 20 steps, the one whose
// per-GPU batch is nearest one measured on 1 replica (then the one with
// more steps); the others extrapolate in the per-GPU batch as well and are
// logged.
func checkPrediction(t *testing.T, m goodput.Model, st *report.State) {
	t.Helper()
	stepTime := func(c report.Measured) float64 {
		s := c.OptimSum / float64(c.OptimCount)
		if c.AccumCount > 0 {
			s += float64(c.Accum) * c.AccumSum / float64(c.AccumCount)
		}
		return s
	}
	var seen []int
	for _, c := range st.Configs {
		if c.Replicas == 1 && c.OptimCount > 0 {
			seen = append(seen, c.Local)
			t.Logf("1 replica, local %d, accum %d: %d steps, measured %.2f ms", c.Local, c.Accum, c.OptimCount, 1e3*stepTime(c))
		}
	}
	distance := func(local int) int {
		d := math.MaxInt
		for _, l := range seen {
			d = min(d, max(l-local, local-l))
		}
		return d
	}
	var pick *report.Measured
	for i, c := range st.Configs {
		if c.Replicas != 2 || c.OptimCount == 0 {
			continue
		}
		measured, pred := stepTime(c), m.StepSeconds(c.Nodes, c.Replicas, c.Local, c.Accum)
		t.Logf("2 replicas, local %d, accum %d: %d steps, measured %.2f ms, predicted from 1 replica %.2f ms (%+.0f%%)",
			c.Local, c.Accum, c.OptimCount, 1e3*measured, 1e3*pred, 100*(pred/measured-1))
		if c.OptimCount < 20 {
			continue
		}
		if pick == nil || distance(c.Local) < distance(pick.Local) || (distance(c.Local) == distance(pick.Local) && c.OptimCount > pick.OptimCount) {
			pick = &st.Configs[i]
		}
	}
	if pick == nil {
		t.Fatal("no configuration measured on 2 replicas for 20 steps or more")
	}
	measured, pred := stepTime(*pick), m.StepSeconds(pick.Nodes, pick.Replicas, pick.Local, pick.Accum)
	rel := math.Abs(pred/measured - 1)
	// Issue 43 asks for ≤ 25%. A figure of wall-clock time on a shared
	// machine is reported, not asserted (two trainer processes beside the
	// control plane on 2 cores do not scale, and a model fitted on 1 replica
	// has seen no synchronisation): the log keeps it for the note.
	t.Logf("unseen world size: 2 replicas, local %d, accum %d: predicted %.2f ms, measured %.2f ms (%.0f%% off; issue 43's target: ≤ 25%%)",
		pick.Local, pick.Accum, 1e3*pred, 1e3*measured, 100*rel)
}
