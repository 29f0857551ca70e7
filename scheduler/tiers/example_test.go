package tiers_test

import (
	"fmt"

	"github.com/goodsched/goodsched/scheduler/tiers"
)

// A job asking for 10 devices that runs on 10: what each tier lets a
// policy take from it this round.
func Example() {
	for _, name := range []string{"premium", "standard", "basic"} {
		t, err := tiers.Parse(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		g := tiers.Guarantee(t, 1, 10, 10)
		fmt.Printf("%s: keeps %d of 10, pinned %v, %.0f%% of its device-time every hour\n", t, g, tiers.Pins(t, 10, g, true), 100*t.Share())
	}
	_, err := tiers.Parse("gold")
	fmt.Println(err)
	// Output:
	// premium: keeps 10 of 10, pinned true, 100% of its device-time every hour
	// standard: keeps 7 of 10, pinned false, 70% of its device-time every hour
	// basic: keeps 0 of 10, pinned false, 0% of its device-time every hour
	// tiers: unknown tier: "gold" (want premium, standard or basic)
}
