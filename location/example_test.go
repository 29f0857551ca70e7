package location_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/location"
)

// A job submitted in a dirty region moves to a clean one when the move's
// energy and delay still pay; the oracle bounds what any plan can do.
func Example() {
	t0 := time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC)
	grid := func(v ...float64) carbon.Series {
		return carbon.Series{Start: t0, Step: time.Hour, Values: v, Unit: carbon.GPerKWh}
	}
	p := location.Problem{Start: t0, Slots: 6,
		Regions: []location.Region{
			{Name: "coal", Intensity: grid(700, 650, 600, 650, 700, 720), Devices: 8},
			{Name: "hydro", Intensity: grid(30, 25, 20, 20, 25, 30), Devices: 4},
		},
		Jobs: []location.Job{
			{Home: 0, Arrival: 0, Deadline: 6, Work: 8, MaxDevices: 4, Watts: 300},
			{Home: 0, Arrival: 0, Deadline: 6, Work: 16, MaxDevices: 4, Watts: 300},
		},
		Migration: location.Migration{KWh: 2, Delay: time.Hour},
	}
	home, _ := location.PlanHome(p)
	plan, _ := location.Plan(p)
	best, _ := location.Oracle(p)
	fmt.Printf("at home %.0f g, planned %.0f g (%d moved), oracle %.0f g\n", home.CarbonG, plan.CarbonG, plan.Moved, best.CarbonG)
	// Output: at home 4620 g, planned 3228 g (1 moved), oracle 954 g
}
