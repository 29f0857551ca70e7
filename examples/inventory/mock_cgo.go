//go:build cgo && linux

package main

import (
	"github.com/goodsched/goodsched/accel/nvml"
	"github.com/goodsched/goodsched/accel/nvml/nvmlmock"
)

// openMock reads a go-nvml mock preset through the NVML backend.
func openMock(preset, node string) (*nvml.Inventory, error) {
	srv, err := nvmlmock.New(preset)
	if err != nil {
		return nil, err
	}
	return nvml.Open(nvml.WithLibrary(srv), nvml.WithNodeName(node))
}
