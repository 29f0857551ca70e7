package netpredict

import (
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzObserve: any telemetry, job and step time is recorded or refused
// with a typed error; predictions are never negative or NaN.
func FuzzObserve(f *testing.F) {
	f.Add(100.0, int64(50000), 0.01, 0.2, 0.1, 1e8, 10, int64(300000000))
	f.Add(-1.0, int64(-1), 1.0, 1.0, -1.0, math.Inf(1), -1, int64(0))
	f.Fuzz(func(t *testing.T, bw float64, rtt int64, retr, load, comp, bytes float64, rounds int, step int64) {
		var m Model
		j := Job{ComputeSeconds: comp, CommBytes: bytes, Rounds: rounds}
		tl := Telemetry{BandwidthGbps: bw, RTT: time.Duration(rtt), Retransmits: retr, CPULoad: load}
		err := m.Observe(j, tl, time.Duration(step))
		if err != nil {
			if !errors.Is(err, ErrTelemetry) && !errors.Is(err, ErrJob) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		p, err := m.Predict(j, tl)
		if err == nil && p < 0 {
			t.Fatalf("negative prediction %v", p)
		}
	})
}
