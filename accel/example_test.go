package accel_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
)

func ExampleParseSpec() {
	c, err := accel.ParseSpec("2x4:t4,1x8:a100-40gb")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range c.Types() {
		fmt.Println(t, c.Count(t))
	}
	n := c.Nodes[2]
	fmt.Println(n.Name, n.Devices[3].ID, n.Devices[3].ComputeCapability)
	fmt.Println("nvlink 0-7:", n.Lanes(0, 7), "peers of 0:", n.Peers(0))
	// Output:
	// a100-40gb 8
	// t4 8
	// a100-40gb-0 a100-40gb-0/3 8.0
	// nvlink 0-7: 12 peers of 0: [1 2 3 4 5 6 7]
}

func ExampleTypeFromProduct() {
	fmt.Println(accel.TypeFromProduct("Mock NVIDIA A100-SXM4-40GB", 0))
	fmt.Println(accel.TypeFromProduct("NVIDIA A100-PCIE-80GB", 0))
	fmt.Println(accel.TypeFromProduct("NVIDIA H100 NVL", 0))
	fmt.Println(accel.TypeFromProduct("AMD Instinct MI300X", 0))
	// Output:
	// a100-40gb
	// a100-80gb
	// h100-94gb
	// amd-instinct-mi300x
}

func ExampleStatic_Health() {
	inv, err := accel.NewStaticSpec("1x4:t4")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	events, _ := inv.Health(ctx)
	_ = inv.Apply(accel.HealthEvent{Device: "t4-0/2", Kind: accel.HealthXid, Xid: 79, Critical: accel.CriticalXid(79)})
	ev := <-events
	fmt.Println(ev.Device, ev.Kind, ev.Xid, ev.Critical)
	c, _ := inv.Snapshot(ctx)
	fmt.Println("healthy t4:", c.Count("t4"))
	cancel()
	for range events { // drains, then ends: the stream is closed with ctx
	}
	// Output:
	// t4-0/2 xid 79 true
	// healthy t4: 3
}
