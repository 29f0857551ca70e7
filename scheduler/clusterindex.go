package scheduler

import (
	"fmt"
	"slices"
	"sync"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// clusterIndex is the validated, indexed form of a cluster snapshot: what
// analyze needs from the cluster, independent of the jobs. Once built it
// is never modified, so instances of several rounds (and goroutines) may
// share it.
type clusterIndex struct {
	types   []accel.TypeKey // sorted
	typeIdx map[accel.TypeKey]int
	cap     []int // healthy devices per type
	perNode []int // most healthy devices of the type on one node
	nodes   []int // nodes with at least one healthy device of the type
	total   int
	devType map[string]int
	devNode map[string]string
	healthy map[string]bool
	// lay is the goodput engine's bin structure of the cluster.
	lay *layout

	// The placement package's index of the same cluster, built on first
	// use (by RoundPlacer).
	placeOnce sync.Once
	place     *placement.Index
	placeErr  error

	// The last placement state built (for lastCur): a policy places
	// several candidate target sets against the same current assignments
	// in one round. Guarded by mu; handed out as clones only.
	mu       sync.Mutex
	lastCur  []placement.Assignment
	lastSt   *placement.State
	lastUsed bool
}

// placement returns the placement index of the cluster c was built from.
func (x *clusterIndex) placement(c *accel.Cluster) (*placement.Index, error) {
	x.placeOnce.Do(func() { x.place, x.placeErr = placement.NewIndex(*c) })
	return x.place, x.placeErr
}

// state returns a placement state of the cluster (c, which x indexes)
// with the current assignments: a clone of the last one built when
// current is the same, else a new one.
func (x *clusterIndex) state(c *accel.Cluster, current []placement.Assignment) (*placement.State, error) {
	x.mu.Lock()
	if x.lastUsed && sameAssignments(x.lastCur, current) {
		st := x.lastSt.Clone()
		x.mu.Unlock()
		return st, nil
	}
	x.mu.Unlock()
	ix, err := x.placement(c)
	if err != nil {
		return nil, err
	}
	st, err := ix.NewState(current)
	if err != nil {
		return nil, err
	}
	cur := make([]placement.Assignment, len(current))
	for i, a := range current {
		cur[i] = placement.Assignment{Job: a.Job, Devices: slices.Clone(a.Devices)}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.lastCur, x.lastSt, x.lastUsed = cur, st, true
	return st.Clone(), nil
}

func sameAssignments(a, b []placement.Assignment) bool {
	return slices.EqualFunc(a, b, func(p, q placement.Assignment) bool {
		return p.Job == q.Job && slices.Equal(p.Devices, q.Devices)
	})
}

// indexCluster validates c and indexes it.
func indexCluster(c *accel.Cluster) (*clusterIndex, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: cluster: %w", ErrInvalid, err)
	}
	size := c.Size()
	x := &clusterIndex{typeIdx: make(map[accel.TypeKey]int), devType: make(map[string]int, size),
		devNode: make(map[string]string, size), healthy: make(map[string]bool, size)}
	x.types = c.Types()
	for i, t := range x.types {
		x.typeIdx[t] = i
	}
	nt := len(x.types)
	x.cap = make([]int, nt)
	x.perNode = make([]int, nt)
	x.nodes = make([]int, nt)
	per := make([]int, nt)
	for _, n := range c.Nodes {
		clear(per)
		for _, d := range n.Devices {
			t := x.typeIdx[d.Type]
			x.devType[d.ID] = t
			x.devNode[d.ID] = n.Name
			x.healthy[d.ID] = d.Healthy
			if d.Healthy {
				per[t]++
			}
		}
		for t, k := range per {
			x.cap[t] += k
			x.total += k
			if k > 0 {
				x.nodes[t]++
				x.perNode[t] = max(x.perNode[t], k)
			}
		}
	}
	x.lay = newLayout(c, x)
	return x, nil
}

// clusterKey is the part of a cluster snapshot that validation and
// indexing (ours and the placement package's) read: node names and links,
// and per device its ID, node, index, type, health, NUMA node and MIG mode. Two snapshots with equal keys validate alike and
// have the same index; readings such as power or utilisation may differ.
type clusterKey struct {
	names []string
	links [][]accel.Link
	devs  [][]deviceKey
}

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

func keyOf(c *accel.Cluster) clusterKey {
	k := clusterKey{names: make([]string, len(c.Nodes)), links: make([][]accel.Link, len(c.Nodes)), devs: make([][]deviceKey, len(c.Nodes))}
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

// matches reports whether c has key k, without allocating.
func (k *clusterKey) matches(c *accel.Cluster) bool {
	if len(c.Nodes) != len(k.names) {
		return false
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Name != k.names[i] || len(n.Devices) != len(k.devs[i]) || !slices.Equal(n.Links, k.links[i]) {
			return false
		}
		for j := range n.Devices {
			if devKey(&n.Devices[j]) != k.devs[i][j] {
				return false
			}
		}
	}
	return true
}

// clusterCache remembers the index of the last cluster a Scheduler saw,
// so that a host that passes the same cluster every round (the common
// case) pays for one comparison instead of validation and indexing. It is
// safe for concurrent use.
type clusterCache struct {
	mu  sync.Mutex
	key clusterKey
	idx *clusterIndex
}

// index returns the index of c, from the cache when c matches the last
// cluster indexed.
func (cc *clusterCache) index(c *accel.Cluster) (*clusterIndex, error) {
	if cc == nil { // a Scheduler not built by New
		return indexCluster(c)
	}
	cc.mu.Lock()
	if cc.idx != nil && cc.key.matches(c) {
		idx := cc.idx
		cc.mu.Unlock()
		return idx, nil
	}
	cc.mu.Unlock()
	idx, err := indexCluster(c)
	if err != nil {
		return nil, err
	}
	key := keyOf(c)
	cc.mu.Lock()
	cc.key, cc.idx = key, idx
	cc.mu.Unlock()
	return idx, nil
}
