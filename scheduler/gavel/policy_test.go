package gavel

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustCluster(t testing.TB, spec string) accel.Cluster {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tableFunc returns a ThroughputFunc over a fixed map job → type → rate.
func tableFunc(m map[string]map[accel.TypeKey]float64) ThroughputFunc {
	return func(job *scheduler.Job, typ accel.TypeKey, nodes, count int) float64 {
		return m[job.ID][typ]
	}
}

// checkTargets verifies per-type capacity, one target per job, gangs whole.
func checkTargets(t *testing.T, c accel.Cluster, jobs []scheduler.Job, tg []scheduler.Target) {
	t.Helper()
	if len(tg) != len(jobs) {
		t.Fatalf("%d targets for %d jobs", len(tg), len(jobs))
	}
	use := map[accel.TypeKey]int{}
	for i, x := range tg {
		if x.Job != jobs[i].ID {
			t.Fatalf("target %d is for %q, want %q", i, x.Job, jobs[i].ID)
		}
		if x.Count > 0 {
			want := max(jobs[i].Requested, 1)
			if x.Count != want {
				t.Errorf("job %s gets %d devices, requested %d", x.Job, x.Count, want)
			}
			use[x.Type] += x.Count
		}
	}
	for typ, u := range use {
		if u > c.Count(typ) {
			t.Errorf("type %s: %d devices used of %d", typ, u, c.Count(typ))
		}
	}
}

func TestPolicyRealisesShares(t *testing.T) {
	// Two jobs, one fast device and one slow: job a gains 10× from the
	// fast type, job b only 2×; max-min gives each a share of time.
	c := mustCluster(t, "1x1:v100,1x1:k80")
	fast, slow := accel.TypeKey("v100-16gb"), accel.TypeKey("k80")
	rates := map[string]map[accel.TypeKey]float64{
		"a": {fast: 10, slow: 1}, "b": {fast: 2, slow: 1}, "c": {fast: 3, slow: 1},
	}
	pol, err := NewPolicy(Config{Throughput: tableFunc(rates)})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []scheduler.Job{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	prob := Problem{Throughput: [][]float64{{10, 1}, {2, 1}, {3, 1}}, Devices: []int{1, 1}}
	sol, err := Solve(context.Background(), prob, MaxMinFairness{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[accel.TypeKey]float64{"a": {}, "b": {}, "c": {}}
	var cur []placement.Assignment
	const rounds = 600
	for r := range rounds {
		in := scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * 6 * time.Minute)}
		tg, err := allocate(pol, in)
		if err != nil {
			t.Fatal(err)
		}
		checkTargets(t, c, jobs, tg)
		res, err := packTargets(c, cur, tg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unplaced) > 0 {
			t.Fatalf("round %d: unplaced %v", r, res.Unplaced)
		}
		cur = res.Assignments
		for _, x := range tg {
			if x.Count > 0 {
				got[x.Job][x.Type] += 1.0 / rounds
			}
		}
	}
	// Each job's realised effective throughput matches what X promises.
	for m, id := range []string{"a", "b", "c"} {
		var due, real float64
		for j, typ := range []accel.TypeKey{fast, slow} {
			due += sol.X[m][j] * prob.Throughput[m][j]
			real += got[id][typ] * rates[id][typ]
		}
		if math.Abs(real-due) > 0.02*due {
			t.Errorf("job %s: realised throughput %.3f, due %.3f (%v)", id, real, due, got[id])
		}
	}
}

func TestPolicyKeepsStayingJobsAndPins(t *testing.T) {
	c := mustCluster(t, "2x4:v100,1x4:k80")
	pol, err := NewPolicy(Config{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []scheduler.Job{
		{ID: "big", Requested: 4},
		{ID: "pin", Requested: 2, NonPreemptible: true},
		{ID: "x", Requested: 1}, {ID: "y", Requested: 1},
	}
	cur := []placement.Assignment{{Job: "pin", Devices: []string{"k80-0/0", "k80-0/1"}}}
	var last []scheduler.Target
	for r := range 20 {
		in := scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * time.Minute)}
		tg, err := allocate(pol, in)
		if err != nil {
			t.Fatal(err)
		}
		checkTargets(t, c, jobs, tg)
		if tg[1].Reason != scheduler.ReasonPinned || tg[1].Type != "k80" || tg[1].Count != 2 {
			t.Fatalf("round %d: pinned job got %+v", r, tg[1])
		}
		if tg[0].Count == 4 && tg[0].MaxNodes != 1 {
			t.Errorf("gang of 4 on 4-device nodes: MaxNodes %d", tg[0].MaxNodes)
		}
		res, err := packTargets(c, cur, tg)
		if err != nil {
			t.Fatal(err)
		}
		cur = res.Assignments
		last = tg
	}
	// Everything fits (4+2+1+1 ≤ 12): every job runs, and stays put.
	for _, x := range last {
		if x.Count == 0 || (x.Reason != scheduler.ReasonUnchanged && x.Reason != scheduler.ReasonPinned) {
			t.Errorf("steady state: %+v", x)
		}
	}
}

func TestPolicyErrors(t *testing.T) {
	c := mustCluster(t, "1x2:v100")
	nan := func(job *scheduler.Job, typ accel.TypeKey, nodes, count int) float64 { return math.NaN() }
	pol, _ := NewPolicy(Config{Throughput: nan})
	_, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: []scheduler.Job{{ID: "a"}}, Now: t0})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("NaN throughput: %v", err)
	}
	pol, _ = NewPolicy(Config{})
	_, err = allocate(pol, scheduler.Input{Cluster: c, Jobs: []scheduler.Job{{ID: "a"}, {ID: "a"}}, Now: t0})
	if !errors.Is(err, scheduler.ErrInvalid) { // the Round refuses them before the policy runs
		t.Errorf("duplicate IDs: %v", err)
	}
	if _, err = allocate(pol, scheduler.Input{Cluster: c, Jobs: []scheduler.Job{{ID: "a"}}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	_, err = allocate(pol, scheduler.Input{Cluster: c, Jobs: []scheduler.Job{{ID: "a"}}, Now: t0.Add(-time.Second)})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("time backwards: %v", err)
	}
	if _, err := NewPolicy(Config{ResetInterval: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative reset interval: %v", err)
	}
	if _, err := NewPolicy(Config{Objective: MaxThroughputPerCost{}, CostPerHour: map[accel.TypeKey]float64{"v100-16gb": math.NaN()}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NaN cost: %v", err)
	}
	// A job that fits nowhere waits with a reason instead of failing the round.
	pol, _ = NewPolicy(Config{})
	tg, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: []scheduler.Job{{ID: "huge", Requested: 8}, {ID: "ok"}}, Now: t0})
	if err != nil || tg[0].Count != 0 || tg[0].Reason != scheduler.ReasonNoCapacity || tg[1].Count != 1 {
		t.Errorf("unrunnable job: %+v, %v", tg, err)
	}
}

