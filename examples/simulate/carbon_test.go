package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCarbon: -carbon, -start, -slack and -sweep on a small workload:
// the JSON gains energy_kwh, carbon_kg and deadline_misses per policy,
// goodput-carbon meets every deadline, and the trade-off plot is written.
func TestRunCarbon(t *testing.T) {
	dir, wl := smallWorkload(t)
	var out, errb bytes.Buffer
	args := []string{"-workload", wl, "-cluster", "2x4:t4", "-policies", "goodput,goodput-carbon", "-carbon", "embedded",
		"-start", "2022-04-11", "-slack", "12h", "-sweep", "0.5,1", "-json", "-out", filepath.Join(dir, "out")}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Policies []map[string]any `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	names := map[string]map[string]any{}
	for _, p := range got.Policies {
		names[p["name"].(string)] = p
		for _, k := range []string{"energy_kwh", "carbon_kg", "deadline_misses"} {
			if _, ok := p[k]; !ok {
				t.Errorf("policy %v lacks %q", p["name"], k)
			}
		}
	}
	for _, n := range []string{"goodput", "goodput-carbon", "goodput-carbon@0.5", "goodput-carbon@1"} {
		if names[n] == nil {
			t.Errorf("no results for %s: %v", n, got.Policies)
		}
	}
	if p := names["goodput-carbon"]; p != nil {
		if p["deadline_misses"].(float64) != 0 || p["completed"].(float64) != 4 {
			t.Errorf("goodput-carbon: %v deadline misses, %v completed", p["deadline_misses"], p["completed"])
		}
		if !(p["carbon_kg"].(float64) > 0 && p["energy_kwh"].(float64) > 0) {
			t.Errorf("goodput-carbon: carbon %v kg, energy %v kWh", p["carbon_kg"], p["energy_kwh"])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "carbon-tradeoff.svg")); err != nil {
		t.Error(err)
	}
	// The table shows the new columns.
	out.Reset()
	args = []string{"-workload", wl, "-cluster", "2x4:t4", "-policies", "goodput", "-carbon", "embedded", "-out", ""}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "CO2 (kg)") || !strings.Contains(out.String(), "deadline misses") {
		t.Errorf("table lacks the carbon columns:\n%s", out.String())
	}
}

// TestRunSlackWithoutUnit: "-slack 24" says that a unit is missing, in
// one line, instead of the flag package's bare "parse error".
func TestRunSlackWithoutUnit(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-slack", "24"}, &out, &errb)
	msg := strings.TrimSpace(errb.String())
	if code != 2 || !strings.Contains(msg, "needs a unit") || !strings.Contains(msg, "24h") || strings.Contains(msg, "\n") {
		t.Errorf("exit %d, stderr %q", code, msg)
	}
}

func TestRunCarbonBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-slack", "-1h"},
		{"-carbon-weight", "0"},
		{"-carbon-weight", "1.5"},
		{"-pue", "0.5"},
		{"-start", "2022-01-01"},
		{"-sweep", "0.5"},
		{"-carbon", "no/such/file.csv"},
		{"-carbon", "embedded", "-start", "2021-01-01"},
		{"-carbon", "embedded", "-start", "yesterday"},
		{"-carbon", "embedded", "-sweep", "0,x"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
		if lines := strings.Count(strings.TrimSpace(errb.String()), "\n"); lines > 0 {
			t.Errorf("%v: %d-line message: %s", args, lines+1, errb.String())
		}
	}
}
