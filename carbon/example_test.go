package carbon_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// Example plans an elastic job over two days of hourly intensity: it must
// do 6 hours' worth of work at full scale (4 nodes) within 48 hours. The
// marginal planner runs only in the clean midday hours, wider in the
// cleanest, and suspends at night.
func Example() {
	// Two days of a solar-shaped grid, in the two-column format of Let's
	// Wait Awhile.
	var csv strings.Builder
	csv.WriteString("time,SOLAR\n")
	start := time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC)
	for h := range 48 {
		ci := 300.0
		if hod := h % 24; hod >= 10 && hod < 16 {
			ci = 80 + 10*float64(hod-10)
		}
		fmt.Fprintf(&csv, "%s,%g\n", start.Add(time.Duration(h)*time.Hour).Format(time.DateTime), ci)
	}
	series, err := carbon.ReadTwoColumn(strings.NewReader(csv.String()), carbon.ReadOptions{Signal: carbon.Average, Basis: carbon.LifeCycle})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A concave scale curve: 1..4 nodes, 300 W each.
	curve, err := carbon.CurveFromSpeedup([]float64{1, 1.8, 2.4, 2.8}, 1000, 300, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	work := curve.WorkPerSecond[4] * 6 * 3600
	deadline := start.Add(48 * time.Hour)

	agnostic, _ := carbon.ScheduleNow(series, curve, 4, work, deadline, carbon.ScheduleOptions{})
	plan, err := carbon.Schedule(series, curve, work, deadline, carbon.ScheduleOptions{PUE: 1.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	agnosticPUE := agnostic.CarbonG * 1.1
	fmt.Printf("method %v, concave %v\n", plan.Method, plan.Concave)
	fmt.Printf("scales day 1 10:00-15:00: %v\n", plan.Scales()[10:16])
	fmt.Printf("carbon: agnostic %.0f g, planned %.0f g (%.0f%% less)\n", agnosticPUE, plan.CarbonG, 100*(1-plan.CarbonG/agnosticPUE))

	// An impossible deadline says how much work fits.
	_, err = carbon.Schedule(series, curve, work, start.Add(4*time.Hour), carbon.ScheduleOptions{})
	fmt.Println(err)
	// Output:
	// method greedy, concave true
	// scales day 1 10:00-15:00: [2 2 2 1 1 1]
	// carbon: agnostic 2376 g, planned 594 g (75% less)
	// carbon: deadline cannot be met: need 6.048e+07 work, at most 4.032e+07 fits in 4 slots (66.7%)
}
