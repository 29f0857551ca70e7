package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/scheduler"
)

// TestQuick runs the benchmark on small instances and checks the keys
// and the fitness ratio.
func TestQuick(t *testing.T) {
	figs, err := run(context.Background(), config{seed: 1, reps: 1, population: 20, generations: 10, quick: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := write(&buf, figs, true); err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	// -quick names its smaller instances (issue 17): no full-size key.
	for _, k := range []string{"round_goodput_160x64_ms", "round_goodput_2000x8192_ms", "maxmin_2048x4_ms", "maxmin_10000x4_ms"} {
		if _, ok := m[k]; ok {
			t.Errorf("-quick reports the full-size key %s", k)
		}
	}
	for _, k := range []string{"goodput_fit_us", "goodput_optimize_ns", "placement_gangs_per_s", "round_goodput_20x16_ms",
		"round_goodput_100x128_ms", "goodput_vs_reference_fitness", "goodput_vs_reference_time",
		"maxmin_256x4_ms", "maxmin_512x4_ms", "autoscale_1000_services_ms", "provision_1000_nodes_ms", "place_gang512_10k_nodes_p99_ms", "network_top1_gain_points"} {
		if v, ok := m[k]; !ok || v <= 0 {
			t.Errorf("%s = %v, %v", k, v, ok)
		}
	}
	if g, ok := m["maxmin_gap"]; !ok || g < 0 || g > 0.005 {
		t.Errorf("maxmin_gap = %v, %v; want within [0, 0.005]", g, ok)
	}
	if m["goodput_vs_reference_fitness"] < 1 {
		t.Errorf("fast policy below the reference: %v", m["goodput_vs_reference_fitness"])
	}
}

// BenchmarkRound2000x8192 is one Pollux-policy round on the large instance
// with goodput speedup curves, timed as the program times it: each on a
// fresh Scheduler that has only indexed the cluster (see after), since
// one that ran this input before would answer from its evaluations.
func BenchmarkRound2000x8192(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 11))
	in, err := instance(rng, shape{groups: []group{{256, 8, "a100"}, {256, 8, "v100"}, {512, 4, "t4"}, {128, 16, "h100"}}, jobs: 2000})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// A warm-up round, as the program runs before its timed ones.
	s, err := after(ctx, scheduler.Config{}, in, nil)
	if err == nil {
		_, err = s.Schedule(ctx, in)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s, err := after(ctx, scheduler.Config{}, in, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Schedule(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFlags: bad numbers are usage errors, -h says what the program does.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-population", "1000000000"}, {"-population", "1"}, {"-reps", "0"}, {"-nope"}, {"extra"},
		{"-clock", "sundial"}, {"-budget", "-1s"}} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	var buf bytes.Buffer
	if _, err := parse([]string{"-h"}, &buf); !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(buf.String(), "usage: benchmark [flags]\n\nbenchmark measures") {
		t.Errorf("-h: %v\n%s", err, buf.String())
	}
}

// TestPlanetFlag: the planet-scale part is on by default and -planet=false
// turns it off; -budget and -clock are read.
func TestPlanetFlag(t *testing.T) {
	cfg, err := parse(nil, io.Discard)
	if err != nil || !cfg.planet || cfg.budget != time.Minute || cfg.cpu {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = parse([]string{"-planet=false", "-budget", "2s", "-clock", "wall"}, io.Discard)
	if err != nil || cfg.planet || cfg.budget != 2*time.Second {
		t.Errorf("-planet=false -budget 2s: %+v, %v", cfg, err)
	}
	if cfg, err := parse([]string{"-parallel"}, io.Discard); err != nil || !cfg.parallel || cfg.goodput().Policy != (scheduler.Pollux{Parallel: true}) {
		t.Errorf("-parallel: %+v, %v", cfg, err)
	}
	if cpuClockWorks() {
		if cfg, err := parse([]string{"-clock", "cpu"}, io.Discard); err != nil || !cfg.cpu {
			t.Errorf("-clock cpu: %+v, %v", cfg, err)
		}
	}
}

// TestQuickPlanet runs the planet-scale part on its -quick stand-ins and
// checks that every key is there under the small sizes' names.
func TestQuickPlanet(t *testing.T) {
	figs, err := run(context.Background(), config{seed: 1, reps: 1, population: 20, generations: 10, quick: true, planet: true, budget: time.Minute}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]float64)
	for _, f := range figs {
		if _, dup := m[f.key]; dup {
			t.Errorf("key %s twice", f.key)
		}
		m[f.key] = f.value
	}
	for _, k := range []string{"round_goodput_20000x100000_ms", "round_goodput_steady_20000x100000_ms", "round_goodput_50000x131072_ms",
		"round_goodput_65536x1_ms", "gavel_round_50000_ms", "rss_20000x100000_mib"} {
		if _, ok := m[k]; ok {
			t.Errorf("-quick reports the full-size key %s", k)
		}
	}
	for _, k := range []string{"round_goodput_40x64_ms", "round_goodput_200x256_ms", "round_goodput_steady_200x256_ms",
		"round_goodput_400x512_ms", "round_goodput_512x1_ms", "gavel_round_500_ms", "round_goodput_100x128_ms"} {
		if v, ok := m[k]; !ok || v <= 0 {
			t.Errorf("%s = %v, %v", k, v, ok)
		}
	}
	if k, ok := m["scaling_exponent"]; !ok || math.IsNaN(k) || math.IsInf(k, 0) {
		t.Errorf("scaling_exponent = %v, %v", k, ok)
	}
	if g, ok := m["gomaxprocs"]; !ok || g < 1 {
		t.Errorf("gomaxprocs = %v, %v", g, ok)
	}
}

// TestPlanetSizes: the full-size planet instances have the sizes their
// keys name.
func TestPlanetSizes(t *testing.T) {
	big := shape{groups: []group{{256, 8, "a100"}, {256, 8, "v100"}, {512, 4, "t4"}, {128, 16, "h100"}}, jobs: 2000}
	sz := planet(false, big)
	var ladder []string
	for _, sh := range append(sz.ladder, sz.generated, sz.largest) {
		ladder = append(ladder, sh.size())
		if len(sh.groups) != 4 {
			t.Errorf("%s: %d types, want 4", sh.name(), len(sh.groups))
		}
	}
	if got, want := strings.Join(ladder, " "), "2000x8192 10000x16384 20000x100000 50000x131072"; got != want {
		t.Errorf("ladder %s, want %s", got, want)
	}
	if sz.small40.size() != "40x64" || sz.wideNodes != 65536 || sz.gavelJobs != 50000 {
		t.Errorf("small end %s, wide %d nodes, gavel %d jobs", sz.small40.size(), sz.wideNodes, sz.gavelJobs)
	}
}

// TestSteadyInput: the steady round changes at most 5% of the jobs, keeps
// the other jobs' plan as Current and names no finished job there.
func TestSteadyInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	in, err := instance(rng, shape{groups: []group{{8, 4, "t4"}}, jobs: 100})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scheduler.New(scheduler.Config{})
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	next, err := steadyInput(rng, in, plan)
	if err != nil {
		t.Fatal(err)
	}
	old := make(map[string]bool)
	for _, j := range in.Jobs {
		old[j.ID] = true
	}
	seen, kept := make(map[string]bool), 0
	for _, j := range next.Jobs {
		if seen[j.ID] {
			t.Fatalf("job %s twice", j.ID)
		}
		seen[j.ID] = true
		if old[j.ID] {
			kept++
		}
	}
	if changed := (len(in.Jobs) - kept) + (len(next.Jobs) - kept); changed == 0 || changed*20 > len(in.Jobs) {
		t.Errorf("%d of %d jobs change; want 1..5%%", changed, len(in.Jobs))
	}
	if len(plan.Assignments()) == 0 {
		t.Fatal("empty plan")
	}
	want := 0
	for _, a := range plan.Assignments() {
		if seen[a.Job] {
			want++
		}
	}
	if len(next.Current) != want {
		t.Errorf("Current holds %d assignments, want the %d of live jobs", len(next.Current), want)
	}
	for _, a := range next.Current {
		if !seen[a.Job] {
			t.Errorf("Current names finished job %s", a.Job)
		}
	}
	if !next.Now.After(in.Now) {
		t.Errorf("Now %v not after %v", next.Now, in.Now)
	}
	if _, err := s.Schedule(context.Background(), next); err != nil {
		t.Error(err)
	}
}

// TestBudget: a warm-up round longer than the budget is reported as that
// one run; otherwise the median of the repetitions.
func TestBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	in, err := instance(rng, shape{groups: []group{{2, 4, "t4"}}, jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		budget    time.Duration
		wantReads int
	}{{time.Second / 2, 2}, {0, 2 + 2*3}, {time.Hour, 2 + 2*3}} {
		reads := 0
		clk := func() time.Duration { reads++; return time.Duration(reads) * time.Second } // each run "takes" 1 s
		ms, _, err := timeRoundBudget(context.Background(), clk, scheduler.Config{}, in, nil, 3, tc.budget, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if reads != tc.wantReads || ms != 1000 {
			t.Errorf("budget %v: %d clock reads, %v ms; want %d, 1000", tc.budget, reads, ms, tc.wantReads)
		}
	}
}

// TestSlope: the fitted exponent of an exact power law.
func TestSlope(t *testing.T) {
	var xs, ys []float64
	for _, n := range []float64{1e4, 3e4, 1.2e5, 1.8e5} {
		xs = append(xs, math.Log(n))
		ys = append(ys, math.Log(0.002*math.Pow(n, 1.33)))
	}
	if k := slope(xs, ys); math.Abs(k-1.33) > 1e-9 {
		t.Errorf("slope %v, want 1.33", k)
	}
	if k := slope([]float64{1, 1}, []float64{2, 3}); !math.IsNaN(k) {
		t.Errorf("slope of one x: %v, want NaN", k)
	}
}

// TestFigureMet reads the targets the table prints: "≤ X" and "≥ X" are
// met or missed, a figure without a target is neither.
func TestFigureMet(t *testing.T) {
	for _, tc := range []struct {
		value  float64
		target string
		want   string
	}{
		{4.9, "≤ 5", "met"},
		{5, "≤ 5", "met"},
		{5.1, "≤ 5", "missed"},
		{1, "≥ 1 on every instance", "met"},
		{0.99, "≥ 1 on every instance", "missed"},
		{1 - 1e-12, "≥ 1 on every instance", "met"},
		{3, "", ""},
		{3, "fast", ""},
	} {
		if got := (figure{value: tc.value, target: tc.target}).met(); got != tc.want {
			t.Errorf("%v against %q: %q, want %q", tc.value, tc.target, got, tc.want)
		}
	}
	var b strings.Builder
	if err := write(&b, []figure{{"k_ms", 600, "ms", "≤ 500"}}, false); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); !strings.HasSuffix(strings.TrimSpace(lines[0]), "met") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "missed") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestNetworkFigure: the telemetry model beats the resource-only score
// by at least 30 points, and the ground truth as predictor is always
// right (the harness compares what it claims to).
func TestNetworkFigure(t *testing.T) {
	gain, model, resource, err := networkFigure(rand.New(rand.NewPCG(1, 11)), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if gain < 30 || model <= resource {
		t.Errorf("gain %.1f points (model %.3f, resource %.3f), want ≥ 30", gain, model, resource)
	}
	if _, perfect, _, err := networkFigure(rand.New(rand.NewPCG(1, 11)), true, true); err != nil || perfect != 1 {
		t.Errorf("perfect predictor top-1 %v (%v), want 1", perfect, err)
	}
}

// TestQuickFleet runs the fleet part on its -quick stand-in and checks
// its keys; the full-size fleet has the sizes the issue names.
func TestQuickFleet(t *testing.T) {
	var figs []figure
	add := func(key string, v float64, unit, target string) { figs = append(figs, figure{key, v, unit, target}) }
	if err := fleetFigures(context.Background(), config{seed: 1, reps: 1, quick: true, fleet: true, budget: time.Minute}, io.Discard, add); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]float64)
	for _, f := range figs {
		m[f.key] = f.value
	}
	for _, k := range []string{"fleet_overhead_cpu_ratio", "fleet_round_100k_wall_ratio", "fleet_route_5x64_ms", "fleet_round_5x64_ms", "fleet_slowest_cluster_round_5x64_ms"} {
		if v, ok := m[k]; !ok || !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, %v", k, v, ok)
		}
	}
	if m["fleet_gomaxprocs"] != 5 {
		t.Errorf("fleet_gomaxprocs = %v, want 5", m["fleet_gomaxprocs"])
	}
	sh, k := fleetShape(false)
	if k*sh.devices() != 100000 || sh.jobs != 20000 {
		t.Errorf("full fleet: %d clusters × %d devices, %d jobs; want 5 × 20,000 and 20,000", k, sh.devices(), sh.jobs)
	}
	if cfg, err := parse([]string{"-fleet=false"}, io.Discard); err != nil || cfg.fleet {
		t.Errorf("-fleet=false: %+v, %v", cfg, err)
	}
}
