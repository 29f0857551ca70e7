package main

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/serving"
	"github.com/goodsched/goodsched/serving/sim"
)

// autoscaleFigure times one tick of 1,000 services, each with goodsched's
// predictive autoscaler (serving.Predictive) and its own profile fed by a
// pre-deployment sweep of Llama-2-70B on 4×H100, after ten minutes of
// 2 s ticks have filled their forecasts: the median over reps ticks, ms
// for all 1,000 decisions (the target: ≤ 1 ms per service, so ≤ 1,000).
func autoscaleFigure(clk clock, reps int) (float64, error) {
	const services = 1000
	engine := sim.Llama2_70B_H100()
	svc := serving.Service{
		Model: engine.Model, GPUType: engine.Type, GPUsPerReplica: engine.GPUs, Startup: time.Minute,
		SLO: serving.SLO{TTFTP90: time.Second, TPOTP90: 50 * time.Millisecond},
	}
	scalers := make([]*serving.Predictive, services)
	for i := range scalers {
		p := serving.NewProfile()
		for _, r := range sim.Sweep(engine) {
			if err := p.Observe(r); err != nil {
				return 0, err
			}
		}
		scalers[i] = &serving.Predictive{Service: svc, Profile: p}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := 0
	step := func() error {
		tick++
		for i, a := range scalers {
			n := 10 + (tick*7+i)%11
			m := serving.Metrics{Now: t0.Add(time.Duration(2*tick) * time.Second), Interval: 2 * time.Second,
				Ready: 8, Arrivals: n, PromptTokens: n * (900 + i%300), OutputTokens: n * 200,
				FirstTokens: n, TTFTP90: 400 * time.Millisecond, Finished: n, TPOTP90: 45 * time.Millisecond}
			if _, err := a.Desired(m); err != nil {
				return fmt.Errorf("service %d: %w", i, err)
			}
		}
		return nil
	}
	for range 300 {
		if err := step(); err != nil {
			return 0, err
		}
	}
	return medianMS(clk, max(reps, 5), nil, step)
}
