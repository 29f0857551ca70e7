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

// smallWorkload writes a four-job workload CSV into a temporary directory
// and returns the directory and the file.
func smallWorkload(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "small.csv")
	data := "name,time,application,num_replicas,batch_size\n" +
		"cifar10-0,0,cifar10,2,256\nncf-1,30,ncf,1,32768\nbert-2,60,bert,2,24\ncifar10-3,90,cifar10,1,128\n"
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func TestRunJSON(t *testing.T) {
	dir, wl := smallWorkload(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-workload", wl, "-cluster", "2x4:t4", "-policies", "goodput,tiresias,optimus,fifo,gavel,gavel-blind,goodput-blind", "-json", "-out", filepath.Join(dir, "out")}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Policies []map[string]any `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got.Policies) != 7 {
		t.Fatalf("%d policies", len(got.Policies))
	}
	for _, p := range got.Policies {
		for _, k := range []string{"name", "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "gpu_hours", "jobs", "completed", "restarts"} {
			if _, ok := p[k]; !ok {
				t.Errorf("policy %v lacks %q", p["name"], k)
			}
		}
		if p["completed"].(float64) != 4 {
			t.Errorf("%v completed %v of 4", p["name"], p["completed"])
		}
		for _, k := range []string{"energy_kwh", "carbon_kg", "deadline_misses"} {
			if _, ok := p[k]; ok {
				t.Errorf("policy %v has %q without -carbon", p["name"], k)
			}
		}
	}
	for _, f := range []string{"jct-cdf.svg", "gpus-in-use.svg", "goodput-small.csv"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(errb.String(), "simulating 1 workload(s)") {
		t.Errorf("no progress on stderr: %q", errb.String())
	}
}

func TestRunBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-policies", "nope"},
		{"-cluster", "banana"},
		{"-workload", "no/such/thing"},
		{"-interval", "10ms"},
		{"-interference", "1.5"},
		{"-explore", "0"},
		{"-profiles", "no/such/dir"},
		{"extra"},
		{"-seed", "x"},
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

// TestRunOneJobPlots checks that the plots are written when every job has
// the same JCT (a log axis needs a range).
func TestRunOneJobPlots(t *testing.T) {
	dir := t.TempDir()
	wl := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(wl, []byte("name,time,application,num_replicas,batch_size\nncf-0,0,ncf,1,32768\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	outDir := filepath.Join(dir, "out")
	if code := run(context.Background(), []string{"-workload", wl, "-cluster", "1x4:t4", "-policies", "tiresias", "-out", outDir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"jct-cdf.svg", "gpus-in-use.svg"} {
		if _, err := os.Stat(filepath.Join(outDir, f)); err != nil {
			t.Error(err)
		}
	}
}

// Issue 17: a cluster no profile covers is refused up front, a partly
// covered one gets one line naming the idle types, -interval is bounded,
// -json writes no files unless -out is set, -h says what it does.
func TestFirstContact(t *testing.T) {
	dir := t.TempDir()
	wl := filepath.Join(dir, "one.csv")
	if err := os.WriteFile(wl, []byte("name,time,application,num_replicas,batch_size\nncf-0,0,ncf,1,32768\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-cluster", "4x4:a100"}, {"-interval", "10000h"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append(args, "-workload", wl, "-out", ""), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-cluster", "1x4:t4,1x8:a100", "-workload", wl, "-policies", "fifo", "-out", ""}, &out, &errb); code != 0 ||
		!strings.Contains(errb.String(), "no profile covers a100-40gb (8 devices)") {
		t.Errorf("mixed cluster: exit %d, stderr %q", code, errb.String())
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if code := run(context.Background(), []string{"-cluster", "1x4:t4", "-workload", wl, "-policies", "fifo", "-json"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("-json: exit %d", code)
	}
	if _, err := os.Stat("simulate-out"); err == nil {
		t.Error("-json wrote ./simulate-out")
	}
	errb.Reset()
	if code := run(context.Background(), []string{"-h"}, &out, &errb); code != 0 || !strings.HasPrefix(errb.String(), "usage: simulate [flags]\n\nsimulate replays") {
		t.Errorf("-h: exit %d\n%s", code, errb.String())
	}
}

// TestReadmePathsExistInAClone: the files README.md's commands name are in
// a clone (relative to the repository root, where the commands run) or
// fetched to /tmp by the commands it gives; none is on a developer's
// machine.
func TestReadmePathsExistInAClone(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	for _, private := range []string{"/work/", "/home/", "/Users/", "shared/data"} {
		if strings.Contains(text, private) {
			t.Errorf("README.md names %q, which a clone does not have", private)
		}
	}
	var commands strings.Builder // the indented lines: commands and their continuations
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "    ") {
			commands.WriteString(line + "\n")
		}
	}
	checked := 0
	for _, flagName := range []string{"-carbon", "-profiles", "-workload", "-philly", "-tenants", "-fleet"} {
		for _, rest := range strings.Split(commands.String(), " "+flagName+" ")[1:] {
			path := strings.Fields(rest)[0]
			switch {
			case path == "embedded" || path == "vc" || strings.HasPrefix(path, "workloads") || strings.HasPrefix(path, "/tmp/"):
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join("..", "..", path)); err != nil {
				t.Errorf("README.md's %s %s: %v", flagName, path, err)
			}
		}
	}
	if checked == 0 {
		t.Error("no repository path checked: the test no longer reads README.md's commands")
	}
}

// TestTopologyFile: -topology with a Slurm topology.conf compares the
// three topology placers per policy, each entry with stranded_gpus_avg
// and 0 required_violations.
func TestTopologyFile(t *testing.T) {
	dir, wl := smallWorkload(t)
	conf := filepath.Join(dir, "topology.conf")
	if err := os.WriteFile(conf, []byte("SwitchName=s0 Nodes=t4-[0-1]\nSwitchName=s1 Nodes=t4-[2-3]\nSwitchName=s2 Switches=s[0-1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-workload", wl, "-cluster", "4x2:t4", "-policies", "fifo", "-topology", conf, "-json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Policies []map[string]any `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var names []string
	for _, p := range got.Policies {
		names = append(names, p["name"].(string))
		if _, ok := p["stranded_gpus_avg"].(float64); !ok {
			t.Errorf("%v: no stranded_gpus_avg", p["name"])
		}
		if v, ok := p["required_violations"].(float64); !ok || v != 0 {
			t.Errorf("%v: required_violations %v", p["name"], p["required_violations"])
		}
		if p["completed"].(float64) != 4 {
			t.Errorf("%v completed %v of 4", p["name"], p["completed"])
		}
	}
	if strings.Join(names, ",") != "fifo/kueue-bestfit,fifo/kai-binpack,fifo/default" {
		t.Errorf("policies %v", names)
	}
	if code := run(context.Background(), []string{"-topology", filepath.Join(dir, "missing.conf"), "-json"}, &out, &errb); code != 2 {
		t.Errorf("missing topology file: exit %d", code)
	}
}
