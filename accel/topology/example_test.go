package topology_test

import (
	"fmt"

	"github.com/goodsched/goodsched/accel/topology"
)

// Import Slurm's topology/tree example, give its two switch tiers
// bandwidths, and ask which tier a gang on three nodes spans.
func Example() {
	conf := []byte(`SwitchName=s0 Nodes=dev[0-5]
SwitchName=s1 Nodes=dev[6-11]
SwitchName=s2 Nodes=dev[12-17]
SwitchName=s3 Switches=s[0-2]
`)
	top, err := topology.ParseSlurmConf(conf)
	if err != nil {
		fmt.Println(err)
		return
	}
	top, err = top.WithBandwidths(map[string]float64{"switch-0": 50, "switch-1": 12.5}) // GB/s
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range top.Levels() {
		fmt.Printf("level %s: %v GB/s\n", l.Name, l.Bandwidth)
	}
	for _, gang := range [][]string{{"dev0", "dev1", "dev2"}, {"dev0", "dev6", "dev12"}} {
		span, _ := top.Span(gang)
		fmt.Printf("%v spans %s (%s) at %v GB/s\n", gang, span.Domain, span.Level, span.Bandwidth)
	}
	leaf, _, _ := top.DomainOf("dev7", "switch-0")
	fmt.Println("dev7 is under", leaf.Name, "with", leaf.Nodes)
	// Output:
	// level switch-1: 12.5 GB/s
	// level switch-0: 50 GB/s
	// [dev0 dev1 dev2] spans s0 (switch-0) at 50 GB/s
	// [dev0 dev6 dev12] spans s3 (switch-1) at 12.5 GB/s
	// dev7 is under s1 with [dev10 dev11 dev6 dev7 dev8 dev9]
}
