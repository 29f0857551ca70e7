package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fleetTrace writes a synthetic Philly-layout trace: n jobs over a few
// hours from three virtual clusters, one of which submits most of them,
// with heavy-tailed durations (no real jobs: the Philly trace is not
// shipped).
func fleetTrace(t *testing.T, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(50, 50))
	var b strings.Builder
	b.WriteString("timestamp,duration,num_gpus,gpu_time,cluster\n")
	start := time.Date(2017, 10, 9, 6, 0, 0, 0, time.UTC)
	at := start
	for i := range n {
		at = at.Add(time.Duration(rng.IntN(240)) * time.Second)
		vc := []string{"busy", "busy", "busy", "quiet", "mid"}[rng.IntN(5)]
		gpus := []int{1, 1, 1, 2, 4, 8}[rng.IntN(6)]
		dur := 120 + int(600/(0.05+rng.Float64()))
		if i%50 == 0 {
			dur *= 10
		}
		fmt.Fprintf(&b, "%s,%d,%d,%d,%s\n", at.Format("2006-01-02 15:04:05"), dur, gpus, dur*gpus, vc)
	}
	path := filepath.Join(t.TempDir(), "philly.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const testFleet = `{"clusters": [
  {"name": "west", "region": "US-CAL-CISO", "cluster": "4x8:v100"},
  {"name": "east", "region": "US-NY-NYIS", "cluster": "4x4:p100"},
  {"name": "south", "region": "ES", "cluster": "2x4:k80"}
], "bandwidth_gbps": 10}`

// TestFleetJSON replays a synthetic trace across three unequal clusters
// and checks the "fleet" keys the issue names, that no job is lost, that
// the fleet beats staying where submitted, and that migrations are few
// and charged.
func TestFleetJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-fleet", writeFile(t, "fleet.json", testFleet), "-philly", fleetTrace(t, 300), "-jobs", "300", "-json"}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"avg_jct_s", "stay_avg_jct_s", "migrations_per_job"} {
		if _, ok := raw["fleet"][k]; !ok {
			t.Errorf("fleet has no %q", k)
		}
	}
	var got struct{ Fleet fleetResult }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	f := got.Fleet
	if f.Jobs != 300 || f.Completed != 300 || f.StayCompleted != 300 {
		t.Errorf("jobs %d, completed %d (staying %d): want all 300", f.Jobs, f.Completed, f.StayCompleted)
	}
	if !(f.AvgJCT > 0 && f.AvgJCT < f.StayAvgJCT) {
		t.Errorf("avg JCT %.0fs, staying %.0fs: want the fleet below", f.AvgJCT, f.StayAvgJCT)
	}
	if f.MigrationsPerJob > 1 || (f.Migrations > 0) != (f.MigrationCostS > 0) {
		t.Errorf("%d migrations (%.2f per job) costing %.0fs", f.Migrations, f.MigrationsPerJob, f.MigrationCostS)
	}
	var names []string
	sub := 0
	for _, c := range f.Clusters {
		names = append(names, c.Name)
		sub += c.Submitted
	}
	if !slices.Equal(names, []string{"west", "east", "south"}) || sub != 300 {
		t.Errorf("clusters %v with %d submitted jobs", names, sub)
	}
	// The same run gives the same JSON.
	var again bytes.Buffer
	if code := run(context.Background(), args, &again, &errb); code != 0 || again.String() != out.String() {
		t.Errorf("second run differs (exit %d)", code)
	}
}

// TestFleetBadInput: a bad fleet file is bad input (exit 2, one line).
func TestFleetBadInput(t *testing.T) {
	trace := fleetTrace(t, 20)
	for name, body := range map[string]string{
		"negative bandwidth": `{"clusters": [{"name": "a", "cluster": "1x4:t4"}], "bandwidth_gbps": -1}`,
		"no clusters":        `{"clusters": []}`,
		"bad spec":           `{"clusters": [{"name": "a", "cluster": "4:t4"}]}`,
		"unknown field":      `{"clusters": [{"name": "a", "cluster": "1x4:t4"}], "bandwidth": 3}`,
		"duplicate cluster":  `{"clusters": [{"name": "a", "cluster": "1x4:t4"}, {"name": "a", "cluster": "1x4:t4"}]}`,
		"negative link":      `{"clusters": [{"name": "a", "cluster": "1x4:t4"}, {"name": "b", "cluster": "1x4:t4"}], "links": [{"from": "a", "to": "b", "gbps": -2}]}`,
		"unknown link":       `{"clusters": [{"name": "a", "cluster": "1x4:t4"}], "links": [{"from": "a", "to": "z", "gbps": 2}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"-fleet", writeFile(t, "f.json", body), "-philly", trace, "-jobs", "20", "-json"}, &out, &errb)
			if code != 2 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
				t.Errorf("exit %d, stderr %q: want 2 and one line", code, errb.String())
			}
		})
	}
}

// TestFleetTiersJSON: -tiers adds "tiers" (premium, standard, basic,
// with the keys the issue names) and "baseline_standard_avg_jct_s"; no
// premium job is preempted or shrunk and no standard hour falls below
// its guarantee.
func TestFleetTiersJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-fleet", writeFile(t, "fleet.json", testFleet), "-philly", fleetTrace(t, 200), "-jobs", "200", "-json",
		"-tiers", "premium=0.2,standard=0.5,basic=0.3"}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var raw struct {
		Tiers    []map[string]json.RawMessage `json:"tiers"`
		Baseline *float64                     `json:"baseline_standard_avg_jct_s"`
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Baseline == nil || *raw.Baseline <= 0 {
		t.Errorf("baseline_standard_avg_jct_s = %v", raw.Baseline)
	}
	var names []string
	jobs := 0
	for _, tr := range raw.Tiers {
		for _, k := range []string{"tier", "preemptions", "shrinks", "hours_below_guarantee", "avg_jct_s"} {
			if _, ok := tr[k]; !ok {
				t.Errorf("tiers[] entry has no %q", k)
			}
		}
		var name string
		var n, pre, shr, below int
		json.Unmarshal(tr["tier"], &name)
		json.Unmarshal(tr["jobs"], &n)
		json.Unmarshal(tr["preemptions"], &pre)
		json.Unmarshal(tr["shrinks"], &shr)
		json.Unmarshal(tr["hours_below_guarantee"], &below)
		names = append(names, name)
		jobs += n
		if name == "premium" && (pre != 0 || shr != 0) {
			t.Errorf("premium: %d preemptions, %d shrinks", pre, shr)
		}
		if (name == "premium" || name == "standard") && below != 0 {
			t.Errorf("%s: %d hours below guarantee", name, below)
		}
	}
	if !slices.Equal(names, []string{"premium", "standard", "basic"}) || jobs != 200 {
		t.Errorf("tiers %v with %d jobs", names, jobs)
	}
	for _, bad := range []string{"gold=1", "premium=0.5,standard=0.2", "premium=x", "premium=0.5,premium=0.5"} {
		var o, e bytes.Buffer
		args := []string{"-fleet", writeFile(t, "fleet.json", testFleet), "-philly", fleetTrace(t, 20), "-jobs", "20", "-tiers", bad}
		if code := run(context.Background(), args, &o, &e); code != 2 {
			t.Errorf("-tiers %s: exit %d (%s), want 2", bad, code, e.String())
		}
	}
	var o, e bytes.Buffer
	if code := run(context.Background(), []string{"-tiers", "premium=1"}, &o, &e); code != 2 || !strings.Contains(e.String(), "-fleet") {
		t.Errorf("-tiers without -fleet: exit %d (%s), want 2", code, e.String())
	}
}
