package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestRunProvision: -provision powers nodes down for goodput-carbon only:
// goodput's figures are those of the run without it, goodput-carbon meets
// every deadline and emits less than it does with every node on; -oracle
// adds a row with goodput-carbon's schedule and no more carbon.
func TestRunProvision(t *testing.T) {
	_, wl := smallWorkload(t)
	carbonOf := func(extra ...string) map[string]map[string]float64 {
		var out, errb bytes.Buffer
		args := append([]string{"-workload", wl, "-cluster", "2x4:t4", "-policies", "goodput,goodput-carbon", "-carbon", "embedded",
			"-start", "2022-04-11", "-slack", "12h", "-json"}, extra...)
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		var raw struct {
			Policies []map[string]any `json:"policies"`
		}
		if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		m := map[string]map[string]float64{}
		for _, p := range raw.Policies {
			m[p["name"].(string)] = map[string]float64{"carbon_kg": p["carbon_kg"].(float64), "deadline_misses": p["deadline_misses"].(float64), "avg_jct_s": p["avg_jct_s"].(float64)}
		}
		return m
	}
	off, on := carbonOf(), carbonOf("-provision")
	if on["goodput"]["carbon_kg"] != off["goodput"]["carbon_kg"] || on["goodput"]["avg_jct_s"] != off["goodput"]["avg_jct_s"] {
		t.Errorf("goodput changed under -provision: %v → %v", off["goodput"], on["goodput"])
	}
	if c := on["goodput-carbon"]; c["deadline_misses"] != 0 || !(c["carbon_kg"] < off["goodput-carbon"]["carbon_kg"]) {
		t.Errorf("goodput-carbon: %v with -provision, %v without", c, off["goodput-carbon"])
	}
	// -oracle adds its row: the same schedule, no more carbon.
	withOracle := carbonOf("-provision", "-oracle")
	if or, c := withOracle["oracle"], withOracle["goodput-carbon"]; or == nil || !(or["carbon_kg"] <= c["carbon_kg"]+1e-12) || or["avg_jct_s"] != c["avg_jct_s"] || or["deadline_misses"] != 0 {
		t.Errorf("oracle %v, goodput-carbon %v", or, c)
	}
	// -joint-bound adds its row: the same device time re-timed with no
	// idle device emits no more than the oracle's provisioning of the
	// schedule.
	bound := carbonOf("-provision", "-oracle", "-joint-bound")
	if b, or := bound["joint-bound"], bound["oracle"]; b == nil || !(b["carbon_kg"] > 0) || !(b["carbon_kg"] <= or["carbon_kg"]*(1+1e-9)) {
		t.Errorf("joint-bound %v, oracle %v", b, or)
	}
	// -learn-from adds the learned row: goodput-carbon provisioned with
	// thresholds fitted on another week, missing no deadline and leaving
	// the other rows alone.
	learned := carbonOf("-learn-from", "2022-01-10")
	if c := learned["learned"]; c == nil || c["deadline_misses"] != 0 || !(c["carbon_kg"] > 0) || learned["goodput"]["carbon_kg"] != off["goodput"]["carbon_kg"] {
		t.Errorf("learned %v, goodput %v", c, learned["goodput"])
	}
	// -learn-holdout: each start held out in turn, learned from the
	// other; the learned policy misses nothing and its carbon is reported
	// against the oracle of the held-out week.
	var out, errb bytes.Buffer
	args := []string{"-workload", wl, "-cluster", "2x4:t4", "-carbon", "embedded", "-slack", "12h", "-learn-holdout", "2022-01-10,2022-04-11", "-json"}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	var hold struct {
		Rows []holdoutWeek `json:"learned_holdout"`
	}
	if err := json.Unmarshal(out.Bytes(), &hold); err != nil {
		t.Fatal(err)
	}
	if len(hold.Rows) != 2 || hold.Rows[0].LearnedFrom[0] != "2022-04-11" || hold.Rows[1].LearnedFrom[0] != "2022-01-10" {
		t.Fatalf("%+v", hold.Rows)
	}
	for _, r := range hold.Rows {
		if r.LearnedMisses != 0 || !(r.OracleKg > 0) || r.LearnedOverOracle != r.LearnedKg/r.OracleKg-1 || r.Hold == "" {
			t.Errorf("%+v", r)
		}
	}
	for _, args := range [][]string{
		{"-joint-bound"},
		{"-learn-holdout", "2022-01-10,2022-04-11"},
		{"-learn-holdout", "2022-01-10", "-carbon", "embedded", "-slack", "24h"},
		{"-learn-from", "2022-01-10"},
		{"-learn-from", "2031-01-10", "-carbon", "embedded", "-slack", "24h"},
		{"-learn-from", "yesterday", "-carbon", "embedded", "-slack", "24h"},
		{"-oracle"},
		{"-oracle", "-carbon", "embedded", "-slack", "24h", "-cluster", "1x4:t4,1x8:a100"},
		{"-provision"},
		{"-provision", "-carbon", "embedded"},
		{"-provision", "-carbon", "embedded", "-slack", "24h", "-carbon-weight", "0.5"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), args[0]) {
			t.Errorf("%v: exit %d, want 2 naming %s (%s)", args, code, args[0], errb.String())
		}
	}
}
