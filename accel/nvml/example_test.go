//go:build cgo && linux

package nvml_test

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel/nvml"
	"github.com/goodsched/goodsched/accel/nvml/nvmlmock"
)

// Reading a DGX H100 mock; on a GPU machine, call nvml.Open() with no
// options instead.
func ExampleOpen() {
	srv, err := nvmlmock.New("dgxh100")
	if err != nil {
		fmt.Println(err)
		return
	}
	inv, err := nvml.Open(nvml.WithLibrary(srv), nvml.WithNodeName("dgx-0"))
	if err != nil {
		fmt.Println("NVML unavailable:", err)
		return
	}
	defer inv.Close()
	c, err := inv.Snapshot(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	n := c.Nodes[0]
	d := n.Devices[0]
	fmt.Println(n.Name, len(n.Devices), d.Type, d.MemoryBytes>>30, "GiB cc", d.ComputeCapability, d.PCIBusID)
	fmt.Println("NVLink lanes 0-7:", n.Lanes(0, 7), "peers of 0:", n.Peers(0))
	// Output:
	// dgx-0 8 h100-80gb 80 GiB cc 9.0 0000:00:00.0
	// NVLink lanes 0-7: 18 peers of 0: [1 2 3 4 5 6 7]
}
