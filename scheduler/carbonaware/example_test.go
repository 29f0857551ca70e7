package carbonaware_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
)

// A delay-tolerant job with two hours of work on 4 T4s and a deadline 6 h
// away waits through the dirtiest hour and runs in the clean ones; it
// plans 25% more work than it has (Headroom), so it also starts 2 devices
// at 01:00, the cleanest of the rest, and finishes early, on 3 at 03:00.
// energy.PowerModel accounts what each hour costs, busy and idle devices.
func ExamplePolicy() {
	cluster, _ := accel.ParseSpec("1x4:t4")
	start := time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC)
	forecast := carbon.Series{Start: start, Step: time.Hour, Unit: carbon.GPerKWh,
		Values: []float64{300, 280, 120, 110, 290, 300, 300}}
	s, _ := scheduler.New(scheduler.Config{Policy: carbonaware.Policy{CarbonWeight: 1}})
	left := 2 * 4 * 3600.0 // device-seconds
	var current []placement.Assignment
	var total energy.Totals
	for h := 0; h < 6 && left > 0; h++ {
		now := start.Add(time.Duration(h) * time.Hour)
		job := scheduler.Job{ID: "train", Submitted: start, Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 4,
			RemainingWork: left, Deadline: start.Add(6 * time.Hour), DelayTolerant: true}
		plan, err := s.Schedule(context.Background(), scheduler.Input{Cluster: cluster, Jobs: []scheduler.Job{job},
			Current: current, Now: now, Carbon: forecast})
		if err != nil {
			fmt.Println(err)
			return
		}
		d := plan.Decisions[0]
		current = plan.Assignments()
		e, _ := energy.PowerModel{PUE: 1.1}.Account(cluster, current, now, time.Hour, forecast)
		total = total.Add(e)
		left -= float64(d.To) * 3600
		fmt.Printf("%02d:00 %3.0f g/kWh: %d devices (%v)\n", h, forecast.Values[h], d.To, d.Reason)
	}
	fmt.Printf("%.2f kWh, %.0f g CO2eq\n", total.KWh, total.CarbonG)
	// Output:
	// 00:00 300 g/kWh: 0 devices (carbon)
	// 01:00 280 g/kWh: 2 devices (carbon)
	// 02:00 120 g/kWh: 4 devices (objective)
	// 03:00 110 g/kWh: 3 devices (carbon)
	// 0.77 kWh, 127 g CO2eq
}
