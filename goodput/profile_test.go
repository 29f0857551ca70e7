package goodput

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadTestdata(t *testing.T) {
	// Row counts from the Pollux artifact (reference/pollux.md §3.2).
	want := map[string][2]int{"bert": {540, 180}, "cifar10": {1183, 329}, "deepspeech2": {754, 198},
		"imagenet": {864, 288}, "ncf": {1661, 458}, "yolov3": {540, 108}}
	for _, m := range models {
		pl, sc := readProfile(t, m, "placements.csv"), readProfile(t, m, "scalability.csv")
		if len(pl) != want[m][0] || len(sc) != want[m][1] {
			t.Errorf("%s: %d placements, %d scalability rows, want %v", m, len(pl), len(sc), want[m])
		}
		for _, r := range append(pl, sc...) {
			if err := r.Observation().Validate(); err != nil {
				t.Errorf("%s: row %+v: %v", m, r, err)
			}
		}
		shapes := map[string]bool{}
		for _, r := range pl {
			shapes[r.Placement] = true
			if r.Nodes > 4 || r.Replicas > 16 {
				t.Errorf("%s: placement %q is %d nodes, %d replicas", m, r.Placement, r.Nodes, r.Replicas)
			}
		}
		if len(shapes) != 108 {
			t.Errorf("%s: %d distinct placements, want 108", m, len(shapes))
		}
	}
	f, err := os.Open(filepath.Join("testdata", "pollux", "cifar10", "validation-128.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadValidation(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || rows[0].Iteration != 390 || !near(rows[0].Grad.Sqr, 8.947307535897329, 1e-15) {
		t.Errorf("validation rows: %d, first %+v", len(rows), rows[0])
	}
}

func TestReadLayouts(t *testing.T) {
	// Sia's column order (synthetic numbers; Sia's files are not ours to copy).
	sia := "local_bsz,step_time,sync_time,placement\n32,0.035,0.0006,1\n64,0.05,0.02,44\n"
	rows, err := ReadPlacements(strings.NewReader(sia))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1] != (ProfileRow{Placement: "44", Nodes: 2, Replicas: 8, Local: 64, StepSeconds: 0.05, SyncSeconds: 0.02}) {
		t.Errorf("rows = %+v", rows)
	}
	// Integral decimals ("20.0", as in Sia's scalability-dgx.csv) are integers.
	sc := "local_bsz,step_time,sync_time,num_nodes,num_replicas\n32,0.03,0.001,2,2\n20.0,0.12,0.004,2.0,2\n"
	srows, err := ReadScalability(strings.NewReader(sc))
	if err != nil || len(srows) != 2 || srows[0].Nodes != 2 || srows[0].Replicas != 2 || srows[1].Local != 20 || srows[1].Nodes != 2 {
		t.Errorf("scalability: %+v, %v", srows, err)
	}
	seed := "gpu_type,local_bsz,placement,step_time,sync_time\ndgx,32,1,0.035,0.0007\nrtx,32,1,0.07,0.0007\n"
	seeds, err := ReadSeed(strings.NewReader(seed))
	if err != nil || len(seeds) != 2 || seeds[1].Type != "rtx" || seeds[1].Replicas != 1 {
		t.Errorf("seed: %+v, %v", seeds, err)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
		read           func(string) error
	}{
		{"empty", "", "empty input", readPl},
		{"missing column", "placement,local_bsz,step_time\n1,2,3\n", `missing column "sync_time"`, readPl},
		{"duplicate column", "placement,placement,local_bsz,step_time,sync_time\n", "duplicate", readPl},
		{"bad placement", "placement,local_bsz,step_time,sync_time\n1x,32,0.1,0.01\n", "line 2", readPl},
		{"zero placement", "placement,local_bsz,step_time,sync_time\n00,32,0.1,0.01\n", "no replica", readPl},
		{"NaN step", "placement,local_bsz,step_time,sync_time\n1,32,NaN,0.01\n", "step_time", readPl},
		{"zero step", "placement,local_bsz,step_time,sync_time\n1,32,0,0.01\n", "step_time", readPl},
		{"negative sync", "placement,local_bsz,step_time,sync_time\n1,32,0.1,-0.01\n", "sync_time", readPl},
		{"zero local", "placement,local_bsz,step_time,sync_time\n1,0,0.1,0.01\n", "local_bsz", readPl},
		{"fractional local", "placement,local_bsz,step_time,sync_time\n1,20.5,0.1,0.01\n", "local_bsz", readPl},
		{"huge local", "placement,local_bsz,step_time,sync_time\n1,1e300,0.1,0.01\n", "local_bsz", readPl},
		{"short row", "placement,local_bsz,step_time,sync_time\n1,32,0.1\n", "line 2", readPl},
		{"replicas below nodes", "num_nodes,num_replicas,local_bsz,step_time,sync_time\n4,2,32,0.1,0.01\n", "num_replicas", readSc},
		{"Inf grad", "progress,iteration,metric,grad_sqr,grad_var\n1,1,0.5,+Inf,1\n", "grad_sqr", readVal},
		{"negative var", "progress,iteration,metric,grad_sqr,grad_var\n1,1,0.5,1,-1\n", "grad_var", readVal},
		{"empty type", "gpu_type,local_bsz,placement,step_time,sync_time\n,32,1,0.1,0.01\n", "gpu_type", readSeedErr},
	}
	for _, tc := range tests {
		err := tc.read(tc.in)
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrParse mentioning %q", tc.name, err, tc.want)
		}
	}
}

