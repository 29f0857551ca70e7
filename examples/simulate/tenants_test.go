package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/quota"
	"github.com/goodsched/goodsched/scheduler/sim"
)

func TestApportion(t *testing.T) {
	for _, tc := range []struct {
		devices int
		weights []float64
		want    []int
	}{
		// 1 each, then 7 by 5:3:2 = 3.5, 2.1, 1.4: floors 3, 2, 1 and the
		// last device to the largest remainder (0.5).
		{10, []float64{5, 3, 2}, []int{5, 3, 2}},
		// 1 each, then 4 in thirds: floors 1 each, the last to the first
		// of the tie.
		{7, []float64{1, 1, 1}, []int{3, 2, 2}},
		// Fewer devices than tenants: plain largest remainder, 1, 0.67,
		// 0.33 → 1, 1, 0.
		{2, []float64{3, 2, 1}, []int{1, 1, 0}},
		// Zero weights share equally.
		{10, []float64{0, 0}, []int{5, 5}},
		// 2,048 devices: 1 each, then 2,045 by 0.9 : 0.09 : 0.01 =
		// 1840.5, 184.05, 20.45: floors 1840, 184, 20 and the last to
		// 0.5.
		{2048, []float64{90, 9, 1}, []int{1842, 185, 21}},
		{0, []float64{1}, []int{0}},
		{5, nil, []int{}},
	} {
		got := apportion(tc.devices, tc.weights)
		if !slices.Equal(got, tc.want) {
			t.Errorf("apportion(%d, %v) = %v, want %v", tc.devices, tc.weights, got, tc.want)
		}
	}
}

// TestVCTenancy derives the quotas of -tenants vc by hand: 12 virtual
// clusters and jobs without one on 16 T4. vc01 has 1,200 GPU-s, vc02 …
// vc11 100 each, vc12 50 and the unnamed 50: vc12 and the unnamed go to
// "other" (100). 12 queues get 1 device each; the other 4 split
// 1200:100×11 → 2.09 for vc01, 0.17 for each of the rest: vc01 2 more,
// and the last 2 devices go to the largest remainders (0.17, a tie
// broken by weight, then order: vc02, vc03).
func TestVCTenancy(t *testing.T) {
	var jobs []sim.JobSpec
	add := func(vc string, gpuSeconds int) {
		jobs = append(jobs, sim.JobSpec{Name: fmt.Sprintf("j%d", len(jobs)), Queue: vc, Replicas: 2, TraceDuration: time.Duration(gpuSeconds/2) * time.Second})
	}
	add("vc01", 1200)
	for i := 2; i <= 11; i++ {
		add(fmt.Sprintf("vc%02d", i), 60)
		add(fmt.Sprintf("vc%02d", i), 40)
	}
	add("vc12", 50)
	add("", 50)
	c, err := accel.ParseSpec("2x8:t4")
	if err != nil {
		t.Fatal(err)
	}
	ten, err := vcTenancy(jobs, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"vc01": 3, "vc02": 2, "vc03": 2, "other": 1}
	for i := 4; i <= 11; i++ {
		want[fmt.Sprintf("vc%02d", i)] = 1
	}
	got := map[string]int{}
	for _, q := range ten.queues {
		if q.Parent != "" || q.Weight != 1 || len(q.Quotas) != 1 || q.Quotas[0].Type != "t4" || q.Quotas[0].BorrowingLimit != nil || q.Quotas[0].LendingLimit != nil {
			t.Errorf("queue %+v", q)
		}
		got[q.Name] = q.Quotas[0].Nominal
	}
	if !maps.Equal(got, want) {
		t.Fatalf("quotas %v, want %v", got, want)
	}
	if err := ten.assign(jobs); err != nil {
		t.Fatal(err)
	}
	if jobs[0].Queue != "vc01" || jobs[len(jobs)-2].Queue != "other" || jobs[len(jobs)-1].Queue != "other" {
		t.Errorf("assigned %q, %q, %q", jobs[0].Queue, jobs[len(jobs)-2].Queue, jobs[len(jobs)-1].Queue)
	}
	// Static partitions: no borrowing, no lending; the borrow tree is
	// left as it was.
	st := staticQueues(ten.queues)
	for _, q := range st {
		if b, l := q.Quotas[0].BorrowingLimit, q.Quotas[0].LendingLimit; b == nil || *b != 0 || l == nil || *l != 0 {
			t.Errorf("static %s: limits %v %v", q.Name, b, l)
		}
	}
	if ten.queues[0].Quotas[0].BorrowingLimit != nil {
		t.Error("staticQueues changed its input")
	}
	if _, err := vcTenancy([]sim.JobSpec{{Name: "a", Replicas: 1, TraceDuration: time.Minute}}, c); err == nil {
		t.Error("a workload without virtual clusters was accepted")
	}
}

