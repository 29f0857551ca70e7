package accel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// TypeKey is the canonical name of an accelerator type, such as "h100-80gb",
// "a100-40gb" or "t4". Devices with the same TypeKey are interchangeable for
// scheduling. Keys are lower case and contain only [a-z0-9-].
type TypeKey string

// Errors returned by this package. They are wrapped with the offending field
// or value, so test with errors.Is.
var (
	// ErrInvalid reports a malformed description or cluster.
	ErrInvalid = errors.New("accel: invalid")
	// ErrUnavailable reports that a backend (for example NVML) cannot be used
	// on this machine.
	ErrUnavailable = errors.New("accel: unavailable")
	// ErrNotFound reports a device or node that does not exist.
	ErrNotFound = errors.New("accel: not found")
	// ErrDeviceLost reports a device that stopped answering (fell off the bus).
	ErrDeviceLost = errors.New("accel: device lost")
)

// MIG describes a Multi-Instance GPU partition of a parent device.
type MIG struct {
	// Profile is the NVIDIA profile name, for example "1g.10gb".
	Profile string `json:"profile,omitempty"`
	// GPUInstance and ComputeInstance are NVML's instance identifiers.
	GPUInstance int `json:"gpu_instance"`
	// ComputeInstance is NVML's compute instance identifier.
	ComputeInstance int `json:"compute_instance"`
}

// Device is one accelerator (or one MIG instance of one).
type Device struct {
	// ID is unique within a Cluster. Static inventories use "node/index";
	// NVML uses the device UUID.
	ID string `json:"id"`
	// Node is the name of the node the device is attached to.
	Node string `json:"node"`
	// Index is the device's ordinal on its node.
	Index int `json:"index"`
	// UUID is the vendor's identifier, when known.
	UUID string `json:"uuid,omitempty"`
	// Product is the vendor's product name, for example "NVIDIA H100 80GB HBM3".
	Product string `json:"product,omitempty"`
	// Type is the canonical type key.
	Type TypeKey `json:"type"`
	// MemoryBytes is the device's total memory.
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// ComputeCapability is the CUDA compute capability, for example "9.0".
	ComputeCapability string `json:"compute_capability,omitempty"`
	// Architecture is the GPU architecture name, for example "hopper".
	Architecture string `json:"architecture,omitempty"`
	// PCIBusID is the PCI bus identifier, for example "0000:3b:00.0".
	PCIBusID string `json:"pci_bus_id,omitempty"`
	// NUMANode is the host NUMA node closest to the device, or -1 if unknown.
	NUMANode int `json:"numa_node"`
	// MIGEnabled reports whether MIG mode is on for this device.
	MIGEnabled bool `json:"mig_enabled,omitempty"`
	// MIG is set on a MIG instance and names its partition.
	MIG *MIG `json:"mig,omitempty"`
	// Parent is the ID of the parent device of a MIG instance.
	Parent string `json:"parent,omitempty"`
	// Instances are the MIG instances carved out of this device.
	Instances []Device `json:"instances,omitempty"`
	// Healthy is false once a critical fault has been seen.
	Healthy bool `json:"healthy"`
	// Fault says why Healthy is false ("xid 79", "device lost: …"); empty
	// when healthy.
	Fault string `json:"fault,omitempty"`
	// PowerWatts, EnergyJoules and UtilizationPercent are the latest
	// readings, zero when the backend does not report them.
	PowerWatts float64 `json:"power_watts,omitempty"`
	// EnergyJoules is the device's total energy counter since the driver
	// loaded.
	EnergyJoules float64 `json:"energy_joules,omitempty"`
	// UtilizationPercent is the GPU utilization over the driver's last
	// sample period, 0..100.
	UtilizationPercent float64 `json:"utilization_percent,omitempty"`
}

// PCIeLevel is the PCIe distance between two devices, from nearest to
// farthest, following NVML's topology levels.
type PCIeLevel int

// PCIe topology levels.
const (
	PCIeUnknown    PCIeLevel = iota
	PCIeInternal             // same board (multi-GPU boards)
	PCIeSingle               // one PCIe switch
	PCIeMultiple             // several PCIe switches, no host bridge
	PCIeHostBridge           // same host bridge
	PCIeNode                 // same NUMA node, across host bridges
	PCIeSystem               // across NUMA nodes (SMP interconnect)
)

// Link is a connection between two devices of one node.
type Link struct {
	// A and B are device indices on the node, A < B.
	A int `json:"a"`
	// B is the other device index.
	B int `json:"b"`
	// NVLinks is the number of NVLink lanes between A and B (0 = none).
	NVLinks int `json:"nvlinks"`
	// PCIe is the PCIe distance between A and B.
	PCIe PCIeLevel `json:"pcie"`
}

// Node is one machine and its devices.
type Node struct {
	// Name is unique within a Cluster.
	Name string `json:"name"`
	// Devices are the node's devices, in index order.
	Devices []Device `json:"devices"`
	// Links lists device pairs; pairs not listed have no NVLink and an
	// unknown PCIe distance.
	Links []Link `json:"links,omitempty"`
}

