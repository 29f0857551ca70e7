// Package nvml is an accel.Inventory over NVIDIA's NVML library, through
// github.com/NVIDIA/go-nvml.
//
// It needs cgo on Linux (build tag "cgo && linux"); elsewhere Open returns
// an error wrapping accel.ErrUnavailable, so programs that import it still
// build with CGO_ENABLED=0. The binary does not link libnvidia-ml: the
// library is opened when Open runs, and a machine without the NVIDIA driver
// gets an accel.ErrUnavailable error, never a crash.
//
// The host uses it in these steps:
//
//  1. Open(opts...) initialises NVML once. A failed Init returns an error
//     wrapping accel.ErrUnavailable and the nvml.Return; no other NVML
//     function is ever called after a failed Init (NVML would kill the
//     process). WithLibrary injects any nvml.Interface, for example a
//     go-nvml mock server (see package nvmlmock).
//  2. Snapshot(ctx) reads one node: per device the name, UUID, canonical
//     type (accel.TypeFromProduct), memory, compute capability,
//     architecture, PCI bus ID, NUMA node, MIG mode and MIG instances (as
//     child devices), power, the total energy counter and utilization; per
//     device pair the NVLink lanes (from GetNvLinkState and
//     GetNvLinkRemotePciInfo: direct links plus links through NVSwitch) and
//     the PCIe common ancestor. A reading the device does not support
//     (ERROR_NOT_SUPPORTED and the like) is left unknown; a device that
//     fails (ERROR_GPU_IS_LOST, ERROR_UNKNOWN, …) is returned with Healthy
//     false and the reason in Fault, and the other devices are unaffected.
//  3. Health(ctx) registers every device for critical events (Xid errors
//     and double-bit ECC errors) in an NVML event set and returns a channel
//     of accel.HealthEvent. One goroutine waits on the event set; it lives
//     only while ctx lives (and until Close): when ctx ends, the goroutine
//     frees the event set and closes the channel within one poll interval
//     (WithPollInterval). Critical events (accel.CriticalXid) are also
//     remembered, so later Snapshots report the device unhealthy.
//  4. Close ends every Health goroutine, then shuts NVML down.
//
// NVML return codes map to accel errors: ERROR_LIBRARY_NOT_FOUND,
// ERROR_DRIVER_NOT_LOADED, ERROR_NO_PERMISSION, ERROR_UNINITIALIZED and
// ERROR_FUNCTION_NOT_FOUND to accel.ErrUnavailable; ERROR_GPU_IS_LOST to
// accel.ErrDeviceLost; ERROR_NOT_FOUND, ERROR_INVALID_ARGUMENT and
// ERROR_GPU_NOT_FOUND to accel.ErrNotFound. Every error also wraps the
// nvml.Return itself, so errors.Is(err, nvml.ERROR_GPU_IS_LOST) works.
//
// Inventory is safe for concurrent use.
package nvml
