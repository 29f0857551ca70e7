package sim

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
)

// phillyTraceEnv names the Philly-derived trace of the Pollux artifact
// (simulator/traces/philly.csv, plain or .gz). The trace is not shipped
// (its redistribution terms are unclear), so the large-scale benchmarks
// skip without it.
const phillyTraceEnv = "GOODSCHED_PHILLY_TRACE"

func phillyJobs(b *testing.B, apps map[string]*Application, n int) []JobSpec {
	b.Helper()
	path := os.Getenv(phillyTraceEnv)
	if path == "" {
		b.Skipf("set %s to the Pollux artifact's simulator/traces/philly.csv", phillyTraceEnv)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		defer gz.Close()
		r = gz
	}
	jobs, err := ReadPhilly(r, apps, PhillyOptions{Jobs: n, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return jobs
}

// benchGoodput runs jobs on cl with the goodput policy (adaptive jobs,
// as `examples/simulate -policies goodput`) and reports the simulated
// rounds and the wall time per round.
func benchGoodput(b *testing.B, jobs []JobSpec, apps map[string]*Application, spec string) {
	cl := cluster(b, spec)
	b.ReportAllocs()
	rounds := 0
	for b.Loop() {
		rounds = 0
		cfg := Config{Cluster: cl, Jobs: jobs, Apps: apps, Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive,
			Progress: func(Status) { rounds++ }}
		r, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if r.Completed != len(jobs) {
			b.Fatalf("%d of %d jobs completed", r.Completed, len(jobs))
		}
	}
	b.ReportMetric(float64(rounds), "rounds/op")
	if rounds > 0 {
		b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N)/float64(rounds), "ms/round")
	}
}

// BenchmarkPhilly10kGoodput is issue 19's simulator figure: 10,000 jobs
// of the Philly trace on 2,048 GPUs (512 nodes × 4 T4) with the goodput
// policy. Run it with -benchtime=1x; it needs GOODSCHED_PHILLY_TRACE.
func BenchmarkPhilly10kGoodput(b *testing.B) {
	apps := polluxApps(b)
	benchGoodput(b, phillyJobs(b, apps, 10000), apps, "512x4:t4")
}

// BenchmarkPhilly2kGoodput is a quicker stand-in for the 10k run: the
// first 2,000 jobs of the same window on the same cluster.
func BenchmarkPhilly2kGoodput(b *testing.B) {
	apps := polluxApps(b)
	benchGoodput(b, phillyJobs(b, apps, 2000), apps, "512x4:t4")
}

// BenchmarkRunGoodputWorkload needs no trace: one embedded 160-job Pollux
// workload on 16 nodes × 4 T4 with the goodput policy.
func BenchmarkRunGoodputWorkload(b *testing.B) {
	apps := polluxApps(b)
	benchGoodput(b, polluxJobs(b, "workloads", "workload-6", 160), apps, "16x4:t4")
}
