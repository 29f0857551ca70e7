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