func TestPolicyConcurrentUse(t *testing.T) {
	c := mustCluster(t, "2x2:v100,2x2:p100")
	pol, _ := NewPolicy(Config{})
	jobs := []scheduler.Job{{ID: "a"}, {ID: "b", Requested: 2}, {ID: "c"}, {ID: "d"}, {ID: "e"}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 5 {
				_, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs,
					Now: t0.Add(time.Duration(g*100+r) * time.Minute)})
				if err != nil && !errors.Is(err, ErrInvalid) { // time may go backwards between goroutines
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// simJob is one job of the JCT comparison.
// traceJobs turns trace jobs into scheduler jobs (their gang sizes) and
// the throughput function of their classes in tab.
func traceJobs(tab *Table, trace []*simJob) ([]scheduler.Job, ThroughputFunc) {
	classOf := make(map[string]string, len(trace))
	jobs := make([]scheduler.Job, 0, len(trace))
	for _, j := range trace {
		classOf[j.id] = j.class
		jobs = append(jobs, scheduler.Job{ID: j.id, Requested: j.scale})
	}
	return jobs, tab.Throughput(func(j *scheduler.Job) string { return classOf[j.ID] })
}

type simJob struct {
	id      string
	class   string
	scale   int
	arrival time.Duration
	steps   float64
	done    float64
	finish  time.Duration
}

// simStats summarises one simulated trace.
type simStats struct {
	avgJCT             time.Duration
	restarts, unplaced int
}

// simulate runs a Gavel-style trace through pol: 6-minute rounds, Packer
// placement, progress at the table's rate on the type run, 30 s lost per
// (re)start.
func simulate(t testing.TB, tab *Table, c accel.Cluster, jobs []*simJob, obj Objective) simStats {
	t.Helper()
	classOf := map[string]*simJob{}
	for _, j := range jobs {
		classOf[j.id] = j
	}
	pol, err := NewPolicy(Config{Objective: obj, StayBonus: *simBonus, Throughput: tab.Throughput(func(j *scheduler.Job) string { return classOf[j.ID].class })})
	if err != nil {
		t.Fatal(err)
	}
	const round = 6 * time.Minute
	var st simStats
	var cur []placement.Assignment
	curType := map[string]accel.TypeKey{}
	for now := time.Duration(0); now < 2000*time.Hour; now += round {
		var active []scheduler.Job
		left := 0
		for _, j := range jobs {
			if j.finish == 0 {
				left++
				if j.arrival <= now {
					active = append(active, scheduler.Job{ID: j.id, Requested: j.scale, Submitted: t0.Add(j.arrival)})
				}
			}
		}
		if left == 0 {
			break
		}
		tg, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: active, Current: cur, Now: t0.Add(now)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := packTargets(c, cur, tg)
		if err != nil {
			t.Fatal(err)
		}
		st.unplaced += len(res.Unplaced)
		cur = res.Assignments[:0:0]
		next := map[string]accel.TypeKey{}
		for _, a := range res.Assignments {
			j := classOf[a.Job]
			d, _ := c.Device(a.Devices[0])
			rate, _ := tab.Lookup(j.class, j.scale, d.Type)
			run := round.Seconds()
			if curType[a.Job] != d.Type {
				run -= 30
				st.restarts++
			}
			need := (j.steps - j.done) / rate
			if need <= run {
				j.finish = now + round - time.Duration((run-need)*float64(time.Second))
				continue
			}
			j.done += rate * run
			cur = append(cur, a)
			next[a.Job] = d.Type
		}
		curType = next
	}
	var sum time.Duration
	for _, j := range jobs {
		if j.finish == 0 {
			t.Fatalf("job %s never finished", j.id)
		}
		sum += j.finish - j.arrival
	}
	st.avgJCT = sum / time.Duration(len(jobs))
	return st
}

// gavelTrace draws n jobs from the published table: classes at random,
// scale 1 (70%), 2, 4 or 8, arriving as a Poisson process, each worth 0.5
// to 6 hours on a V100.
func gavelTrace(t testing.TB, tab *Table, n int, meanGap time.Duration, seed uint64) []*simJob {
	rng := rand.New(rand.NewPCG(seed, 1))
	classes := tab.Classes()
	var jobs []*simJob
	at := time.Duration(0)
	for len(jobs) < n {
		class := classes[rng.IntN(len(classes))]
		scale := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}[rng.IntN(10)]
		v, ok := tab.Lookup(class, scale, "v100-16gb")
		if !ok || v == 0 {
			continue
		}
		hours := 0.5 + 5.5*rng.Float64()
		jobs = append(jobs, &simJob{id: fmt.Sprintf("j%03d", len(jobs)), class: class, scale: scale,
			arrival: at, steps: v * hours * 3600})
		at += time.Duration(rng.ExpFloat64() * float64(meanGap))
	}
	return jobs
}

var simBonus = flag.Float64("gavel.staybonus", 0, "Config.StayBonus in TestHeterogeneityAwareBeatsBlind")

var simJobs = flag.Int("gavel.jobs", 80, "jobs per trace in TestHeterogeneityAwareBeatsBlind")

// TestHeterogeneityAwareBeatsBlind replays Gavel-style traces (jobs drawn
// from the published matrix, Poisson arrivals) on Gavel's physical-cluster
// mix through the Policy with heterogeneity-aware and -blind max-min
// fairness, and compares average JCT.
func TestHeterogeneityAwareBeatsBlind(t *testing.T) {
	if testing.Short() {
		t.Skip("trace simulation")
	}
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	// Gavel's physical cluster: 8 V100, 16 P100, 24 K80 (4 per node).
	c := mustCluster(t, "2x4:v100,4x4:p100,6x4:k80")
	var aware, blind []time.Duration
	seeds := uint64(3)
	if raceEnabled {
		seeds = 1
	}
	for seed := range seeds {
		a := simulate(t, tab, c, gavelTrace(t, tab, *simJobs, 15*time.Minute, seed), MaxMinFairness{})
		b := simulate(t, tab, c, gavelTrace(t, tab, *simJobs, 15*time.Minute, seed), MaxMinFairness{HeterogeneityBlind: true})
		aware, blind = append(aware, a.avgJCT), append(blind, b.avgJCT)
		t.Logf("seed %d, %d jobs: average JCT heterogeneity-aware %.2f h (%d restarts, %d unplaced), blind %.2f h (%d restarts, %d unplaced)",
			seed, *simJobs, a.avgJCT.Hours(), a.restarts, a.unplaced, b.avgJCT.Hours(), b.restarts, b.unplaced)
		if a.unplaced+b.unplaced > 0 {
			t.Errorf("the packer could not place %d targets", a.unplaced+b.unplaced)
		}
	}
	t.Logf("mean average JCT: aware %.2f h, blind %.2f h (%.2f×)", mean(aware).Hours(), mean(blind).Hours(), mean(blind).Hours()/mean(aware).Hours())
	if mean(aware) >= mean(blind) {
		t.Errorf("aware %.2f h is not better than blind %.2f h", mean(aware).Hours(), mean(blind).Hours())
	}
}

func mean(d []time.Duration) time.Duration {
	var s time.Duration
	for _, v := range d {
		s += v
	}
	return s / time.Duration(len(d))
}

func TestPolicyDeterministic(t *testing.T) {
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	c := mustCluster(t, "2x4:v100,2x4:p100,2x4:k80")
	run := func() []scheduler.Target {
		trace := gavelTrace(t, tab, 40, time.Minute, 5)
		jobs, throughput := traceJobs(tab, trace)
		pol, _ := NewPolicy(Config{Throughput: throughput})
		var cur []placement.Assignment
		var all []scheduler.Target
		for r := range 10 {
			tg, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			checkTargets(t, c, jobs, tg)
			res, _ := packTargets(c, cur, tg)
			if len(res.Unplaced) > 0 {
				t.Errorf("round %d: the packer could not place %v", r, res.Unplaced)
			}
			cur = res.Assignments
			all = append(all, tg...)
		}
		return all
	}
	a, b := run(), run()
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("target %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}

func TestPolicyObjectives(t *testing.T) {
	c := mustCluster(t, "1x2:v100,1x2:k80")
	rates := map[string]map[accel.TypeKey]float64{
		"a": {"v100-16gb": 10, "k80": 1}, "b": {"v100-16gb": 2, "k80": 1.5}, "c": {"v100-16gb": 3, "k80": 1}, "d": {"k80": 1},
	}
	jobs := []scheduler.Job{{ID: "a", RemainingWork: 3600}, {ID: "b"}, {ID: "c", Requested: 2, Submitted: t0.Add(-time.Hour)}, {ID: "d"}}
	for _, obj := range []Objective{MaxMinFairness{}, MaxMinFairness{HeterogeneityBlind: true}, MaxMinFairness{WaterFilling: true},
		MinMakespan{}, FinishTimeFairness{}, MaxThroughputPerCost{}} {
		pol, err := NewPolicy(Config{Objective: obj, Throughput: tableFunc(rates),
			CostPerHour: map[accel.TypeKey]float64{"v100-16gb": 3, "k80": 1},
			SLO:         func(j *scheduler.Job) time.Duration { return map[string]time.Duration{"d": 100 * time.Hour}[j.ID] }})
		if err != nil {
			t.Fatal(err)
		}
		var cur []placement.Assignment
		ran := 0
		for r := range 5 {
			tg, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * time.Minute)})
			if err != nil {
				t.Fatalf("%s: %v", obj.Name(), err)
			}
			checkTargets(t, c, jobs, tg)
			for _, x := range tg {
				ran += x.Count
				if x.Note == "" {
					t.Errorf("%s: target without a note: %+v", obj.Name(), x)
				}
			}
			res, _ := packTargets(c, cur, tg)
			cur = res.Assignments
		}
		if ran == 0 {
			t.Errorf("%s: nothing ran", obj.Name())
		}
	}
	pol, _ := NewPolicy(Config{Objective: MaxThroughputPerCost{}, Throughput: tableFunc(rates)})
	if _, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Now: t0}); !errors.Is(err, ErrInvalid) {
		t.Errorf("cost without prices: %v", err)
	}
}

