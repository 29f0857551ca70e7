package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONKeys(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-json", "-small", "20", "-large", "2"}, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	var got map[string]float64
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
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
	if err := run([]string{"-small", "0"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "-small") {
		t.Fatalf("got %v", err)
	}
	if err := run([]string{"-weights", "/nonexistent/w.json"}, &out, &errb); err == nil {
		t.Fatal("missing weights file accepted")
	}
}
