//go:build !(cgo && linux)

package nvml

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
)

// library stands in for nvml.Interface where go-nvml cannot be built.
type library = struct{}

// Inventory is an accel.Inventory over NVML. In this build (no cgo, or not
// Linux) it cannot be opened.
type Inventory struct{}

var errNoCgo = fmt.Errorf("%w: NVML support needs cgo on linux (this binary was built without it)", accel.ErrUnavailable)

// Open fails with accel.ErrUnavailable: this build has no NVML support.
func Open(opts ...Option) (*Inventory, error) { return nil, errNoCgo }

// Snapshot fails with accel.ErrUnavailable.
func (inv *Inventory) Snapshot(ctx context.Context) (accel.Cluster, error) {
	return accel.Cluster{}, errNoCgo
}

// Health fails with accel.ErrUnavailable.
func (inv *Inventory) Health(ctx context.Context) (<-chan accel.HealthEvent, error) {
	return nil, errNoCgo
}

// Close does nothing.
func (inv *Inventory) Close() error { return nil }
