package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
)

// TestQuick runs the benchmark on small instances and checks the keys
// and the fitness ratio.
func TestQuick(t *testing.T) {
	figs, err := run(context.Background(), config{seed: 1, reps: 1, population: 20, generations: 10, quick: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := write(&buf, figs, true); err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	// -quick names its smaller instances (issue 17): no full-size key.
	for _, k := range []string{"round_goodput_160x64_ms", "round_goodput_2000x8192_ms", "maxmin_2048x4_ms", "maxmin_10000x4_ms"} {
		if _, ok := m[k]; ok {
			t.Errorf("-quick reports the full-size key %s", k)
		}
	}
	for _, k := range []string{"goodput_fit_us", "goodput_optimize_ns", "placement_gangs_per_s", "round_goodput_20x16_ms",
		"round_goodput_100x128_ms", "goodput_vs_reference_fitness", "goodput_vs_reference_time",
		"maxmin_256x4_ms", "maxmin_512x4_ms"} {
		if v, ok := m[k]; !ok || v <= 0 {
			t.Errorf("%s = %v, %v", k, v, ok)
		}
	}
	if g, ok := m["maxmin_gap"]; !ok || g < 0 || g > 0.005 {
		t.Errorf("maxmin_gap = %v, %v; want within [0, 0.005]", g, ok)
	}
	if m["goodput_vs_reference_fitness"] < 1 {
		t.Errorf("fast policy below the reference: %v", m["goodput_vs_reference_fitness"])
	}
}

// BenchmarkRound2000x8192 is one Pollux-policy round on the large instance
// with goodput speedup curves.
func BenchmarkRound2000x8192(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 11))
	in, err := instance(rng, shape{groups: []group{{256, 8, "a100"}, {256, 8, "v100"}, {512, 4, "t4"}, {128, 16, "h100"}}, jobs: 2000})
	if err != nil {
		b.Fatal(err)
	}
	s, _ := scheduler.New(scheduler.Config{})
	if _, err := s.Schedule(context.Background(), in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Schedule(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFlags: bad numbers are usage errors, -h says what the program does.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-population", "1000000000"}, {"-population", "1"}, {"-reps", "0"}, {"-nope"}, {"extra"}} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	var buf bytes.Buffer
	if _, err := parse([]string{"-h"}, &buf); !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(buf.String(), "usage: benchmark [flags]\n\nbenchmark measures") {
		t.Errorf("-h: %v\n%s", err, buf.String())
	}
}
