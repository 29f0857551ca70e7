package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultsJSON(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plan.svg")
	var out bytes.Buffer
	if err := run([]string{"-json", "-verify", "-svg", svg}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agnostic_g", "suspend_resume_g", "static_g", "planner_g", "optimal_g", "savings_vs_agnostic"} {
		if _, ok := r[k].(float64); !ok {
			t.Fatalf("key %q missing or not a number in %s", k, out.String())
		}
	}
	p, a, o := r["planner_g"].(float64), r["agnostic_g"].(float64), r["optimal_g"].(float64)
	if !(p < a) || p > o*1.001 || o > p*(1+1e-9) {
		t.Fatalf("planner %v, agnostic %v, optimal %v", p, a, o)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("svg: %v", err)
	}
}

func TestText(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-svg", "", "-weeks", "2", "-work", "12h", "-deadline", "36h", "-error", "0.1"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "marginal planner") || !strings.Contains(out.String(), "2 weekly start(s)") || !strings.Contains(out.String(), "planner, noisy") {
		t.Fatal(out.String())
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-weeks", "0"},
		{"-basis", "mixed"},
		{"-error", "-1"},
		{"-work", "80h"},
		{"-intensity", "/does/not/exist"},
		{"-start", "yesterday"},
		{"-start", "2030-01-01T00:00:00Z"},
		{"-max", "9"},
		{"-start", "2022-12-30T00:00:00Z"},
		{"-min", "8"},
		{"extra"},
	} {
		err := run(append(args, "-svg", ""), io.Discard, io.Discard)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v is not a usage error", args, err)
		}
	}
}
