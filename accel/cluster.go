package accel

import "slices"

// Clone returns a deep copy of the cluster: no slice or pointer is shared
// with c.
func (c Cluster) Clone() Cluster {
	out := Cluster{Nodes: make([]Node, len(c.Nodes))}
	for i, n := range c.Nodes {
		out.Nodes[i] = Node{Name: n.Name, Devices: cloneDevices(n.Devices), Links: slices.Clone(n.Links)}
	}
	if c.Nodes == nil {
		out.Nodes = nil
	}
	return out
}

func cloneDevices(ds []Device) []Device {
	if ds == nil {
		return nil
	}
	out := make([]Device, len(ds))
	for i, d := range ds {
		if d.MIG != nil {
			m := *d.MIG
			d.MIG = &m
		}
		d.Instances = cloneDevices(d.Instances)
		out[i] = d
	}
	return out
}

// Node returns the node with the given name.
func (c Cluster) Node(name string) (Node, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// setHealth sets Healthy and Fault of the device (or MIG instance) with the
// given ID, in place. It reports whether the device exists.
func (c *Cluster) setHealth(id string, healthy bool, fault string) bool {
	for i := range c.Nodes {
		if setHealthIn(c.Nodes[i].Devices, id, healthy, fault) {
			return true
		}
	}
	return false
}

func setHealthIn(ds []Device, id string, healthy bool, fault string) bool {
	for j := range ds {
		d := &ds[j]
		if d.ID == id {
			d.Healthy = healthy
			d.Fault = ""
			if !healthy {
				d.Fault = fault
			}
			// A fault on a parent takes its instances down with it.
			for k := range d.Instances {
				if !healthy {
					d.Instances[k].Healthy, d.Instances[k].Fault = false, fault
				}
			}
			return true
		}
		if setHealthIn(d.Instances, id, healthy, fault) {
			return true
		}
	}
	return false
}
