package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPlacersAndVariability runs every policy with every placer on a
// varying cluster with an interference episode: names are POLICY/PLACER,
// in policy order, and every job completes.
func TestPlacersAndVariability(t *testing.T) {
	dir, wl := smallWorkload(t)
	eps := filepath.Join(dir, "slow.csv")
	if err := os.WriteFile(eps, []byte("node,start,end,factor\nt4-0,0,600,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-workload", wl, "-cluster", "2x4:t4", "-policies", "fifo,goodput",
		"-placers", "packed-sticky,pm-first,pal,default", "-variability", "testdata/variability-32gpu.csv",
		"-locality-penalty", "1.7", "-slowdowns", eps, "-json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Policies []struct {
			Name      string  `json:"name"`
			Completed float64 `json:"completed"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got.Policies {
		names = append(names, p.Name)
		if p.Completed != 4 {
			t.Errorf("%s completed %v of 4", p.Name, p.Completed)
		}
	}
	want := []string{"fifo/packed-sticky", "fifo/pm-first", "fifo/pal", "fifo/default", "goodput/packed-sticky", "goodput/pm-first", "goodput/pal", "goodput/default"}
	if !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
}

func TestVariabilityFlagErrors(t *testing.T) {
	dir, wl := smallWorkload(t)
	bad := filepath.Join(dir, "bad.csv")
	_ = os.WriteFile(bad, []byte("node,start,end,factor\nt4-0,0,600,0\n"), 0o644)
	ghost := filepath.Join(dir, "ghost.csv")
	_ = os.WriteFile(ghost, []byte("node,start,end,factor\nnope,0,600,2\n"), 0o644)
	noCol := filepath.Join(dir, "nocol.csv")
	_ = os.WriteFile(noCol, []byte("GPU_ID,PerfVar_classA\n0,1\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-placers", "best"}, `unknown placer "best"`},
		{[]string{"-placers", "pal,pal"}, "twice"},
		{[]string{"-locality-penalty", "0.5"}, "-locality-penalty"},
		{[]string{"-slowdowns", bad}, "row 2"},
		{[]string{"-slowdowns", ghost}, `node "nope"`},
		{[]string{"-variability", noCol}, `"Node_ID"`},
		{[]string{"-variability", filepath.Join(dir, "absent")}, "-variability"},
		{[]string{"-device-steps"}, "-device-steps needs"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"-workload", wl, "-cluster", "2x4:t4", "-policies", "fifo", "-json"}, c.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestPlacersWithTopology: under -topology, -placers picks among the
// topology's placers and PAL's.
func TestPlacersWithTopology(t *testing.T) {
	dir, wl := smallWorkload(t)
	conf := filepath.Join(dir, "topology.conf")
	if err := os.WriteFile(conf, []byte("SwitchName=s0 Nodes=t4-[0-1]\nSwitchName=s1 Nodes=t4-[2-3]\nSwitchName=s2 Switches=s[0-1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-workload", wl, "-cluster", "4x2:t4", "-policies", "fifo", "-topology", conf,
		"-placers", "kai-binpack,pal,default", "-json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Policies []struct {
			Name string `json:"name"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got.Policies {
		names = append(names, p.Name)
	}
	if want := []string{"fifo/kai-binpack", "fifo/pal", "fifo/default"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	errb.Reset()
	if code := run(context.Background(), []string{"-workload", wl, "-cluster", "4x2:t4", "-policies", "fifo", "-placers", "kai-binpack", "-json"}, &out, &errb); code != 2 {
		t.Errorf("kai-binpack without -topology: exit %d, want 2 (%s)", code, errb.String())
	}
}
