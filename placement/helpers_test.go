package placement

import (
	"fmt"

	"github.com/goodsched/goodsched/accel"
)

// nodeSpec describes a test node: count devices of one type, with an
// optional link builder.
type nodeSpec struct {
	name  string
	typ   accel.TypeKey
	count int
	links func(n int) []accel.Link
}

// fullMesh links every pair with the given NVLink lanes (NVSwitch).
func fullMesh(lanes int) func(int) []accel.Link {
	return func(n int) []accel.Link {
		var ls []accel.Link
		for a := range n {
			for b := a + 1; b < n; b++ {
				ls = append(ls, accel.Link{A: a, B: b, NVLinks: lanes, PCIe: accel.PCIeNode})
			}
		}
		return ls
	}
}

// pairs links devices 2i and 2i+1 only (two-GPU NVLink bridges), making
// islands of two.
func pairs(n int) []accel.Link {
	var ls []accel.Link
	for a := 0; a+1 < n; a += 2 {
		ls = append(ls, accel.Link{A: a, B: a + 1, NVLinks: 4})
	}
	return ls
}

// cubeMesh approximates the DGX-1 V100 hybrid cube mesh: two quads fully
// linked inside, one link across between matching devices.
func cubeMesh(n int) []accel.Link {
	var ls []accel.Link
	for a := range n {
		for b := a + 1; b < n; b++ {
			switch {
			case a/4 == b/4:
				ls = append(ls, accel.Link{A: a, B: b, NVLinks: 1 + (a+b)%2, PCIe: accel.PCIeHostBridge})
			case b == a+4:
				ls = append(ls, accel.Link{A: a, B: b, NVLinks: 1, PCIe: accel.PCIeSystem})
			}
		}
	}
	return ls
}

// testCluster builds a cluster from node specs; device IDs are
// "node/index", NUMA node index/4 (two per 8-GPU node), all healthy.
func testCluster(specs ...nodeSpec) accel.Cluster {
	var c accel.Cluster
	for _, sp := range specs {
		n := accel.Node{Name: sp.name}
		for i := range sp.count {
			n.Devices = append(n.Devices, accel.Device{
				ID: fmt.Sprintf("%s/%d", sp.name, i), Node: sp.name, Index: i,
				Type: sp.typ, NUMANode: i / 4, Healthy: true,
			})
		}
		if sp.links != nil {
			n.Links = sp.links(sp.count)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c
}

// uniform builds n nodes named prefix-%03d of count devices of type t.
func uniform(prefix string, n, count int, t accel.TypeKey, links func(int) []accel.Link) []nodeSpec {
	out := make([]nodeSpec, n)
	for i := range out {
		out[i] = nodeSpec{fmt.Sprintf("%s-%03d", prefix, i), t, count, links}
	}
	return out
}
