// Package goodsched decides how deep-learning jobs share a cluster of
// accelerators. It computes decisions; the host orchestrator applies them.
//
// The packages, from the bottom up:
//
//   - accel: devices, nodes and clusters; the Inventory interface with a
//     static backend and an NVML backend (accel/nvml).
//   - goodput: Pollux's goodput model per job and accelerator type, fitted
//     online from the job's own measurements; batch-size choice; speedup
//     curves for cluster policies.
//   - placement: which concrete devices serve each gang, aware of nodes,
//     NVLink, NUMA and fragmentation.
//   - scheduler: elastic and heterogeneity-aware allocation policies and
//     the per-round Plan; scheduler/dispatch for duplication-aware task
//     dispatch; scheduler/sim, a trace-driven simulator.
//   - carbon: carbon-intensity series, forecasts and carbon-aware scaling
//     plans for delay-tolerant elastic work.
//
// This root package holds documentation only.
package goodsched
