package placement

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// maxSlotDevices is the most devices of one type a node may hold: the free
// devices of a (node, type) pair are kept in a uint64 bit mask.
const maxSlotDevices = 64

// devInfo is the immutable description of one device.
type devInfo struct {
	id    string
	node  int32 // internal node index (rank by name)
	slot  int32 // slot within the node
	bit   uint8 // bit within the slot
	index int   // accel.Device.Index
	numa  int
}

// slotInfo describes the devices of one type on one node.
type slotInfo struct {
	typ  int32
	devs []int32 // global device numbers, by bit (sorted by device index)
	off  int32   // offset of this slot's owners in nodeUse.owner
	// offer has a bit set for each device that may ever be offered (not a
	// MIG-enabled parent).
	offer uint64
	// w is the pair affinity matrix (len(devs)²), nil when no pair has a
	// link: NVLink lanes weigh 16 each, a known PCIe level adds 7−level.
	w []int32
	// uniform reports that every pair has the same affinity, so any set of
	// a given size is as good as the lowest-numbered one.
	uniform bool
	// islands are the NVLink-connected components; numas group devices by
	// known NUMA node. Both are bit masks over the slot.
	islands []uint64
	numas   []uint64
}

// nodeInfo is the immutable description of one node.
type nodeInfo struct {
	name   string
	slots  []slotInfo
	slotOf []int8 // by type number; -1 when the node has no such device
	ndev   int32
}

// index is the immutable, shared part of a State: the cluster's shape.
type index struct {
	types   []accel.TypeKey
	typeNum map[accel.TypeKey]int32
	nodes   []nodeInfo
	devs    []devInfo
	devByID map[string]int32
	healthy []bool // initial health, by device number
	// Per type: offerable devices, and the largest capacity one node, one
	// NVLink island and one NUMA node can offer.
	capTotal  []int
	maxNode   []int
	maxIsland []int
	maxNUMA   []int
	// capTop[t][k] is the sum of the k largest node capacities of type t.
	capTop [][]int
}

func buildIndex(c accel.Cluster) (*index, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: cluster: %w", ErrInvalid, err)
	}
	ix := &index{typeNum: make(map[accel.TypeKey]int32), devByID: make(map[string]int32)}
	ix.types = c.Types()
	for i, t := range ix.types {
		ix.typeNum[t] = int32(i)
	}
	nt := len(ix.types)
	order := make([]int, len(c.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(c.Nodes[a].Name, c.Nodes[b].Name) })
	ix.nodes = make([]nodeInfo, len(c.Nodes))
	ix.capTotal = make([]int, nt)
	ix.maxNode = make([]int, nt)
	ix.maxIsland = make([]int, nt)
	ix.maxNUMA = make([]int, nt)
	nodeCaps := make([][]int, nt)
	for ni, oi := range order {
		n := &c.Nodes[oi]
		info := nodeInfo{name: n.Name, slotOf: make([]int8, nt)}
		for t := range info.slotOf {
			info.slotOf[t] = -1
		}
		devs := slices.Clone(n.Devices)
		slices.SortFunc(devs, func(a, b accel.Device) int { return cmp.Compare(a.Index, b.Index) })
		byIndex := make(map[int]int32, len(devs))
		var off int32
		for _, d := range devs {
			t := ix.typeNum[d.Type]
			s := info.slotOf[t]
			if s < 0 {
				s = int8(len(info.slots))
				info.slotOf[t] = s
				info.slots = append(info.slots, slotInfo{typ: t})
			}
			sl := &info.slots[s]
			if len(sl.devs) == maxSlotDevices {
				return nil, fmt.Errorf("%w: node %q has more than %d devices of type %q", ErrInvalid, n.Name, maxSlotDevices, d.Type)
			}
			g := int32(len(ix.devs))
			bit := uint8(len(sl.devs))
			sl.devs = append(sl.devs, g)
			if !d.MIGEnabled && d.MIG == nil {
				sl.offer |= 1 << bit
			}
			ix.devs = append(ix.devs, devInfo{id: d.ID, node: int32(ni), slot: int32(s), bit: bit, index: d.Index, numa: d.NUMANode})
			ix.healthy = append(ix.healthy, d.Healthy)
			ix.devByID[d.ID] = g
			byIndex[d.Index] = g
		}
		if len(info.slots) > 127 {
			return nil, fmt.Errorf("%w: node %q has too many device types", ErrInvalid, n.Name)
		}
		for s := range info.slots {
			sl := &info.slots[s]
			sl.off = off
			off += int32(len(sl.devs))
			buildLinks(ix, sl, n.Links, byIndex)
			t := sl.typ
			k := bits.OnesCount64(sl.offer)
			ix.capTotal[t] += k
			ix.maxNode[t] = max(ix.maxNode[t], k)
			for _, m := range sl.islands {
				ix.maxIsland[t] = max(ix.maxIsland[t], bits.OnesCount64(m&sl.offer))
			}
			for _, m := range sl.numas {
				ix.maxNUMA[t] = max(ix.maxNUMA[t], bits.OnesCount64(m&sl.offer))
			}
			nodeCaps[t] = append(nodeCaps[t], k)
		}
		info.ndev = off
		ix.nodes[ni] = info
	}
	ix.capTop = make([][]int, nt)
	for t, caps := range nodeCaps {
		slices.SortFunc(caps, func(a, b int) int { return cmp.Compare(b, a) })
		top := make([]int, len(caps)+1)
		for i, k := range caps {
			top[i+1] = top[i] + k
		}
		ix.capTop[t] = top
	}
	return ix, nil
}

