package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONKeys(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-json", "-small", "20", "-large", "2", "-env-workloads", "1", "-env-passes", "1"}, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	var got map[string]float64
	var flags struct {
		FIFOMatches *bool `json:"env_fifo_matches_sim"`
	}
	if err := json.Unmarshal(out.Bytes(), &flags); err != nil {
		t.Fatal(err)
	}
	if flags.FIFOMatches == nil || !*flags.FIFOMatches {
		t.Fatalf("env_fifo_matches_sim missing or false in %s", out.String())
	}
	var all map[string]any
	if err := json.Unmarshal(out.Bytes(), &all); err != nil {
		t.Fatal(err)
	}
	got = map[string]float64{}
	for k, v := range all {
		if f, ok := v.(float64); ok {
			got[k] = f
		}
	}
	if got["env_steps_per_s"] <= 0 || got["env_steps"] <= 0 {
		t.Fatalf("env_steps_per_s %v, env_steps %v", got["env_steps_per_s"], got["env_steps"])
	}
	for _, k := range []string{"gap_learned_8x4", "gap_rule_8x4", "win_rate_100x10", "gap_learned_optimal_end_8x4"} {
		v, ok := got[k]
		if !ok {
			t.Fatalf("key %s missing in %s", k, out.String())
		}
		if v < 0 || (k == "win_rate_100x10" && v > 1) {
			t.Fatalf("%s = %v out of range", k, v)
		}
	}
	if got["gap_learned_8x4"] >= got["gap_rule_8x4"] {
		t.Fatalf("learned %v not better than the rule %v", got["gap_learned_8x4"], got["gap_rule_8x4"])
	}
}

func TestBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-clock", "sundial"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "-clock") {
		t.Fatalf("-clock sundial: %v", err)
	}
	if err := run([]string{"-small", "0"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "-small") {
		t.Fatalf("got %v", err)
	}
	if err := run([]string{"-weights", "/nonexistent/w.json"}, &out, &errb); err == nil {
		t.Fatal("missing weights file accepted")
	}
}
