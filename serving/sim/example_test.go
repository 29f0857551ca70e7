package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/serving"
	"github.com/goodsched/goodsched/serving/sim"
)

// Example replays a steady minute of requests through two replicas of
// Llama-2-70B on 4×H100 and reports the window's percentiles.
func Example() {
	var reqs []serving.Request
	for i := range 120 { // 2 requests/s for a minute
		reqs = append(reqs, serving.Request{Arrival: time.Duration(i) * 500 * time.Millisecond, PromptTokens: 1000, OutputTokens: 200})
	}
	svc := serving.Service{
		Model: "llama2-70b", GPUType: "h100-80gb", GPUsPerReplica: 4,
		SLO: serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond},
	}
	res, err := sim.Run(context.Background(), sim.Config{
		Trace: serving.Trace{Requests: reqs}, Service: svc, Engine: sim.Llama2_70B_H100(), InitialReplicas: 2,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := res.Windows[0]
	fmt.Printf("p90 TTFT %v, p90 TPOT %v, met %v, %.3f GPU-hours\n",
		w.TTFTP90.Round(time.Millisecond), w.TPOTP90.Round(100*time.Microsecond), w.Met, res.GPUHours)
	// Output: p90 TTFT 132ms, p90 TPOT 34.1ms, met true, 0.133 GPU-hours
}
