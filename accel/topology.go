package accel

import (
	"slices"
	"strconv"
)

// String returns NVML's name of the level in lower case: "unknown",
// "internal", "single", "multiple", "hostbridge", "node" or "system".
func (l PCIeLevel) String() string {
	switch l {
	case PCIeUnknown:
		return "unknown"
	case PCIeInternal:
		return "internal"
	case PCIeSingle:
		return "single"
	case PCIeMultiple:
		return "multiple"
	case PCIeHostBridge:
		return "hostbridge"
	case PCIeNode:
		return "node"
	case PCIeSystem:
		return "system"
	}
	return "PCIeLevel(" + strconv.Itoa(int(l)) + ")"
}

// cubeMesh is the NVLink lane matrix of the DGX-1V (8 × V100 SXM2, hybrid
// cube-mesh, six lanes per GPU), as `nvidia-smi topo -m` shows it.
var cubeMesh = [8][8]int{
	{0, 1, 1, 2, 2, 0, 0, 0},
	{1, 0, 2, 1, 0, 2, 0, 0},
	{1, 2, 0, 2, 0, 0, 1, 0},
	{2, 1, 2, 0, 0, 0, 0, 1},
	{2, 0, 0, 0, 0, 1, 1, 2},
	{0, 2, 0, 0, 1, 0, 2, 1},
	{0, 0, 1, 0, 1, 2, 0, 2},
	{0, 0, 0, 1, 2, 1, 2, 0},
}

// CubeMeshLanes returns the NVLink lanes between positions a and b (0..7)
// of a DGX-1V hybrid cube-mesh island, 0 if they are not linked.
func CubeMeshLanes(a, b int) int {
	if a < 0 || b < 0 || a >= 8 || b >= 8 {
		return 0
	}
	return cubeMesh[a][b]
}

// LayoutLanes returns the NVLink lanes between device indices a and b of a
// node wired with layout. lanes is the lane count of a linked pair (for
// NVLinkPairs and NVLinkAllToAll) and island the number of consecutive
// devices one NVLink domain spans (0 = 8); devices in different islands are
// not linked. NVLinkCubeMesh always uses islands of 8 and the DGX-1V lanes.
func LayoutLanes(layout NVLinkLayout, lanes, island, a, b int) int {
	if a == b || a < 0 || b < 0 {
		return 0
	}
	if island <= 0 {
		island = 8
	}
	switch layout {
	case NVLinkPairs:
		if a/2 == b/2 {
			return lanes
		}
	case NVLinkAllToAll:
		if a/island == b/island {
			return lanes
		}
	case NVLinkCubeMesh:
		if a/8 == b/8 {
			return cubeMesh[a%8][b%8]
		}
	}
	return 0
}

// StandardNUMANode returns the NUMA node of device index i among n devices
// of a standard two-socket server: with n ≥ 4 the first ceil(n/2) devices
// sit on NUMA node 0 and the rest on node 1; smaller nodes use node 0 only.
func StandardNUMANode(i, n int) int {
	if n < 4 || i < (n+1)/2 {
		return 0
	}
	return 1
}

// StandardPCIe returns the PCIe distance between device indices a and b of
// n devices on a standard server: devices 2k and 2k+1 share a PCIe switch
// (PCIeSingle), or a board when boardPairs is set (PCIeInternal); other
// devices on the same NUMA node are PCIeNode apart and devices on different
// NUMA nodes PCIeSystem (see StandardNUMANode).
func StandardPCIe(a, b, n int, boardPairs bool) PCIeLevel {
	switch {
	case a == b:
		return PCIeUnknown
	case a/2 == b/2 && boardPairs:
		return PCIeInternal
	case a/2 == b/2:
		return PCIeSingle
	case StandardNUMANode(a, n) == StandardNUMANode(b, n):
		return PCIeNode
	}
	return PCIeSystem
}

// Lanes returns the number of NVLink lanes between device indices a and b
// of the node (0 if none or unknown).
func (n Node) Lanes(a, b int) int {
	if a > b {
		a, b = b, a
	}
	for _, l := range n.Links {
		if l.A == a && l.B == b || l.A == b && l.B == a {
			return l.NVLinks
		}
	}
	return 0
}

// Peers returns, for device index i of the node, the indices of the devices
// it has NVLink lanes to, in ascending order.
func (n Node) Peers(i int) []int {
	var ps []int
	for _, l := range n.Links {
		if l.NVLinks <= 0 {
			continue
		}
		switch i {
		case l.A:
			ps = append(ps, l.B)
		case l.B:
			ps = append(ps, l.A)
		}
	}
	slices.Sort(ps)
	return ps
}