// buildLinks fills the affinity matrix, islands and NUMA groups of a slot.
func buildLinks(ix *index, sl *slotInfo, links []accel.Link, byIndex map[int]int32) {
	n := len(sl.devs)
	w := make([]int32, n*n)
	nv := make([]bool, n*n)
	any := false
	for _, l := range links {
		ga, oka := byIndex[l.A]
		gb, okb := byIndex[l.B]
		if !oka || !okb {
			continue
		}
		da, db := ix.devs[ga], ix.devs[gb]
		if int(da.bit) >= n || int(db.bit) >= n || sl.devs[da.bit] != ga || sl.devs[db.bit] != gb {
			continue
		}
		v := int32(16 * max(l.NVLinks, 0))
		if l.PCIe > accel.PCIeUnknown && l.PCIe <= accel.PCIeSystem {
			v += int32(7 - l.PCIe)
		}
		i, j := int(da.bit), int(db.bit)
		w[i*n+j], w[j*n+i] = v, v
		if l.NVLinks > 0 {
			nv[i*n+j], nv[j*n+i] = true, true
		}
		if v != 0 {
			any = true
		}
	}
	if any {
		sl.w = w
		sl.uniform = true
		first := int32(-1)
		for i := 0; i < n && sl.uniform; i++ {
			for j := i + 1; j < n; j++ {
				if first < 0 {
					first = w[i*n+j]
				} else if w[i*n+j] != first {
					sl.uniform = false
					break
				}
			}
		}
	} else {
		sl.uniform = true
	}
	// NVLink islands: connected components.
	seen := uint64(0)
	for i := range n {
		if seen&(1<<i) != 0 {
			continue
		}
		comp := uint64(1) << i
		stack := []int{i}
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for b := range n {
				if nv[a*n+b] && comp&(1<<b) == 0 {
					comp |= 1 << b
					stack = append(stack, b)
				}
			}
		}
		seen |= comp
		sl.islands = append(sl.islands, comp)
	}
	// NUMA groups, in order of NUMA id; unknown (-1) devices form none.
	byNUMA := map[int]uint64{}
	for b, g := range sl.devs {
		if d := ix.devs[g]; d.numa >= 0 {
			byNUMA[d.numa] |= 1 << b
		}
	}
	ids := make([]int, 0, len(byNUMA))
	for id := range byNUMA {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		sl.numas = append(sl.numas, byNUMA[id])
	}
}

// slot returns the slot of type t on node n, or nil.
func (ix *index) slot(n, t int32) *slotInfo {
	s := ix.nodes[n].slotOf[t]
	if s < 0 {
		return nil
	}
	return &ix.nodes[n].slots[s]
}
