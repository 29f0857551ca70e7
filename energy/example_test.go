package energy_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
)

// One hour of a 4-T4 node with two devices busy, at 200 g/kWh and PUE
// 1.2: busy devices draw their 70 W TDP, idle ones 15% of it.
func ExamplePowerModel_Account() {
	cluster, _ := accel.ParseSpec("1x4:t4")
	devs := cluster.Nodes[0].Devices
	busy := []placement.Assignment{{Job: "train", Devices: []string{devs[0].ID, devs[1].ID}}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ci := carbon.Series{Start: start, Step: time.Hour, Values: []float64{200}, Unit: carbon.GPerKWh}
	e, err := energy.PowerModel{PUE: 1.2}.Account(cluster, busy, start, time.Hour, ci)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f kWh, %.2f g CO2eq (busy %.2f g)\n", e.KWh, e.CarbonG, e.BusyG)
	// Output:
	// 0.1932 kWh, 38.64 g CO2eq (busy 33.60 g)
}
