package placement

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/goodsched/goodsched/accel"
)

// Index is a cluster validated and indexed once, from which States with
// different current assignments are built without indexing the cluster
// again (a host that places round after round on the same cluster keeps
// one). It is immutable, but for what it builds on first use (the values
// clients keep with it, Derived, and the State of no job NewState starts
// from): safe for concurrent use.
type Index struct {
	// ix is the cluster's shape, shared with every State built from x.
	ix  *shape
	key snapshotKey
	// derived holds the values clients derived from the index (Derived).
	derived sync.Map
}

// NewIndex validates and indexes the cluster (the errors NewState gives
// for the cluster).
func NewIndex(c accel.Cluster) (*Index, error) {
	ix, err := buildShape(c)
	if err != nil {
		return nil, err
	}
	return &Index{ix: ix, key: keyOf(&c)}, nil
}

// Indexes reports whether x is the index of c: c has the nodes (names,
// order, links) and devices (ID, node, index, type, health, NUMA node, MIG
// mode) of the snapshot x was built from, so it validates and indexes
// alike; readings such as power or utilisation may differ. A host that
// keeps the index of its last snapshot checks each new one with it
// instead of indexing again. It does not allocate.
func (x *Index) Indexes(c *accel.Cluster) bool {
	return x != nil && x.ix != nil && x.key.matches(c)
}

// snapshotKey is what validation and indexing read of a cluster.
type snapshotKey struct {
	names []string
	links [][]accel.Link
	devs  [][]deviceKey
}

// deviceKey is what a snapshot's key keeps of a device (devKey);
// snapshotKey.matches compares the same fields one by one, so a field
// added here must be added there too.
type deviceKey struct {
	id, node string
	typ      accel.TypeKey
	index    int
	numa     int
	healthy  bool
	mig      bool
}

func devKey(d *accel.Device) deviceKey {
	return deviceKey{d.ID, d.Node, d.Type, d.Index, d.NUMANode, d.Healthy, d.MIGEnabled}
}

func keyOf(c *accel.Cluster) snapshotKey {
	k := snapshotKey{names: make([]string, len(c.Nodes)), links: make([][]accel.Link, len(c.Nodes)), devs: make([][]deviceKey, len(c.Nodes))}
	for i, n := range c.Nodes {
		k.names[i] = n.Name
		k.links[i] = slices.Clone(n.Links)
		ds := make([]deviceKey, len(n.Devices))
		for j := range n.Devices {
			ds[j] = devKey(&n.Devices[j])
		}
		k.devs[i] = ds
	}
	return k
}

func (k *snapshotKey) matches(c *accel.Cluster) bool {
	if len(c.Nodes) != len(k.names) {
		return false
	}
	for i := range c.Nodes {
		n, kd := &c.Nodes[i], k.devs[i]
		if n.Name != k.names[i] || len(n.Devices) != len(kd) || !slices.Equal(n.Links, k.links[i]) {
			return false
		}
		// devKey(d) == kd[j], without copying d's key out: the fields
		// that are not strings first.
		for j := range kd {
			d, dk := &n.Devices[j], &kd[j]
			if dk.index != d.Index || dk.numa != d.NUMANode || dk.healthy != d.Healthy || dk.mig != d.MIGEnabled ||
				!sameString(dk.id, d.ID) || !sameString(dk.node, d.Node) || !sameString(string(dk.typ), string(d.Type)) {
				return false
			}
		}
	}
	return true
}

// sameString is a == b, answered without comparing bytes when a and b
// are the same string (the same bytes at the same address: a host that
// hands in the same snapshot round after round shares its strings with
// the key).
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// Derived returns the value kept with x under key, calling build to make
// it on first use; later calls with an equal key return that first value,
// without calling build. It lets a client that derives its own read-only
// structure from the cluster (a policy's view of its nodes, say) build it
// once per index rather than once per round. key must be comparable; as
// with context.Context values, a client should use a key of an unexported
// type of its own so that keys of different clients never collide.
// build may run more than once when several goroutines ask at the same
// time; one result is kept and returned to all of them. The value must
// then be treated as immutable, since every holder of x shares it. It
// returns build() on a nil or zero Index.
func (x *Index) Derived(key any, build func() any) any {
	if x == nil || x.ix == nil {
		return build()
	}
	if v, ok := x.derived.Load(key); ok {
		return v
	}
	v, _ := x.derived.LoadOrStore(key, build())
	return v
}