func readPl(s string) error      { _, err := ReadPlacements(strings.NewReader(s)); return err }
func readSc(s string) error      { _, err := ReadScalability(strings.NewReader(s)); return err }
func readVal(s string) error     { _, err := ReadValidation(strings.NewReader(s)); return err }
func readSeedErr(s string) error { _, err := ReadSeed(strings.NewReader(s)); return err }

func checkRows(t *testing.T, rows []ProfileRow) {
	for _, r := range rows {
		if r.Nodes < 1 || r.Replicas < r.Nodes || r.Local < 1 || !(r.StepSeconds > 0) || math.IsInf(r.StepSeconds, 0) ||
			!(r.SyncSeconds >= 0) || math.IsInf(r.SyncSeconds, 0) {
			t.Fatalf("reader accepted an invalid row %+v", r)
		}
		if r.SyncSeconds < r.StepSeconds {
			if err := r.Observation().Validate(); err != nil {
				t.Fatalf("row %+v: %v", r, err)
			}
		}
	}
}

func FuzzReadPlacements(f *testing.F) {
	f.Add("placement,local_bsz,step_time,sync_time\n1,32,0.0427,0.0005\n44,64,0.185,0.142\n")
	f.Add("local_bsz,step_time,sync_time,placement\n32,0.035,0.0006,1\n")
	f.Add("placement,local_bsz,step_time,sync_time\n1444,1e3,1e-3,0\n\"1\",\"2\",3,4\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ReadPlacements(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			return
		}
		checkRows(t, rows)
		for _, r := range rows {
			if n, k, err := ParsePlacement(r.Placement); err != nil || n != r.Nodes || k != r.Replicas {
				t.Fatalf("placement %q: %d, %d, %v", r.Placement, n, k, err)
			}
		}
	})
}

func FuzzReadScalability(f *testing.F) {
	f.Add("num_nodes,num_replicas,local_bsz,step_time,sync_time\n6,6,32,0.14,0.099\n16,64,8,1.48,1.14\n")
	f.Add("local_bsz,step_time,sync_time,num_nodes,num_replicas\n32,0.03,0.001,2,2\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ReadScalability(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			return
		}
		checkRows(t, rows)
	})
}

func FuzzReadValidation(f *testing.F) {
	f.Add("progress,iteration,metric,grad_sqr,grad_var\n391.0,390,0.4455,8.947,5.066\n")
	f.Add("progress,iteration,metric,grad_sqr,grad_var\n0,0,-1e9,0,0\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ReadValidation(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			return
		}
		for _, r := range rows {
			if err := r.Grad.Validate(); err != nil || r.Iteration < 0 || !(r.Progress >= 0) || math.IsInf(r.Progress, 0) || math.IsNaN(r.Metric) {
				t.Fatalf("reader accepted %+v", r)
			}
		}
	})
}

func FuzzReadSeed(f *testing.F) {
	f.Add("gpu_type,local_bsz,placement,step_time,sync_time\ndgx,32,1,0.035,0.0007\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ReadSeed(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			return
		}
		for _, r := range rows {
			if r.Type == "" {
				t.Fatal("empty type accepted")
			}
			checkRows(t, []ProfileRow{r.ProfileRow})
		}
	})
}

func TestPlacementCounts(t *testing.T) {
	for in, want := range map[string][]int{"1": {1}, "44": {4, 4}, "404": {4, 4}, " 24 ": nil, "0": nil, "": nil, "12a": nil, "-1": nil} {
		got, err := PlacementCounts(in)
		if !slices.Equal(got, want) || (err != nil) != (want == nil) || (err != nil && !errors.Is(err, ErrParse)) {
			t.Errorf("PlacementCounts(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
