package netpredict_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/netpredict"
)

// A job reports step times from nodes with different links; the model
// then ranks candidate nodes by predicted step time.
func Example() {
	var m netpredict.Model
	job := netpredict.Job{ComputeSeconds: 0.2, CommBytes: 4e8, Rounds: 50}
	for _, r := range []struct {
		bw   float64
		load float64
		step time.Duration
	}{{25, 0, 330 * time.Millisecond}, {100, 0, 235 * time.Millisecond}, {50, 0.5, 465 * time.Millisecond},
		{200, 0.2, 240 * time.Millisecond}, {25, 0.3, 418 * time.Millisecond}, {100, 0.6, 505 * time.Millisecond}} {
		tl := netpredict.Telemetry{BandwidthGbps: r.bw, RTT: 50 * time.Microsecond, CPULoad: r.load}
		if err := m.Observe(job, tl, r.step); err != nil {
			fmt.Println(err)
			return
		}
	}
	cands := []netpredict.Telemetry{
		{BandwidthGbps: 200, RTT: 50 * time.Microsecond, CPULoad: 0.7}, // fast link, busy host
		{BandwidthGbps: 50, RTT: 50 * time.Microsecond, CPULoad: 0.1},
		{BandwidthGbps: 100, RTT: 50 * time.Microsecond, CPULoad: 0.1},
	}
	best, err := m.Best(job, cands)
	fmt.Println("best candidate:", best, err)
	_, err = m.Predict(job, netpredict.Telemetry{BandwidthGbps: -5})
	fmt.Println(err)
	// Output:
	// best candidate: 2 <nil>
	// netpredict: bad telemetry: BandwidthGbps = -5
}
