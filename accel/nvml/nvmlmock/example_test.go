//go:build cgo && linux

package nvmlmock_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel/nvml"
	"github.com/goodsched/goodsched/accel/nvml/nvmlmock"
)

// A DGX A100 mock with one GPU fallen off the bus: accel/nvml reports that
// device unhealthy and the other seven as usual.
func Example() {
	srv, err := nvmlmock.New("dgxa100")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.LoseDevice(3)
	inv, err := nvml.Open(nvml.WithLibrary(srv), nvml.WithNodeName("dgx-0"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	c, err := inv.Snapshot(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	healthy := 0
	for _, d := range c.Nodes[0].Devices {
		if d.Healthy {
			healthy++
		}
	}
	fmt.Println(c.Nodes[0].Devices[0].Type, "healthy:", healthy, "of", len(c.Nodes[0].Devices))
	// Output:
	// a100-40gb healthy: 7 of 8
}
