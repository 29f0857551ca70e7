// Package accel describes what accelerators a cluster has, how they are
// connected and whether they are healthy: the lowest floor of goodsched.
//
// A Cluster is a plain value: Nodes, each with Devices (an index, a UUID,
// the product name, a canonical TypeKey, memory, compute capability,
// architecture, PCI bus ID, NUMA node, MIG instances as child devices,
// health) and Links between device pairs (NVLink lanes and PCIe distance).
// Canonical type keys come from a documented table of known NVIDIA products
// (Products, TypeFromProduct); a product outside the table still gets a
// stable key derived from its name.
//
// An Inventory produces Clusters. This package provides Static, built from
// a declarative description, either JSON (Spec) or the shorthand
// "NODESxDEVICES:TYPE,…" (ParseSpec); package accel/nvml reads a real
// machine through NVML. Inventories that can report faults also implement
// HealthSource.
//
// The host uses it in these steps:
//
//  1. Build an Inventory: NewStaticSpec("6x4:t4,2x8:a100-40gb") for tests
//     and simulators, or accel/nvml's Open on a GPU machine.
//  2. Call Snapshot(ctx) at the start of each scheduling round and hand the
//     Cluster to the policy and placer. Check it with Validate if it comes
//     from outside. Schedule only devices with Healthy set; Count and
//     Counts already skip the others.
//  3. Optionally, if the inventory is a HealthSource, call Health(ctx) once
//     and react to each HealthEvent (a Critical one means: move work off the
//     device and take a new Snapshot). The stream ends when ctx ends.
//  4. In simulations, inject faults with Static.Apply, MarkUnhealthy and
//     MarkHealthy; every Health stream sees them.
//
// Nothing in this package starts a goroutine except Static.Health, whose
// goroutine ends with its context. No state is global.
package accel
