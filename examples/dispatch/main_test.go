package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
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
	var out bytes.Buffer
	if err := run(o, &out, io.Discard); err != nil {
		t.Fatal(err)
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