// NewState is NewState on the indexed cluster: the same State, and the
// same errors for the current assignments. When they hold few of the
// devices (a cluster mostly idle), it costs what they touch rather than
// the cluster's size: the State starts as a copy-on-write clone of the
// index's State of no job.
func (x *Index) NewState(current []Assignment) (*State, error) {
	if x == nil || x.ix == nil {
		return nil, errNoState
	}
	held := 0
	for i := range current {
		held += len(current[i].Devices)
	}
	if held*sparseShare > len(x.ix.devs) {
		return newState(x.ix, current)
	}
	return x.ix.fromEmpty(current)
}

// DeviceInfo is what an Index knows of one device of its snapshot.
type DeviceInfo struct {
	// ID, Node, Type and Index are the device's accel.Device fields.
	ID    string
	Node  string
	Type  accel.TypeKey
	Index int
	// Healthy is the device's health in the snapshot.
	Healthy bool
	// Offered is false for a MIG-enabled parent, which is never placed.
	Offered bool
}

// Usable reports whether the device may be given out: healthy and offered.
func (d DeviceInfo) Usable() bool { return d.Healthy && d.Offered }

// Types returns the device types of the cluster, sorted; a type's position
// in it is its TypeIndex.
func (x *Index) Types() []accel.TypeKey {
	if x == nil || x.ix == nil {
		return nil
	}
	return slices.Clone(x.ix.types)
}

// TypeIndex returns the position of type t in Types, and false for a type
// the cluster does not have.
func (x *Index) TypeIndex(t accel.TypeKey) (int, bool) {
	if x == nil || x.ix == nil {
		return 0, false
	}
	n, ok := x.ix.typeNum[t]
	return int(n), ok
}

// Usable returns how many devices of type t are usable (healthy in the
// snapshot and offered), the most on one node, and on how many nodes; zeros
// for a type the cluster does not have.
func (x *Index) Usable(t accel.TypeKey) (total, perNode, nodes int) {
	n, ok := x.TypeIndex(t)
	if !ok {
		return 0, 0, 0
	}
	return x.ix.usable[n], x.ix.usableNode[n], x.ix.usableNodes[n]
}

// Device returns what the index knows of the device with the given ID.
func (x *Index) Device(id string) (DeviceInfo, bool) {
	g, ok := x.num(id)
	if !ok {
		return DeviceInfo{}, false
	}
	return x.ix.info(g), true
}

// num returns the number of the device with the given ID.
func (x *Index) num(id string) (int32, bool) {
	if x == nil || x.ix == nil {
		return 0, false
	}
	g, ok := x.ix.devByID[id]
	return g, ok
}

// Nodes returns the number of nodes; nodes are numbered 0..Nodes()-1 in
// name order.
func (x *Index) Nodes() int {
	if x == nil || x.ix == nil {
		return 0
	}
	return len(x.ix.nodes)
}

// Node returns node n's name and devices, per type (in Types order) by
// device index; "" and nil for n outside 0..Nodes()-1.
func (x *Index) Node(n int) (string, []DeviceInfo) {
	if n < 0 || n >= x.Nodes() {
		return "", nil
	}
	node := &x.ix.nodes[n]
	devs := make([]DeviceInfo, 0, node.ndev)
	for _, t := range x.ix.types {
		if s := node.slotOf[x.ix.typeNum[t]]; s >= 0 {
			for _, g := range node.slots[s].devs {
				devs = append(devs, x.ix.info(g))
			}
		}
	}
	return node.name, devs
}

// info describes device number g.
func (ix *shape) info(g int32) DeviceInfo {
	d := &ix.devs[g]
	n := &ix.nodes[d.node]
	sl := &n.slots[d.slot]
	return DeviceInfo{ID: d.id, Node: n.name, Type: ix.types[d.typ], Index: d.index,
		Healthy: ix.healthy[g], Offered: sl.offer&(1<<d.bit) != 0}
}

