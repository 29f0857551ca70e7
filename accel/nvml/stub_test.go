//go:build !(cgo && linux)

package nvml_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/nvml"
)

func TestStubUnavailable(t *testing.T) {
	inv, err := nvml.Open(nvml.WithNodeName("x"))
	if inv != nil || !errors.Is(err, accel.ErrUnavailable) {
		t.Fatalf("Open = %v, %v", inv, err)
	}
	var z nvml.Inventory
	if _, err := z.Snapshot(context.Background()); !errors.Is(err, accel.ErrUnavailable) {
		t.Error(err)
	}
	if _, err := z.Health(context.Background()); !errors.Is(err, accel.ErrUnavailable) {
		t.Error(err)
	}
	if z.Close() != nil {
		t.Error("Close failed")
	}
}
