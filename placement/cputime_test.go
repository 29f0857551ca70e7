package placement

import (
	"syscall"
	"testing"
)

// cpuNanos returns the CPU time (user + system) used by this process so
// far. The shared build machine is heavily loaded, so benchmarks report
// CPU time per operation next to wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// cpuTimer reports "cpu-ns/op" for a benchmark: call start after setup and
// stop before returning.
type cpuTimer struct{ t0 int64 }

func (c *cpuTimer) start(b *testing.B) { b.ResetTimer(); c.t0 = cpuNanos() }

func (c *cpuTimer) stop(b *testing.B) {
	b.StopTimer()
	if d := cpuNanos() - c.t0; d > 0 && b.N > 0 {
		b.ReportMetric(float64(d)/float64(b.N), "cpu-ns/op")
	}
}
