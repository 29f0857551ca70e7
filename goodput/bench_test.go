package goodput

import "testing"

// fifty returns about 50 cifar10 configurations spread over the
// placements file (every 7th of 371 averaged configurations).
func fifty(b *testing.B) []Observation {
	obs := every(aggregate(readProfile(b, "cifar10", "placements.csv")), 7)
	b.ReportMetric(float64(len(obs)), "obs")
	return obs
}

func benchFit(b *testing.B, opts FitOptions) {
	obs := fifty(b)
	b.ReportAllocs()
	var evals, starts int
	defer startCPU(b).stop()
	for b.Loop() {
		_, r, err := Fit(obs, opts)
		if err != nil {
			b.Fatal(err)
		}
		evals, starts = r.Evaluations, r.Starts
	}
	b.ReportMetric(float64(evals), "evals")
	b.ReportMetric(float64(starts), "starts")
}

// BenchmarkFit50 fits ~50 observations from one data-derived start
// (target ≤ 200 µs; Pollux's scipy fit takes about 0.2 s).
func BenchmarkFit50(b *testing.B) { benchFit(b, FitOptions{Form: FormPollux}) }

// BenchmarkFit50AllReduce is the same with FormAllReduce.
func BenchmarkFit50AllReduce(b *testing.B) { benchFit(b, FitOptions{Form: FormAllReduce}) }

// BenchmarkFit50TwoStarts adds Pollux's own start.
func BenchmarkFit50TwoStarts(b *testing.B) { benchFit(b, FitOptions{Form: FormPollux, Starts: 2}) }

// BenchmarkFit50Warm refits from the previous fit, as the Estimator does.
func BenchmarkFit50Warm(b *testing.B) {
	obs := fifty(b)
	p, _, err := Fit(obs, FitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var evals, starts int
	defer startCPU(b).stop()
	for b.Loop() {
		_, r, err := Fit(obs, FitOptions{Init: &p})
		if err != nil {
			b.Fatal(err)
		}
		evals, starts = r.Evaluations, r.Starts
	}
	b.ReportMetric(float64(evals), "evals")
	b.ReportMetric(float64(starts), "starts")
}

func cifarModel(b *testing.B) Model {
	p, _, err := Fit(aggregate(readProfile(b, "cifar10", "placements.csv")), FitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return Model{Params: p, Grad: GradStats{Sqr: 0.13, Var: 5.0},
		Limits: Limits{InitBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 1024, Accumulation: true}}
}

// BenchmarkOptimize chooses the batch for one (nodes, replicas)
// (target ≤ 5 µs, 0 allocations).
func BenchmarkOptimize(b *testing.B) {
	m := cifarModel(b)
	b.ReportAllocs()
	var g float64
	defer startCPU(b).stop()
	for b.Loop() {
		g += m.Optimize(4, 16).Goodput
	}
	_ = g
}

// BenchmarkCurveSpeedup is a memoised speedup lookup (target ≤ 50 ns).
func BenchmarkCurveSpeedup(b *testing.B) {
	c, err := NewCurve(map[string]CurveModel{"t4": {Model: cifarModel(b)}}, CurveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for k := 1; k <= 32; k++ {
		c.Speedup("t4", (k+3)/4, k)
	}
	b.ReportAllocs()
	var s float64
	i := 0
	defer startCPU(b).stop()
	for b.Loop() {
		k := i%32 + 1
		s += c.Speedup("t4", (k+3)/4, k)
		i++
	}
	_ = s
}

// BenchmarkCurveSpeedupMultiType looks up the third of three types.
func BenchmarkCurveSpeedupMultiType(b *testing.B) {
	m := cifarModel(b)
	c, err := NewCurve(map[string]CurveModel{"a100": {Model: m}, "t4": {Model: m}, "v100": {Model: m}}, CurveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	c.Speedup("v100", 2, 8)
	b.ReportAllocs()
	var s float64
	defer startCPU(b).stop()
	for b.Loop() {
		s += c.Speedup("v100", 2, 8)
	}
	_ = s
}
