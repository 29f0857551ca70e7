//go:build cgo && linux

package nvml

import (
	"errors"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/goodsched/goodsched/accel"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		r    gonvml.Return
		kind error
	}{
		{gonvml.ERROR_LIBRARY_NOT_FOUND, accel.ErrUnavailable},
		{gonvml.ERROR_DRIVER_NOT_LOADED, accel.ErrUnavailable},
		{gonvml.ERROR_NO_PERMISSION, accel.ErrUnavailable},
		{gonvml.ERROR_UNINITIALIZED, accel.ErrUnavailable},
		{gonvml.ERROR_FUNCTION_NOT_FOUND, accel.ErrUnavailable},
		{gonvml.ERROR_GPU_IS_LOST, accel.ErrDeviceLost},
		{gonvml.ERROR_NOT_FOUND, accel.ErrNotFound},
		{gonvml.ERROR_INVALID_ARGUMENT, accel.ErrNotFound},
		{gonvml.ERROR_GPU_NOT_FOUND, accel.ErrNotFound},
		{gonvml.ERROR_UNKNOWN, nil},
		{gonvml.ERROR_NOT_SUPPORTED, nil},
	}
	for _, tt := range tests {
		err := wrap("Op", tt.r)
		if !errors.Is(err, tt.r) {
			t.Errorf("%v: does not wrap the Return", tt.r)
		}
		for _, s := range []error{accel.ErrUnavailable, accel.ErrDeviceLost, accel.ErrNotFound} {
			if errors.Is(err, s) != (s == tt.kind) {
				t.Errorf("%v: errors.Is(%v) = %v", tt.r, s, errors.Is(err, s))
			}
		}
	}
	if wrap("Op", gonvml.SUCCESS) != nil {
		t.Error("wrap(SUCCESS) != nil")
	}
	if !unknown(gonvml.ERROR_NOT_SUPPORTED) || unknown(gonvml.ERROR_GPU_IS_LOST) || unknown(gonvml.ERROR_UNKNOWN) {
		t.Error("unknown() misclassifies")
	}
}

func TestNormBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0",
		"0000:3b:00.0":     "0000:3b:00.0",
		"00000001:3B:00.0": "0001:3b:00.0",
		"10000000:3B:00.0": "10000000:3b:00.0",
		"":                 "",
	} {
		if got := normBusID(in); got != want {
			t.Errorf("normBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMIGNames(t *testing.T) {
	if got := migProfile("NVIDIA A100-SXM4-40GB MIG 1g.5gb"); got != "1g.5gb" {
		t.Errorf("profile %q", got)
	}
	if got := migProfile("NVIDIA A100-SXM4-40GB"); got != "" {
		t.Errorf("profile %q", got)
	}
	for _, tt := range []struct {
		prof string
		want accel.TypeKey
	}{
		{"1g.5gb", "a100-40gb-mig-1g-5gb"},
		{"1g.10gb+me", "a100-40gb-mig-1g-10gb-me"},
		{"", "a100-40gb-mig"},
		{"..", "a100-40gb-mig"},
	} {
		got := migType("a100-40gb", tt.prof)
		if got != tt.want || !accel.ValidTypeKey(string(got)) {
			t.Errorf("migType(%q) = %q, want %q", tt.prof, got, tt.want)
		}
	}
}
