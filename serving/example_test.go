package serving_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/serving"
)

// Example feeds a profile from replica reports and asks the predictive
// autoscaler for replicas while the load doubles over five minutes.
func Example() {
	svc := serving.Service{
		Name: "chat", Model: "llama2-70b", GPUType: "h100-80gb", GPUsPerReplica: 4,
		SLO:     serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond},
		Startup: 2 * time.Minute,
	}
	profile := serving.NewProfile()
	// What replicas report: prefill time by prompt tokens, decode step
	// time by batch (Splitwise's Llama-2-70B on 4×H100).
	for _, r := range []serving.Report{
		{Phase: serving.Prefill, Tokens: 512, Duration: 61 * time.Millisecond},
		{Phase: serving.Prefill, Tokens: 2048, Duration: 199 * time.Millisecond},
		{Phase: serving.Decode, Batch: 1, ContextTokens: 1000, Duration: 29400 * time.Microsecond},
		{Phase: serving.Decode, Batch: 32, ContextTokens: 1000, Duration: 36900 * time.Microsecond},
		{Phase: serving.Decode, Batch: 64, ContextTokens: 1000, Duration: 52 * time.Millisecond},
	} {
		if err := profile.Observe(r); err != nil {
			fmt.Println(err)
			return
		}
	}
	a := &serving.Predictive{Service: svc, Profile: profile}
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	replicas := 4
	for i := 1; i <= 150; i++ { // 2 s ticks, 5 minutes: 5 → 10 requests/s
		arrivals := int(2 * (5 + 5*float64(i)/150))
		m := serving.Metrics{
			Now: start.Add(time.Duration(2*i) * time.Second), Interval: 2 * time.Second,
			Ready: replicas, Arrivals: arrivals, PromptTokens: 1000 * arrivals, OutputTokens: 200 * arrivals,
		}
		n, err := a.Desired(m)
		if err != nil {
			fmt.Println(err)
			return
		}
		replicas = n
		if i%50 == 0 {
			fmt.Printf("minute %d: %d requests/s → %d replicas\n", i/30, arrivals/2, n)
		}
	}
	// Output:
	// minute 1: 6 requests/s → 4 replicas
	// minute 3: 8 requests/s → 5 replicas
	// minute 5: 10 requests/s → 5 replicas
}
