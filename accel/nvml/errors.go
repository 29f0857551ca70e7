//go:build cgo && linux

package nvml

import (
	"errors"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/goodsched/goodsched/accel"
)

// callError is a failed NVML call. It wraps the accel sentinel of its class
// (if any) and the nvml.Return.
type callError struct {
	op   string
	ret  gonvml.Return
	kind error // accel sentinel or nil
}

func (e *callError) Error() string {
	msg := "nvml " + e.op + ": " + e.ret.Error()
	switch e.ret {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		msg += " (libnvidia-ml.so.1 not found: is the NVIDIA driver installed?)"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		msg += " (the NVIDIA kernel driver is not loaded)"
	case gonvml.ERROR_NO_PERMISSION:
		msg += " (permission denied on the NVIDIA device files)"
	}
	return msg
}

func (e *callError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.ret}
	}
	return []error{e.kind, e.ret}
}

// classify returns the accel sentinel for an NVML return code, or nil.
func classify(r gonvml.Return) error {
	switch r {
	case gonvml.ERROR_LIBRARY_NOT_FOUND, gonvml.ERROR_DRIVER_NOT_LOADED, gonvml.ERROR_NO_PERMISSION,
		gonvml.ERROR_UNINITIALIZED, gonvml.ERROR_FUNCTION_NOT_FOUND, gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return accel.ErrUnavailable
	case gonvml.ERROR_GPU_IS_LOST:
		return accel.ErrDeviceLost
	case gonvml.ERROR_NOT_FOUND, gonvml.ERROR_INVALID_ARGUMENT, gonvml.ERROR_GPU_NOT_FOUND:
		return accel.ErrNotFound
	}
	return nil
}

// wrap returns nil for SUCCESS and a *callError otherwise.
func wrap(op string, r gonvml.Return) error {
	if r == gonvml.SUCCESS {
		return nil
	}
	return &callError{op: op, ret: r, kind: classify(r)}
}

// unknown reports return codes that mean "this reading is not available
// here", not "the device is failing".
func unknown(r gonvml.Return) bool {
	switch r {
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND, gonvml.ERROR_NO_PERMISSION,
		gonvml.ERROR_NOT_FOUND, gonvml.ERROR_INVALID_ARGUMENT, gonvml.ERROR_NO_DATA, gonvml.ERROR_NOT_READY:
		return true
	}
	return false
}

// faultText describes a device fault for accel.Device.Fault.
func faultText(err error) string {
	if errors.Is(err, accel.ErrDeviceLost) {
		return "device lost: " + err.Error()
	}
	return err.Error()
}
