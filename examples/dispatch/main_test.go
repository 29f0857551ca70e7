package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler/dispatch"
)

func TestParseErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-workers", "1"},
		{"-tasks", "10"},
		{"-loads", "0.5,1.2"},
		{"-loads", "x"},
		{"-policies", "das,clone"},
		{"-service", "lognormal"},
		{"-choice", "random"},
		{"-faulty", "-arrivals", "10"},
		{"extra"},
		{"-nosuchflag"},
	} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	o, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if o.workers != 16 || len(o.loads) != 8 || len(o.policies) != 5 || len(o.services) != 2 {
		t.Fatalf("defaults %+v", o)
	}
}

// TestClaims checks the numbers on a smaller run than the default
// (20,000 measured tasks per point; the default run shows the same).
func TestClaims(t *testing.T) {
	p99 := func(pol dispatch.Policy, load float64) float64 {
		r, err := Simulate(SimConfig{Workers: 16, Load: load, Policy: pol, Service: stragglers(), Tasks: 20000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r.P99Ms
	}
	none30, das30 := p99(dispatch.PolicyNone, 0.3), p99(dispatch.PolicyDAS, 0.3)
	if das30 > 0.6*none30 {
		t.Errorf("30%% load: DAS p99 %.2f ms > 0.6 × none %.2f ms", das30, none30)
	}
	none90, das90, naive90 := p99(dispatch.PolicyNone, 0.9), p99(dispatch.PolicyDAS, 0.9), p99(dispatch.PolicyNaive, 0.9)
	if das90 > 1.05*none90 {
		t.Errorf("90%% load: DAS p99 %.2f ms > 1.05 × none %.2f ms", das90, none90)
	}
	if naive90 <= none90 {
		t.Errorf("90%% load: naive p99 %.2f ms should be worse than none %.2f ms", naive90, none90)
	}
	t.Logf("p99 ms: 30%% none %.2f das %.2f; 90%% none %.2f das %.2f naive %.2f", none30, das30, none90, das90, naive90)
}

func TestDeterministic(t *testing.T) {
	for _, pol := range dispatch.Policies() {
		cfg := SimConfig{Workers: 4, Load: 0.7, Policy: pol, Service: pareto(), Tasks: 2000, Seed: 3, Choice: dispatch.ChoicePowerOfTwo}
		a, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Simulate(cfg)
		if a != b {
			t.Fatalf("%s: %+v != %+v", pol, a, b)
		}
	}
}

func TestRunJSONAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "p99.svg")
	o, err := parse([]string{"-json", "-tasks", "1000", "-loads", "0.3,0.9", "-workers", "4", "-svg", svg}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run(o, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "dispatch: wrote "+svg) {
		t.Errorf("stderr does not say where the SVG went: %q", errb.String())
	}
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 2*2*5 {
		t.Fatalf("%d results", len(doc.Results))
	}
	for _, k := range []string{"policy", "service", "load", "p50_ms", "p99_ms", "p999_ms"} {
		if _, ok := doc.Results[0][k]; !ok {
			t.Fatalf("result lacks %q: %v", k, doc.Results[0])
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<svg") {
		t.Fatal("not an SVG")
	}
	// The table form.
	o.json = false
	o.svg = ""
	out.Reset()
	if err := run(o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "p99/none") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// FuzzParse: any flag values either parse into valid options or fail with
// an error; never a panic, never an out-of-range load.
func FuzzParse(f *testing.F) {
	f.Add("0.1,0.5", "das,none", "stragglers", "least-loaded")
	f.Add("1", "clone", "x", "y")
	f.Add("NaN,-0", "", ",", "round-robin")
	f.Fuzz(func(t *testing.T, loads, pols, svc, choice string) {
		o, err := parse([]string{"-loads", loads, "-policies", pols, "-service", svc, "-choice", choice}, io.Discard)
		if err != nil {
			return
		}
		for _, l := range o.loads {
			if !(l > 0 && l < 1) {
				t.Fatalf("load %v accepted", l)
			}
		}
		if len(o.loads) == 0 || len(o.policies) == 0 || len(o.services) == 0 {
			t.Fatalf("empty option list accepted: %+v", o)
		}
	})
}

// Issue 17: -json writes no SVG unless asked, progress has no \r when
// stderr is not a terminal, -h says what the program does.
func TestFirstContact(t *testing.T) {
	o, err := parse([]string{"-json", "-tasks", "1000", "-loads", "0.5", "-policies", "none,das", "-service", "stragglers"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.svg != "" {
		t.Errorf("-json: svg %q, want none", o.svg)
	}
	if o, _ := parse([]string{"-json", "-svg", "x.svg"}, io.Discard); o.svg != "x.svg" {
		t.Errorf("-json -svg x.svg: svg %q", o.svg)
	}
	var stderr bytes.Buffer
	if err := run(o, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "\r") || !strings.Contains(stderr.String(), "stragglers") {
		t.Errorf("progress to a non-terminal: %q", stderr.String())
	}
	var help bytes.Buffer
	parse([]string{"-h"}, &help)
	if !strings.HasPrefix(help.String(), "usage: dispatch [flags]\n\ndispatch simulates") {
		t.Errorf("-h header:\n%s", help.String())
	}
}

// TestFaultyClaims checks issue 52's numbers on 100,000 arrivals per point
// (the default run has 10⁶). At load 0.8 scan-all and scan-none are over
// capacity (the stability condition's load exceeds 1) and their queues grow
// at the fluid-limit rate, 1 − 1/load tasks per arrival, an oracle outside
// the simulation; the robust rule's load is below 1 and its queue shows no
// trend. At load 0.3 the robust rule scans only the risky tasks.
func TestFaultyClaims(t *testing.T) {
	sim := func(p dispatch.ScanPolicy, load float64) FaultyResult {
		r, err := SimulateFaulty(FaultyConfig{Workers: 16, Load: load, Scan: p, Arrivals: 100000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	robust := sim(dispatch.ScanRobust, 0.8)
	if robust.PredictedLoad >= 1 || math.Abs(robust.QueueSlope) > 1000 {
		t.Errorf("robust at 0.8: predicted load %.3f, slope %.0f tasks per 10⁶ arrivals", robust.PredictedLoad, robust.QueueSlope)
	}
	for _, p := range []dispatch.ScanPolicy{dispatch.ScanAll, dispatch.ScanNone} {
		r := sim(p, 0.8)
		fluid := (1 - 1/r.PredictedLoad) * 1e6
		if r.PredictedLoad <= 1 || math.Abs(r.QueueSlope-fluid) > 0.05*fluid {
			t.Errorf("%s at 0.8: predicted load %.3f, slope %.0f, fluid limit %.0f", p, r.PredictedLoad, r.QueueSlope, fluid)
		}
		t.Logf("%s at 0.8: slope %.0f (fluid limit %.0f)", p, r.QueueSlope, fluid)
	}
	light, all := sim(dispatch.ScanRobust, 0.3), sim(dispatch.ScanAll, 0.3)
	meanRisk := faultyRiskyFrac*faultyRiskyP + (1-faultyRiskyFrac)*faultySafeP
	if light.ScansPerBadCaught == nil || *light.ScansPerBadCaught > 1.1/faultyRiskyP {
		t.Errorf("robust at 0.3: scans per bad caught %v, want about 1/%.2f", light.ScansPerBadCaught, faultyRiskyP)
	}
	if all.ScansPerBadCaught == nil || math.Abs(*all.ScansPerBadCaught-1/meanRisk) > 0.1/meanRisk {
		t.Errorf("scan-all at 0.3: scans per bad caught %v, want about %.2f", all.ScansPerBadCaught, 1/meanRisk)
	}
	if none := sim(dispatch.ScanNone, 0.3); none.ScansPerBadCaught != nil || none.Scans != 0 {
		t.Errorf("scan-none scanned: %+v", none)
	}
	t.Logf("0.8: robust slope %.0f, predicted %.3f; 0.3: scans per bad caught robust %.2f, scan-all %.2f",
		robust.QueueSlope, robust.PredictedLoad, *light.ScansPerBadCaught, *all.ScansPerBadCaught)
}

func TestFaultyJSONDeterministic(t *testing.T) {
	cfg := FaultyConfig{Workers: 4, Load: 0.6, Scan: dispatch.ScanRobust, Choice: dispatch.ChoicePowerOfTwo, Arrivals: 5000, Seed: 2, Samples: 50}
	a, err := SimulateFaulty(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := SimulateFaulty(cfg); !reflect.DeepEqual(a, b) {
		t.Fatal("two runs differ")
	}
	svg := filepath.Join(t.TempDir(), "faulty.svg")
	o, err := parse([]string{"-faulty", "-json", "-arrivals", "2000", "-loads", "0.5", "-workers", "4", "-svg", svg}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Faulty []map[string]any `json:"faulty"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range doc.Faulty {
		names = append(names, r["policy"].(string))
		for _, k := range []string{"queue_slope", "scans_per_bad_caught"} {
			if _, ok := r[k]; !ok {
				t.Fatalf("result lacks %q: %v", k, r)
			}
		}
	}
	if !reflect.DeepEqual(names, []string{"robust", "scan-all", "scan-none"}) {
		t.Fatalf("policies %q", names)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "scan-none") {
		t.Fatalf("svg: %v", err)
	}
	if o, _ := parse([]string{"-faulty"}, io.Discard); o.svg != "dispatch_faulty.svg" || len(o.loads) != 2 {
		t.Fatalf("-faulty defaults: svg %q, loads %v", o.svg, o.loads)
	}
}