// Cluster is a snapshot of nodes and their devices. It is a plain value:
// safe for concurrent reads, and not modified by this package.
type Cluster struct {
	// Nodes are the cluster's machines.
	Nodes []Node `json:"nodes"`
}

// Types returns the distinct device types of the cluster, sorted.
func (c Cluster) Types() []TypeKey {
	var ts []TypeKey
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			ts = append(ts, d.Type)
		}
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// Count returns the number of healthy devices of type t.
func (c Cluster) Count(t TypeKey) int {
	k := 0
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if d.Type == t && d.Healthy {
				k++
			}
		}
	}
	return k
}

// Counts returns the number of healthy devices per type.
func (c Cluster) Counts() map[TypeKey]int {
	m := make(map[TypeKey]int)
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if d.Healthy {
				m[d.Type]++
			}
		}
	}
	return m
}

// Size returns the total number of devices, healthy or not.
func (c Cluster) Size() int {
	k := 0
	for _, n := range c.Nodes {
		k += len(n.Devices)
	}
	return k
}

// Device returns the device, or MIG instance, with the given ID.
func (c Cluster) Device(id string) (Device, bool) {
	for _, n := range c.Nodes {
		if d, ok := findIn(n.Devices, id); ok {
			return d, true
		}
	}
	return Device{}, false
}

func findIn(ds []Device, id string) (Device, bool) {
	for _, d := range ds {
		if d.ID == id {
			return d, true
		}
		if m, ok := findIn(d.Instances, id); ok {
			return m, true
		}
	}
	return Device{}, false
}

// Validate checks that node names and device IDs are non-empty and unique,
// that every device names its node and has a well-formed type key (see
// ValidTypeKey), and that links refer to devices of their node.
func (c Cluster) Validate() error {
	nodes := make(map[string]bool, len(c.Nodes))
	ids := make(map[string]bool)
	for i, n := range c.Nodes {
		if n.Name == "" {
			return fmt.Errorf("%w: nodes[%d].name is empty", ErrInvalid, i)
		}
		if nodes[n.Name] {
			return fmt.Errorf("%w: nodes[%d].name %q is duplicated", ErrInvalid, i, n.Name)
		}
		nodes[n.Name] = true
		idx := make(map[int]bool, len(n.Devices))
		for j, d := range n.Devices {
			switch {
			case d.ID == "":
				return fmt.Errorf("%w: node %q devices[%d].id is empty", ErrInvalid, n.Name, j)
			case ids[d.ID]:
				return fmt.Errorf("%w: node %q device id %q is duplicated", ErrInvalid, n.Name, d.ID)
			case d.Node != n.Name:
				return fmt.Errorf("%w: device %q names node %q but is on %q", ErrInvalid, d.ID, d.Node, n.Name)
			case d.Type == "":
				return fmt.Errorf("%w: device %q has no type", ErrInvalid, d.ID)
			case !ValidTypeKey(string(d.Type)):
				return fmt.Errorf("%w: device %q: type %q is not a type key (1-64 characters of [a-z0-9-]; see CanonicalType)", ErrInvalid, d.ID, d.Type)
			case idx[d.Index]:
				return fmt.Errorf("%w: node %q device index %d is duplicated", ErrInvalid, n.Name, d.Index)
			}
			ids[d.ID] = true
			idx[d.Index] = true
		}
		for k, l := range n.Links {
			if !idx[l.A] || !idx[l.B] || l.A == l.B || l.NVLinks < 0 {
				return fmt.Errorf("%w: node %q links[%d] (%d-%d) is not a pair of its devices", ErrInvalid, n.Name, k, l.A, l.B)
			}
		}
	}
	return nil
}

// SortDevices orders devices by node name, then index: the canonical order
// used wherever ties must be broken deterministically.
func SortDevices(ds []Device) {
	slices.SortFunc(ds, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Index, b.Index), cmp.Compare(a.ID, b.ID))
	})
}

// HealthKind classifies a health event.
type HealthKind int

// Health event kinds. The zero value is invalid.
const (
	// HealthXid is a critical Xid error reported by the driver.
	HealthXid HealthKind = iota + 1
	// HealthLost is a device that stopped answering.
	HealthLost
	// HealthRecovered is a device that is usable again.
	HealthRecovered
)

// HealthEvent reports a change in a device's health.
type HealthEvent struct {
	// Time is when the backend saw the event.
	Time   time.Time `json:"time"`
	Device string    `json:"device"` // Device.ID
	// Kind classifies the event.
	Kind HealthKind `json:"kind"`
	// Xid is the Xid error code for HealthXid events.
	Xid int `json:"xid,omitempty"`
	// Critical reports whether the device should no longer be scheduled.
	Critical bool `json:"critical"`
	// Message describes the event for people.
	Message string `json:"message,omitempty"`
}

// Inventory reports what accelerators exist. Implementations document
// whether they are safe for concurrent use.
type Inventory interface {
	// Snapshot returns the current cluster.
	Snapshot(ctx context.Context) (Cluster, error)
}

// HealthSource is implemented by inventories that can stream health events.
// Check for it with a type assertion. The channel is closed when ctx is done
// or the source fails.
type HealthSource interface {
	Health(ctx context.Context) (<-chan HealthEvent, error)
}
