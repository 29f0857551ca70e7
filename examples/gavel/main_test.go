package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler/gavel"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestNoArguments(t *testing.T) {
	code, out, errOut := runCmd(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"max-min: objective", "resnet18-x4", "devices used"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestEveryObjectiveJSON runs each objective on the embedded problem and
// checks the JSON against the solver called directly and against the
// problem's constraints.
func TestEveryObjectiveJSON(t *testing.T) {
	var pf problemFile
	if err := json.Unmarshal(exampleProblem, &pf); err != nil {
		t.Fatal(err)
	}
	p, err := pf.problem()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range objectives {
		code, out, errOut := runCmd(t, "-objective", name, "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		var got output
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if len(got.Allocation) != len(pf.Jobs) || len(got.Types) != 3 {
			t.Fatalf("%s: %d rows, %d types", name, len(got.Allocation), len(got.Types))
		}
		if err := p.CheckAllocation(got.Allocation, 1e-9); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		obj, err := pf.objective(name, &p)
		if err != nil {
			t.Fatal(err)
		}
		sol, err := gavel.Solve(context.Background(), p, obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Objective != sol.Objective || got.Bound != sol.Bound {
			t.Errorf("%s: printed %v / %v, solver %v / %v", name, got.Objective, got.Bound, sol.Objective, sol.Bound)
		}
		if rel := math.Abs(got.Objective-got.Bound) / math.Abs(got.Bound); rel > 1e-6 {
			t.Errorf("%s: objective %v far from bound %v", name, got.Objective, got.Bound)
		}
	}
}

func TestProblemFile(t *testing.T) {
	code, out, errOut := runCmd(t, "-problem", "testdata/slo.json", "-objective", "cost", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got output
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	// The SLO asks "fast" for 36000 steps in 2 h: 5 steps/s.
	thr := 10*got.Allocation[0][0] + 2*got.Allocation[0][1]
	if thr < 5*(1-1e-9) {
		t.Errorf("fast gets %v steps/s, its SLO needs 5", thr)
	}
}

func TestInfeasibleSLOExits1(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "p.json")
	os.WriteFile(f, []byte(`{"types": ["a"], "capacity": [1], "jobs": [{"id": "j", "throughput": [1], "steps_left": 100, "slo_s": 10}]}`), 0o644)
	code, _, errOut := runCmd(t, "-problem", f, "-objective", "cost")
	if code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, args := range [][]string{
		{"-bogus"},
		{"extra"},
		{"-objective", "fastest"},
		{"-problem", filepath.Join(dir, "missing.json")},
		{"-problem", write("bad.json", `{"types": [`)},
		{"-problem", write("unknown.json", `{"types": ["a"], "capacity": [1], "jobs": [{"id": "j", "throughput": [1]}], "colour": 1}`)},
		{"-problem", write("short.json", `{"types": ["a", "b"], "capacity": [1, 1], "jobs": [{"id": "j", "throughput": [1]}]}`)},
		{"-problem", write("nan.json", `{"types": ["a"], "capacity": [1], "jobs": [{"id": "j", "throughput": [-1]}]}`)},
		{"-problem", write("dup.json", `{"types": ["a"], "capacity": [1], "jobs": [{"id": "j", "throughput": [1]}, {"id": "j", "throughput": [1]}]}`)},
		{"-problem", write("nodev.json", `{"types": ["a"], "capacity": [0], "jobs": [{"id": "j", "throughput": [1]}]}`)},
		{"-problem", "testdata/nosteps.json", "-objective", "ftf"},
		{"-problem", "testdata/nosteps.json", "-objective", "makespan"},
	} {
		code, out, errOut := runCmd(t, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "gavel: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "-h"); code != 0 || !strings.HasPrefix(errOut, "usage: gavel [flags]\n") {
		t.Errorf("-h: exit %d, stderr %q", code, errOut)
	}
}
