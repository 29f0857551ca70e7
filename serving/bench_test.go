package serving_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/goodsched/goodsched/serving"
)

// BenchmarkDecide1000Services times one tick of 1,000 services, each with
// its own autoscaler and profile, after ten minutes of ticks have filled
// their windows and forecasts; ns/op is for all 1,000 decisions and
// us/service is one decision (the target: ≤ 1,000 µs per service).
func BenchmarkDecide1000Services(b *testing.B) {
	for _, kind := range []string{"kpa", "dynamo", "goodsched"} {
		b.Run(kind, func(b *testing.B) {
			const services = 1000
			scalers := make([]serving.Autoscaler, services)
			for i := range scalers {
				p := splitwiseProfile(b)
				s := svc
				s.Name = fmt.Sprint("svc-", i)
				switch kind {
				case "kpa":
					scalers[i] = &serving.KPA{Service: s, TargetConcurrency: 8}
				case "dynamo":
					scalers[i] = &serving.Dynamo{Service: s, Profile: p}
				default:
					scalers[i] = &serving.Predictive{Service: s, Profile: p}
				}
			}
			metrics := func(tick, i int) serving.Metrics {
				n := 10 + (tick*7+i)%11 // a rate that moves, different per service
				return serving.Metrics{Now: t0.Add(time.Duration(2*tick) * time.Second), Interval: 2 * time.Second,
					Ready: 8, Arrivals: n, PromptTokens: n * (900 + i%300), OutputTokens: n * 200, Concurrency: float64(6 * n),
					FirstTokens: n, TTFTSum: time.Duration(n) * 200 * time.Millisecond, TTFTP90: 400 * time.Millisecond,
					Finished: n, TPOTSum: time.Duration(n) * 40 * time.Millisecond, TPOTP90: 45 * time.Millisecond}
			}
			// Warm up: ten minutes of ticks fill windows and forecast history.
			for tick := 1; tick <= 300; tick++ {
				for i, a := range scalers {
					if _, err := a.Desired(metrics(tick, i)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				tick := 301 + n
				for i, a := range scalers {
					if _, err := a.Desired(metrics(tick, i)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N)/services, "us/service")
		})
	}
}
