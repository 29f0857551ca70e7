package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultsJSON(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plan.svg")
	var out, errb bytes.Buffer
	if err := run([]string{"-json", "-verify", "-svg", svg}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "carbonplan: wrote "+svg) {
		t.Errorf("stderr does not say where the SVG went: %q", errb.String())
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agnostic_g", "suspend_resume_g", "static_g", "planner_g", "optimal_g", "savings_vs_agnostic"} {
		if _, ok := r[k].(float64); !ok {
			t.Fatalf("key %q missing or not a number in %s", k, out.String())
		}
	}
	p, a, o := r["planner_g"].(float64), r["agnostic_g"].(float64), r["optimal_g"].(float64)
	if !(p < a) || p > o*1.001 || o > p*(1+1e-9) {
		t.Fatalf("planner %v, agnostic %v, optimal %v", p, a, o)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("svg: %v", err)
	}
}

func TestText(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-svg", "", "-weeks", "2", "-work", "12h", "-deadline", "36h", "-error", "0.1"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "marginal planner") || !strings.Contains(out.String(), "2 weekly start(s)") || !strings.Contains(out.String(), "planner, noisy") {
		t.Fatal(out.String())
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-weeks", "0"},
		{"-basis", "mixed"},
		{"-error", "-1"},
		{"-work", "80h"},
		{"-intensity", "/does/not/exist"},
		{"-start", "yesterday"},
		{"-start", "2030-01-01T00:00:00Z"},
		{"-max", "9"},
		{"-start", "2022-12-30T00:00:00Z"},
		{"-min", "8"},
		{"extra"},
	} {
		err := run(append(args, "-svg", ""), io.Discard, io.Discard)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v is not a usage error", args, err)
		}
	}
}

// Issue 17: first-contact fixes.
func TestFirstContact(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	// -json writes no SVG into the working directory unless asked.
	if err := run([]string{"-json"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("carbonplan.svg"); err == nil {
		t.Error("-json wrote carbonplan.svg into the working directory")
	}
	// Flag errors are usage errors (exit 2), including -pue Inf and a
	// slot that would upsample past the series bound.
	for _, args := range [][]string{{"-pue", "Inf"}, {"-pue", "NaN"}, {"-slot", "1ns"}, {"-slot", "1ms"}, {"-slot", "7m"}, {"-resolution", "100000000", "-verify"}} {
		var ue usageError
		if err := run(append(args, "-svg", ""), io.Discard, io.Discard); !errors.As(err, &ue) {
			t.Errorf("%v: %v is not a usage error", args, err)
		}
	}
	// A Let's Wait Awhile GB-style file (header "Time,Carbon Intensity",
	// mixed 15/30-minute steps) loads with -fill hold and names -fill
	// when it stops on a gap.
	var b strings.Builder
	b.WriteString("Time,Carbon Intensity\n")
	for i := 0; i < 24*4; i++ { // a day of 15-minute steps, then 30-minute ones
		fmt.Fprintf(&b, "2020-01-%02d %02d:%02d:00,%d\n", 1+i/96, (i/4)%24, 15*(i%4), 100+i%7*20)
	}
	for d := 2; d <= 9; d++ {
		for h := 0; h < 24; h++ {
			fmt.Fprintf(&b, "2020-01-%02d %02d:00:00,%d\n", d, h, 100+(h*37)%200)
			fmt.Fprintf(&b, "2020-01-%02d %02d:30:00,%d\n", d, h, 100+(h*41)%200)
		}
	}
	gb := filepath.Join(dir, "gb.csv")
	if err := os.WriteFile(gb, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run([]string{"-intensity", gb, "-svg", ""}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-fill hold") {
		t.Errorf("GB file without -fill: %v, want a hint naming -fill hold", err)
	}
	var out bytes.Buffer
	if err := run([]string{"-intensity", gb, "-fill", "hold", "-svg", "", "-work", "12h", "-deadline", "36h"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "marginal planner") {
		t.Errorf("GB file with -fill hold: %v\n%s", err, out.String())
	}
	// The shipped Spain series is read from its .gz file.
	out.Reset()
	es := filepath.Join(wd, "..", "..", "carbon", "carbondata", "electricitymaps_ES_2022_hourly.csv.gz")
	if err := run([]string{"-intensity", es, "-svg", ""}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "zone ES") {
		t.Errorf("-intensity %s: %v\n%s", es, err, out.String())
	}
	// -h says what the program does.
	var help bytes.Buffer
	if _, err := parse([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) && !strings.Contains(fmt.Sprint(err), "help requested") {
		t.Errorf("-h: %v", err)
	}
	if !strings.HasPrefix(help.String(), "usage: carbonplan [flags]\n\ncarbonplan plans") {
		t.Errorf("-h header:\n%s", help.String())
	}
}
