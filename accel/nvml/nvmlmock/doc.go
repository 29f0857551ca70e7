// Package nvmlmock wires go-nvml's DGX mock servers (dgxa100, dgxh100,
// dgxh200, dgxb200) so that package accel/nvml can read them completely,
// and injects faults into them. The presets leave most NVML calls unset
// (calling one panics); New sets every call accel/nvml makes:
//
//   - PCI bus IDs ("00000000:0i:00.0", NVML's 8-digit-domain form) and a
//     synthetic PCIe tree: devices 2k and 2k+1 under one switch
//     (TOPOLOGY_SINGLE), 0–3 and 4–7 on NUMA nodes 0 and 1 (TOPOLOGY_NODE
//     within, TOPOLOGY_SYSTEM across).
//   - NVLink as on the real boards: every link goes to an NVSwitch (A100:
//     12 links over 6 switches; H100 and H200: 18 over 4; B200: 18 over 2),
//     so every GPU pair is all-to-all connected with the full lane count.
//   - Power (100 W + 1 W per index), the energy counter (1 MJ per index
//     plus one) and utilization (10 % per index).
//   - Event sets whose Wait returns the events queued by InjectXid, or
//     ERROR_TIMEOUT after the requested wait.
//
// UUIDs stay random per New, as in go-nvml. The package needs cgo on Linux,
// like go-nvml itself; without it the package is empty.
package nvmlmock
