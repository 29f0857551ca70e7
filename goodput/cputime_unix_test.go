//go:build unix

package goodput

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time this process has used (user + system). On a
// shared, overloaded machine wall-clock ns/op overstates the cost; the
// benchmarks also report CPU ns/op from it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTimer reports cpu-ns/op when stopped.
type cpuTimer struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuTimer { return cpuTimer{b: b, start: processCPU()} }

func (c cpuTimer) stop() {
	if c.b.N > 0 {
		c.b.ReportMetric(float64(processCPU()-c.start)/float64(c.b.N), "cpu-ns/op")
	}
}