func TestParseQuotasFile(t *testing.T) {
	c, err := accel.ParseSpec("4x4:t4")
	if err != nil {
		t.Fatal(err)
	}
	good := `{"queues": [
	  {"name": "research", "weight": 1},
	  {"name": "vision", "parent": "research", "weight": 2,
	   "quotas": [{"type": "t4", "nominal": 8, "borrowing_limit": 4, "lending_limit": 2}]},
	  {"name": "speech", "parent": "research", "quotas": [{"type": "t4", "nominal": 4}]},
	  {"name": "other", "quotas": [{"type": "t4", "nominal": 4}]}],
	 "tenants": {"ee9e8c": "vision"}, "default": "other"}`
	ten, err := parseQuotasFile([]byte(good), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ten.queues) != 4 || ten.queues[1].Weight != 2 || *ten.queues[1].Quotas[0].BorrowingLimit != 4 || *ten.queues[1].Quotas[0].LendingLimit != 2 || ten.queues[2].Quotas[0].BorrowingLimit != nil {
		t.Fatalf("queues %+v", ten.queues)
	}
	for in, want := range map[string]string{"ee9e8c": "vision", "speech": "speech", "research": "other", "zzz": "other"} {
		if got, err := ten.leaf(in); err != nil || got != want {
			t.Errorf("tenant %q → %q, %v; want %q", in, got, err, want)
		}
	}
	noDefault := strings.Replace(good, `, "default": "other"`, "", 1)
	if ten, err := parseQuotasFile([]byte(noDefault), c); err != nil {
		t.Fatal(err)
	} else if _, err := ten.leaf("zzz"); err == nil {
		t.Error("an unmapped tenant without a default was accepted")
	}
	for name, in := range map[string]string{
		"not JSON":        `{"queues": [`,
		"unknown field":   strings.Replace(good, `"default"`, `"defualt"`, 1),
		"no queues":       `{"queues": []}`,
		"cohort tenant":   strings.Replace(good, `{"ee9e8c": "vision"}`, `{"ee9e8c": "research"}`, 1),
		"unknown default": strings.Replace(good, `"default": "other"`, `"default": "nope"`, 1),
		"over cohort":     strings.Replace(good, `{"name": "research", "weight": 1}`, `{"name": "research", "quotas": [{"type": "t4", "nominal": 10}]}`, 1),
		"negative limit":  strings.Replace(good, `"lending_limit": 2`, `"lending_limit": -2`, 1),
		"unknown parent":  strings.Replace(good, `"parent": "research", "quotas"`, `"parent": "nope", "quotas"`, 1),
	} {
		if _, err := parseQuotasFile([]byte(in), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// phillyCSV is a tiny synthetic trace in the Philly layout: three
// virtual clusters, a dozen short jobs.
func phillyCSV(t *testing.T) string {
	var b strings.Builder
	b.WriteString("timestamp,duration,num_gpus,gpu_time,cluster\n")
	for i := range 12 {
		vc := []string{"vcA", "vcA", "vcB", "vcC"}[i%4]
		gpus := 1 + i%2
		fmt.Fprintf(&b, "2017-10-09 06:%02d:00,%d,%d,%d,%s\n", 2*i, 120+60*i, gpus, (120+60*i)*gpus, vc)
	}
	path := filepath.Join(t.TempDir(), "philly.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunTenantsJSON runs -tenants vc and checks the "tenancy" keys
// exactly, the modes' order and that every tenant is in each mode.
func TestRunTenantsJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-philly", phillyCSV(t), "-jobs", "12", "-cluster", "2x4:t4", "-tenants", "vc", "-json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"policies", "tenancy"}) {
		t.Fatalf("top-level keys %v", keys)
	}
	var pol []map[string]any
	if err := json.Unmarshal(got["policies"], &pol); err != nil || len(pol) != 1 || pol[0]["name"] != "goodput" {
		t.Fatalf("policies %s (%v)", got["policies"], err)
	}
	var modes []map[string]json.RawMessage
	if err := json.Unmarshal(got["tenancy"], &modes); err != nil {
		t.Fatal(err)
	}
	if len(modes) != 3 {
		t.Fatalf("%d modes", len(modes))
	}
	for i, m := range modes {
		if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, []string{"avg_jct_s", "mode", "rounds_below_guarantee", "tenants", "utilisation"}) {
			t.Errorf("mode %d keys %v", i, keys)
		}
		var name string
		_ = json.Unmarshal(m["mode"], &name)
		if name != tenancyModes[i] {
			t.Errorf("mode %d is %q, want %q", i, name, tenancyModes[i])
		}
		var u float64
		if err := json.Unmarshal(m["utilisation"], &u); err != nil || !(u > 0 && u <= 1) {
			t.Errorf("%s: utilisation %s", name, m["utilisation"])
		}
		var ts []map[string]any
		if err := json.Unmarshal(m["tenants"], &ts); err != nil || len(ts) != 3 {
			t.Fatalf("%s: tenants %s", name, m["tenants"])
		}
		for k, tn := range ts {
			if keys := slices.Sorted(maps.Keys(tn)); !slices.Equal(keys, []string{"avg_jct_s", "gpu_hours", "name", "queue_delay_s", "rounds_below_guarantee"}) {
				t.Errorf("%s: tenant keys %v", name, keys)
			}
			if want := []string{"vcA", "vcB", "vcC"}[k]; tn["name"] != want {
				t.Errorf("%s: tenant %d is %v, want %s", name, k, tn["name"], want)
			}
			if !(tn["avg_jct_s"].(float64) > 0) {
				t.Errorf("%s/%s: avg JCT %v", name, tn["name"], tn["avg_jct_s"])
			}
		}
	}
	// The table form prints the modes and the tenants.
	out.Reset()
	if code := run(context.Background(), []string{"-philly", phillyCSV(t), "-jobs", "12", "-cluster", "2x4:t4", "-tenants", "vc", "-out", ""}, &out, &errb); code != 0 {
		t.Fatalf("table: exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"tenancy", "static", "shared", "borrow", "vcA", "max reclaim rounds"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}

func TestRunTenantsBadInput(t *testing.T) {
	dir := t.TempDir()
	wl := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(wl, []byte("name,time,application,num_replicas,batch_size\nncf-0,0,ncf,1,32768\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"queues": [{"name": "a", "parent": "a"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	philly := phillyCSV(t)
	for _, args := range [][]string{
		{"-tenants", "vc", "-workload", wl},
		{"-tenants", "vc", "-philly", philly, "-policies", "goodput,tiresias"},
		{"-tenants", "vc", "-workload", "workloads"},
		{"-tenants", filepath.Join(dir, "missing.json"), "-philly", philly},
		{"-tenants", bad, "-philly", philly},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append(args, "-out", ""), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
		if lines := strings.Count(strings.TrimSpace(errb.String()), "\n"); lines > 1 {
			t.Errorf("%v: %d-line message: %s", args, lines+1, errb.String())
		}
	}
}

// TestTenancyModes checks the three configs built from the shared one.
func TestTenancyModes(t *testing.T) {
	ten := &tenancy{queues: []quota.Queue{{Name: "a", Quotas: []quota.Quota{{Type: "t4", Nominal: 2}}}}}
	base := sim.Config{Policy: scheduler.Pollux{}}
	cfgs, labels, err := ten.addModes([]sim.Config{base}, []string{"goodput/philly"}, registry()["goodput"])
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 3 || !slices.Equal(labels, []string{"goodput/philly", "goodput/philly/static", "goodput/philly/borrow"}) {
		t.Fatalf("%d configs, labels %v", len(cfgs), labels)
	}
	shared, static, borrow := cfgs[ten.at["shared"]], cfgs[ten.at["static"]], cfgs[ten.at["borrow"]]
	if !shared.IgnoreQueues || len(shared.Queues) != 1 || static.IgnoreQueues || borrow.IgnoreQueues {
		t.Errorf("IgnoreQueues: shared %v static %v borrow %v", shared.IgnoreQueues, static.IgnoreQueues, borrow.IgnoreQueues)
	}
	if q := static.Queues[0].Quotas[0]; q.BorrowingLimit == nil || *q.BorrowingLimit != 0 || q.LendingLimit == nil || *q.LendingLimit != 0 {
		t.Errorf("static quota %+v", q)
	}
	if q := borrow.Queues[0].Quotas[0]; q.BorrowingLimit != nil || q.LendingLimit != nil {
		t.Errorf("borrow quota %+v", q)
	}
}

func FuzzParseQuotasFile(f *testing.F) {
	c, err := accel.ParseSpec("2x4:t4")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(`{"queues": [{"name": "a", "quotas": [{"type": "t4", "nominal": 4}]}, {"name": "b", "quotas": [{"type": "t4", "nominal": 4}]}], "default": "a"}`)
	f.Add(`{"queues": [{"name": "r"}, {"name": "a", "parent": "r", "weight": 2, "quotas": [{"type": "t4", "nominal": 2, "borrowing_limit": 1, "lending_limit": 0}]}], "tenants": {"x": "a"}}`)
	f.Add(`{"queues": [{"name": "a", "parent": "a"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		ten, err := parseQuotasFile([]byte(in), c)
		if err != nil {
			return
		}
		if len(ten.queues) == 0 {
			t.Fatal("no queues accepted")
		}
		// Whatever it accepted, the scheduler accepts in every mode.
		for _, qs := range [][]quota.Queue{ten.queues, staticQueues(ten.queues)} {
			if err := checkQueues(qs, c); err != nil {
				t.Fatalf("accepted a tree the scheduler refuses: %v", err)
			}
		}
		if q, err := ten.leaf("x"); err == nil && q == "" {
			t.Fatal("empty leaf queue")
		}
	})
}
