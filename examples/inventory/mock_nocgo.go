//go:build !(cgo && linux)

package main

import (
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/nvml"
)

// openMock fails: go-nvml's mock presets need cgo on linux.
func openMock(preset, node string) (*nvml.Inventory, error) {
	return nil, fmt.Errorf("%w: mock preset %q needs cgo on linux (rebuild with CGO_ENABLED=1)", accel.ErrUnavailable, preset)
}