// readGavelTrace parses Gavel's 10-column trace format.
func readGavelTrace(t testing.TB, path string) []*simJob {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []*simJob
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 10 {
			t.Fatalf("line %d: %d fields", i+1, len(f))
		}
		steps, err1 := strconv.ParseFloat(f[5], 64)
		scale, err2 := strconv.Atoi(f[6])
		at, err3 := strconv.ParseFloat(f[9], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		jobs = append(jobs, &simJob{id: fmt.Sprintf("j%03d", i), class: f[0], scale: scale,
			arrival: time.Duration(at * float64(time.Second)), steps: steps})
	}
	return jobs
}

// TestGavelPhysicalTrace replays Gavel's own LAS workload (96 jobs) on its
// physical cluster mix (8 V100, 16 P100, 24 K80), using the simulated
// throughputs of the published matrix.
func TestGavelPhysicalTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("trace simulation")
	}
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	c := mustCluster(t, "2x4:v100,4x4:p100,6x4:k80")
	res := map[string]simStats{}
	for _, obj := range []MaxMinFairness{{}, {HeterogeneityBlind: true}} {
		res[obj.Name()] = simulate(t, tab, c, readGavelTrace(t, "testdata/max_min_fairness.trace"), obj)
	}
	a, b := res["max-min"], res["max-min-blind"]
	t.Logf("Gavel physical LAS trace: average JCT heterogeneity-aware %.2f h (%d restarts), blind %.2f h (%d restarts), %.2f×",
		a.avgJCT.Hours(), a.restarts, b.avgJCT.Hours(), b.restarts, b.avgJCT.Hours()/a.avgJCT.Hours())
	if a.avgJCT >= b.avgJCT {
		t.Errorf("aware %.2f h is not better than blind %.2f h", a.avgJCT.Hours(), b.avgJCT.Hours())
	}
}