// NodesOf returns how many nodes the devices with the given IDs span
// (unknown IDs count together as one more node).
func (x *Index) NodesOf(ids []string) int {
	if x == nil || x.ix == nil {
		return 0
	}
	var buf [16]int32
	nodes := buf[:0]
	var seen map[int32]bool // beyond 16 nodes
	prev := int32(-1)
	for _, id := range ids {
		n := int32(-1)
		if g, ok := x.ix.lookup(id, prev); ok {
			n, prev = x.ix.devs[g].node, g
		} else {
			prev = -1
		}
		switch {
		case seen != nil:
			seen[n] = true
		case !slices.Contains(nodes, n):
			nodes = append(nodes, n)
			if len(nodes) == len(buf) {
				seen = make(map[int32]bool, len(ids))
				for _, m := range nodes {
					seen[m] = true
				}
			}
		}
	}
	if seen != nil {
		return len(seen)
	}
	return len(nodes)
}

// maxSlotDevices is the most devices of one type a node may hold: the free
// devices of a (node, type) pair are kept in a uint64 bit mask.
const maxSlotDevices = 64

// devInfo is the immutable description of one device.
type devInfo struct {
	id     string
	node   int32 // internal node index (rank by name)
	slot   int32 // slot within the node
	bit    uint8 // bit within the slot
	usable bool  // healthy in the snapshot and offered
	typ    int32 // type number
	index  int   // accel.Device.Index
	numa   int
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

// shape is the immutable part of an Index that its States share: the
// cluster's nodes, devices, links and capacities, numbered.
type shape struct {
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
	// Per type, counting only devices healthy in the snapshot that may be
	// offered: how many, the most on one node, and on how many nodes.
	usable, usableNode, usableNodes []int
	// empty is the State of no job, built on first use (emptyOnce) by an
	// Index's NewState and never written: States with few current
	// devices start as its clone (fromEmpty). emptyMu serialises the
	// clones, since Clone writes the copy-on-write marks of its source.
	emptyOnce sync.Once
	emptyMu   sync.Mutex
	empty     *State
}

func buildShape(c accel.Cluster) (*shape, error) {
	// Validate as accel.Cluster.Validate does, in the same pass that
	// builds the index (one map instead of three).
	ndev := c.Size()
	ix := &shape{typeNum: make(map[accel.TypeKey]int32), devByID: make(map[string]int32, ndev)}
	ix.devs = make([]devInfo, 0, ndev)
	ix.healthy = make([]bool, 0, ndev)
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if _, ok := ix.typeNum[d.Type]; !ok {
				ix.typeNum[d.Type] = 0
				ix.types = append(ix.types, d.Type)
			}
		}
	}
	slices.Sort(ix.types)
	for i, t := range ix.types {
		ix.typeNum[t] = int32(i)
	}
	nt := len(ix.types)
	order := make([]int, len(c.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(c.Nodes[a].Name, c.Nodes[b].Name) })
	for i, oi := range order {
		name := c.Nodes[oi].Name
		if name == "" {
			return nil, fmt.Errorf("%w: cluster nodes[%d].name is empty", ErrInvalid, oi)
		}
		if i > 0 && c.Nodes[order[i-1]].Name == name {
			return nil, fmt.Errorf("%w: cluster node name %q is duplicated", ErrInvalid, name)
		}
	}
	ix.nodes = make([]nodeInfo, len(c.Nodes))
	ix.capTotal = make([]int, nt)
	ix.maxNode = make([]int, nt)
	ix.maxIsland = make([]int, nt)
	ix.maxNUMA = make([]int, nt)
	ix.usable = make([]int, nt)
	ix.usableNode = make([]int, nt)
	ix.usableNodes = make([]int, nt)
	nodeCaps := make([][]int, nt)
	var pos []int // scratch: a node's device positions sorted by index
	var byIndex []idxDev
	for ni, oi := range order {
		n := &c.Nodes[oi]
		info := nodeInfo{name: n.Name, slotOf: make([]int8, nt)}
		for t := range info.slotOf {
			info.slotOf[t] = -1
		}
		pos = pos[:0]
		for i := range n.Devices {
			pos = append(pos, i)
		}
		slices.SortFunc(pos, func(a, b int) int { return cmp.Compare(n.Devices[a].Index, n.Devices[b].Index) })
		byIndex = byIndex[:0]
		var off int32
		for k, i := range pos {
			d := &n.Devices[i]
			switch {
			case d.ID == "":
				return nil, fmt.Errorf("%w: node %q devices[%d].id is empty", ErrInvalid, n.Name, i)
			case d.Node != n.Name:
				return nil, fmt.Errorf("%w: device %q names node %q but is on %q", ErrInvalid, d.ID, d.Node, n.Name)
			case d.Type == "":
				return nil, fmt.Errorf("%w: device %q has no type", ErrInvalid, d.ID)
			case k > 0 && n.Devices[pos[k-1]].Index == d.Index:
				return nil, fmt.Errorf("%w: node %q device index %d is duplicated", ErrInvalid, n.Name, d.Index)
			}
			if _, dup := ix.devByID[d.ID]; dup {
				return nil, fmt.Errorf("%w: device id %q is duplicated", ErrInvalid, d.ID)
			}
			t := ix.typeNum[d.Type]
			s := info.slotOf[t]
			if s < 0 {
				if len(info.slots) == 127 {
					return nil, fmt.Errorf("%w: node %q has too many device types", ErrInvalid, n.Name)
				}
				s = int8(len(info.slots))
				info.slotOf[t] = s
				info.slots = append(info.slots, slotInfo{typ: t, devs: make([]int32, 0, len(n.Devices))})
			}
			sl := &info.slots[s]
			if len(sl.devs) == maxSlotDevices {
				return nil, fmt.Errorf("%w: node %q has more than %d devices of type %q", ErrInvalid, n.Name, maxSlotDevices, d.Type)
			}
			// Device numbers follow node (name) then device index order;
			// State.ids and DeviceRef.Num rely on it.
			g := int32(len(ix.devs))
			bit := uint8(len(sl.devs))
			sl.devs = append(sl.devs, g)
			if !d.MIGEnabled {
				sl.offer |= 1 << bit
			}
			ix.devs = append(ix.devs, devInfo{id: d.ID, node: int32(ni), slot: int32(s), bit: bit,
				usable: d.Healthy && !d.MIGEnabled, typ: t, index: d.Index, numa: d.NUMANode})
			ix.healthy = append(ix.healthy, d.Healthy)
			ix.devByID[d.ID] = g
			byIndex = append(byIndex, idxDev{d.Index, g})
		}
		for k, l := range n.Links {
			_, oka := findIndex(byIndex, l.A)
			_, okb := findIndex(byIndex, l.B)
			if !oka || !okb || l.A == l.B || l.NVLinks < 0 {
				return nil, fmt.Errorf("%w: node %q links[%d] (%d-%d) is not a pair of its devices", ErrInvalid, n.Name, k, l.A, l.B)
			}
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
			u := 0
			for b, g := range sl.devs {
				if sl.offer&(1<<b) != 0 && ix.healthy[g] {
					u++
				}
			}
			if u > 0 {
				ix.usable[t] += u
				ix.usableNode[t] = max(ix.usableNode[t], u)
				ix.usableNodes[t]++
			}
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
func buildLinks(ix *shape, sl *slotInfo, links []accel.Link, byIndex []idxDev) {
	n := len(sl.devs)
	var w []int32
	var adj [maxSlotDevices]uint64 // NVLink adjacency
	for _, l := range links {
		ga, oka := findIndex(byIndex, l.A)
		gb, okb := findIndex(byIndex, l.B)
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
		if v != 0 && w == nil {
			w = make([]int32, n*n)
		}
		if w != nil {
			w[i*n+j], w[j*n+i] = v, v
		}
		if l.NVLinks > 0 {
			adj[i] |= 1 << j
			adj[j] |= 1 << i
		}
	}
	if w != nil {
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
	sl.islands = make([]uint64, 0, n)
	seen := uint64(0)
	for i := range n {
		if seen&(1<<i) != 0 {
			continue
		}
		comp := uint64(1) << i
		for frontier := comp; frontier != 0; {
			var next uint64
			for f := frontier; f != 0; f &= f - 1 {
				next |= adj[bits.TrailingZeros64(f)]
			}
			frontier = next &^ comp
			comp |= next
		}
		seen |= comp
		sl.islands = append(sl.islands, comp)
	}
	// NUMA groups, in order of NUMA id; unknown (-1) devices form none.
	var ids []int
	for _, g := range sl.devs {
		if d := ix.devs[g]; d.numa >= 0 && !slices.Contains(ids, d.numa) {
			ids = append(ids, d.numa)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		var m uint64
		for b, g := range sl.devs {
			if ix.devs[g].numa == id {
				m |= 1 << b
			}
		}
		sl.numas = append(sl.numas, m)
	}
}

// idxDev maps a device index on a node to its device number; a node's
// list is sorted by index.
type idxDev struct {
	index int
	g     int32
}

func findIndex(list []idxDev, index int) (int32, bool) {
	if index >= 0 && index < len(list) && list[index].index == index {
		return list[index].g, true // dense indices 0..n-1, the usual case
	}
	lo, hi := 0, len(list)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if list[m].index < index {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(list) && list[lo].index == index {
		return list[lo].g, true
	}
	return 0, false
}

// DeviceRef is a device of an Index in numbers: what a loop over many
// assignments needs of each device, found with one lookup by ID.
type DeviceRef struct {
	// Num is the device's number, 0..Devices()−1: devices are numbered
	// node by node (in name order, as Node numbers them), by device index
	// within a node.
	Num int
	// Node is the number of its node (see Node).
	Node int
	// Type is the position of its type in Types.
	Type int
	// Usable reports whether it may be given out (DeviceInfo.Usable).
	Usable bool
}

// Ref returns the device with the given ID in numbers.
func (x *Index) Ref(id string) (DeviceRef, bool) {
	g, ok := x.num(id)
	if !ok {
		return DeviceRef{}, false
	}
	return x.ix.ref(g), true
}

// AppendRefs appends the devices with the given IDs, in numbers, to refs
// and reports whether every ID is known; at an unknown one it stops (the
// refs appended are those of the IDs before it). A list that names a
// node's devices in index order, as placements do, resolves faster than
// ID by ID.
func (x *Index) AppendRefs(refs []DeviceRef, ids []string) ([]DeviceRef, bool) {
	if x == nil || x.ix == nil {
		return refs, len(ids) == 0
	}
	prev := int32(-1)
	for _, id := range ids {
		g, ok := x.ix.lookup(id, prev)
		if !ok {
			return refs, false
		}
		refs = append(refs, x.ix.ref(g))
		prev = g
	}
	return refs, true
}

// ref describes device number g in numbers.
func (ix *shape) ref(g int32) DeviceRef {
	d := &ix.devs[g]
	return DeviceRef{Num: int(g), Node: int(d.node), Type: int(d.typ), Usable: d.usable}
}

// lookup returns the number of the device with the given ID, trying the
// device after prev first (−1: none), so that a list of a node's devices
// in index order costs one comparison per device instead of a map lookup.
func (ix *shape) lookup(id string, prev int32) (int32, bool) {
	if next := prev + 1; prev >= 0 && int(next) < len(ix.devs) && ix.devs[next].id == id {
		return next, true
	}
	g, ok := ix.devByID[id]
	return g, ok
}

// Devices returns the number of devices of the index, usable or not.
func (x *Index) Devices() int {
	if x == nil || x.ix == nil {
		return 0
	}
	return len(x.ix.devs)
}

// slot returns the slot of type t on node n, or nil.
func (ix *shape) slot(n, t int32) *slotInfo {
	s := ix.nodes[n].slotOf[t]
	if s < 0 {
		return nil
	}
	return &ix.nodes[n].slots[s]
}
