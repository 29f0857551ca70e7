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

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestStaticTable(t *testing.T) {
	code, out, errs := runArgs(t, "-static", "2x8:h100-80gb")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "h100-80gb-1  7    h100-80gb  80 GiB  9.0") || !strings.Contains(out, "0-6×18") ||
		!strings.Contains(out, "2 nodes, 16 devices; healthy: h100-80gb×16") {
		t.Errorf("table:\n%s", out)
	}
}

func TestStaticJSONFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	spec := `{"groups":[{"devices":4,"type":"t4"}],"unhealthy":["t4-0/2"]}`
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runArgs(t, "-json", "-static", "@"+path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Devices != 4 || r.Types["t4"] != 4 || r.Healthy["t4"] != 3 || r.Nodes[0].Devices[2].Healthy {
		t.Errorf("report %+v", r)
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-bogus"},
		{"extra"},
		{"-static", "1x:t4"},
		{"-static", "@/nonexistent/file.json"},
		{"-static", "1x1:t4", "-mock", "dgxh100"},
		{"-mock", "dgx1"},
	} {
		code, out, errs := runArgs(t, args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if code, _, _ := runArgs(t, "-h"); code != 0 {
		t.Errorf("-h: exit %d", code)
	}
}

// With no flags the example reads this machine through NVML; without a
// driver it prints one line and exits 2.
func TestNoDriver(t *testing.T) {
	code, out, errs := runArgs(t)
	if code == 0 {
		t.Skip("NVML is available here")
	}
	if code != 2 || out != "" || !strings.HasPrefix(errs, "NVML unavailable: ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// Issue 17: -h says what the program does and exits 0.
func TestHelpHeader(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errb); code != 0 || !strings.HasPrefix(errb.String(), "usage: inventory [flags]\n\ninventory lists") {
		t.Errorf("-h: exit %d\n%s", code, errb.String())
	}
}