// TestThroughScheduler runs the Policy inside scheduler.Scheduler with its
// default placer (the placement package's round) on Gavel's trace, and
// checks that the consolidated gangs it asks for are placed.
func TestThroughScheduler(t *testing.T) {
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	c := mustCluster(t, "2x4:v100,4x4:p100,6x4:k80")
	trace := readGavelTrace(t, "testdata/max_min_fairness.trace")
	jobs, throughput := traceJobs(tab, trace[:60])
	pol, err := NewPolicy(Config{Throughput: throughput})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(scheduler.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	var cur []placement.Assignment
	unplaced, running := 0, 0
	for r := range 30 {
		plan, err := s.Schedule(context.Background(), scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * 6 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range plan.Decisions {
			if d.Reason == scheduler.ReasonUnplaceable {
				unplaced++
				t.Logf("round %d: %s: %s", r, d.Job, d.Message)
			}
			if d.To > 0 {
				running += d.To
			}
		}
		cur = plan.Assignments()
	}
	// The Policy replays its choice the way placement.Packer places; the
	// placement package's round may fragment differently, rarely.
	t.Logf("30 rounds: %d device-rounds used of %d, %d unplaceable decisions of %d", running, 30*48, unplaced, 30*len(jobs))
	if unplaced > 30*len(jobs)/100 {
		t.Errorf("%d targets could not be placed", unplaced)
	}
}

// allocate calls pol on its own, on the Round a Scheduler would build.
func allocate(pol scheduler.Policy, in scheduler.Input) ([]scheduler.Target, error) {
	r, err := scheduler.NewRound(in)
	if err != nil {
		return nil, err
	}
	return pol.Allocate(context.Background(), r)
}

// pack realises targets with placement.Packer, as a host would.
func packTargets(c accel.Cluster, cur []placement.Assignment, tg []scheduler.Target) (placement.PlaceResult, error) {
	ix, err := placement.NewIndex(c)
	if err != nil {
		return placement.PlaceResult{}, err
	}
	var pt []placement.Target
	for _, t := range tg {
		if t.Count > 0 {
			pt = append(pt, placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes})
		}
	}
	return placement.Packer{}.Place(context.Background(), placement.PlaceInput{Cluster: ix, Current: cur, Targets: pt})
}
