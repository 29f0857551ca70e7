package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestDefaultJSON runs the example as a user would with no profile: the
// embedded CIFAR-10 profile, one JSON object with the documented keys.
func TestDefaultJSON(t *testing.T) {
	for _, form := range []string{"pollux", "allreduce", "default"} {
		var out bytes.Buffer
		if err := run([]string{"-json", "-form", form}, &out); err != nil {
			t.Fatal(err)
		}
		var rep map[string]any
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"fit_points", "eval_points", "median_rel_err", "p90_rel_err", "params", "speedup"} {
			if _, ok := rep[k]; !ok {
				t.Errorf("%s: missing key %q", form, k)
			}
		}
		if med := rep["median_rel_err"].(float64); med <= 0 || med > 0.08 {
			t.Errorf("%s: median error %v", form, med)
		}
		sp := rep["speedup"].([]any)
		if len(sp) == 0 || sp[0].(map[string]any)["speedup"].(float64) != 1 {
			t.Errorf("%s: speedup table %v", form, sp)
		}
	}
}

func TestText(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "step-time error on unseen shapes") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{{"-form", "ring"}, {"-starts", "0"}, {"-profile", "/nonexistent"}, {"extra"}, {"-nosuchflag"}} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// Issue 17: -starts is bounded by goodput.MaxStarts before any fit, the
// shipped Pollux profiles are usable by path, and -h says what it does.
func TestFirstContact(t *testing.T) {
	err := run([]string{"-starts", "1000000000"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-starts must be in 1..") {
		t.Errorf("-starts 1000000000: %v", err)
	}
	var out bytes.Buffer
	if err := run([]string{"-profile", "../../scheduler/sim/polluxdata/traces/yolov3", "-form", "pollux"}, &out); err != nil || !strings.Contains(out.String(), "yolov3") {
		t.Errorf("shipped yolov3 profile: %v\n%s", err, out.String())
	}
	var help bytes.Buffer
	if err := runIO([]string{"-h"}, &bytes.Buffer{}, &help); err != nil || !strings.HasPrefix(help.String(), "usage: goodput [flags]\n\ngoodput fits") {
		t.Errorf("-h: %v\n%s", err, help.String())
	}
}
