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

// serveSpecFile writes a -serve spec next to a copy of the first 300 rows
// of the Azure conversation trace and returns its path.
func serveSpecFile(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/azure_conv_head300.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conv.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "svc.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeModes runs the three modes on a small workload beside a
// one-replica service (four of the eight devices at peak) and checks the
// names scripts rely on.
func TestServeModes(t *testing.T) {
	_, wl := smallWorkload(t)
	spec := serveSpecFile(t, `{"trace": "conv.csv", "peak_replicas": 1}`)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-serve", spec, "-serve-modes", "alone,static,joint", "-workload", wl, "-cluster", "2x4:t4", "-json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		ServingModes []map[string]any `json:"serving_modes"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got.ServingModes) != 3 {
		t.Fatalf("%d modes: %s", len(got.ServingModes), out.String())
	}
	for i, want := range []string{"alone", "static", "joint"} {
		m := got.ServingModes[i]
		if m["mode"] != want {
			t.Errorf("mode %d is %v, want %s", i, m["mode"], want)
		}
		a, ok := m["slo_attainment"].(float64)
		if !ok || a < 0 || a > 1 {
			t.Errorf("%s: slo_attainment %v", want, m["slo_attainment"])
		}
		jct, hasJCT := m["training_avg_jct_s"].(float64)
		if want == "alone" {
			if hasJCT {
				t.Errorf("alone has training_avg_jct_s %v", jct)
			}
			continue
		}
		if !hasJCT || jct <= 0 || m["training_completed"] != 4.0 {
			t.Errorf("%s: training_avg_jct_s %v, completed %v of 4", want, m["training_avg_jct_s"], m["training_completed"])
		}
	}
	// The static split is the peak all along: one replica, 4 GPUs.
	if s := got.ServingModes[1]; s["serving_peak_replicas"] != 1.0 {
		t.Errorf("static peak %v replicas, want 1", s["serving_peak_replicas"])
	}
}

func TestServeBadInput(t *testing.T) {
	_, wl := smallWorkload(t)
	dir := t.TempDir()
	badTrace := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(badTrace, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,-3,44\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, spec, modes, want string
	}{
		{"no trace", `{"peak_replicas": 1}`, "", "trace is missing"},
		{"no peak", `{"trace": "conv.csv"}`, "", "peak_replicas 0"},
		{"unknown field", `{"trace": "conv.csv", "peak_replicas": 1, "replicas": 3}`, "", "unknown field"},
		{"too big", `{"trace": "conv.csv", "peak_replicas": 3}`, "", "holds 2 such replicas"},
		{"max below peak", `{"trace": "conv.csv", "peak_replicas": 2, "max_replicas": 1}`, "", "max_replicas 1"},
		{"max above cluster", `{"trace": "conv.csv", "peak_replicas": 1, "max_replicas": 3}`, "", "max_replicas 3"},
		{"bad slo", `{"trace": "conv.csv", "peak_replicas": 1, "tpot_p90": "0s"}`, "", "tpot_p90"},
		{"bad duration", `{"trace": "conv.csv", "peak_replicas": 1, "startup": "60"}`, "", "startup"},
		{"bad autoscaler", `{"trace": "conv.csv", "peak_replicas": 1, "autoscaler": "hpa"}`, "", "autoscaler"},
		{"bad row", `{"trace": "` + badTrace + `", "peak_replicas": 1}`, "", "line 3"},
		{"bad mode", `{"trace": "conv.csv", "peak_replicas": 1}`, "joint,shared", "unknown mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-serve", serveSpecFile(t, c.spec), "-workload", wl, "-cluster", "2x4:t4", "-json"}
			if c.modes != "" {
				args = append(args, "-serve-modes", c.modes)
			}
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), c.want)
			}
		})
	}
}
