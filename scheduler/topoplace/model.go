package topoplace

import (
	"slices"
	"strings"
	"sync"

	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
)

// model is the static structure of one (cluster index, topology) pair:
// a tree whose vertices are the domains (0..D-1), the cluster's nodes
// (D..D+N-1, in the index's node order) and a root (D+N) above every
// domain and every node outside all domains. Immutable once built.
type model struct {
	levels []topology.Level
	nd     int // domains
	nn     int // nodes
	root   int32
	name   []string // per vertex (the root's is "")
	depth  []int    // per vertex: domain level depth, len(levels) for a node, -1 for the root
	parent []int32  // per vertex; -1 for the root
	kids   [][]int32
	post   []int32   // domains then the root, children before parents
	atLvl  [][]int32 // per depth 0..len(levels): the vertices at that depth, by name

	types  map[string]int // type key → type number
	devID  []string       // per device number (usable devices only)
	devNum map[string]int32
	devOf  [][][]int32 // per node per type: usable device numbers, by index
	nodeOf []int32     // per device number: its node vertex
	typeOf []int32     // per device number
	maxPer []int       // per type: most usable devices on one node

	works sync.Pool // of *work, reused across calls
}

type modelKey struct{ top *topology.Topology }

// modelFor returns the model of x and top, cached on x.
func modelFor(x *placement.Index, top *topology.Topology) *model {
	return x.Derived(modelKey{top}, func() any { return buildModel(x, top) }).(*model)
}

func buildModel(x *placement.Index, top *topology.Topology) *model {
	m := &model{levels: top.Levels(), types: map[string]int{}, devNum: map[string]int32{}}
	nl := len(m.levels)
	type dom struct{ name, parent string }
	var doms []topology.Domain
	for _, l := range m.levels {
		ds, _ := top.Domains(l.Name) // a level of top's own: no error
		doms = append(doms, ds...)
	}
	m.nd = len(doms)
	m.nn = x.Nodes()
	nv := m.nd + m.nn + 1
	m.root = int32(nv - 1)
	m.name = make([]string, nv)
	m.depth = make([]int, nv)
	m.parent = make([]int32, nv)
	m.kids = make([][]int32, nv)
	byName := make(map[string]int32, m.nd)
	for i, d := range doms {
		byName[d.Name] = int32(i)
		m.name[i] = d.Name
		m.depth[i], _ = levelOf(m.levels, d.Level)
	}
	for i, d := range doms {
		p := m.root
		if d.Parent != "" {
			p = byName[d.Parent]
		}
		m.parent[i] = p
	}
	// Innermost domain per node: domains listed by depth, inner ones last.
	inner := map[string]int32{}
	for i, d := range doms {
		for _, n := range d.Nodes {
			if cur, ok := inner[n]; !ok || m.depth[cur] < m.depth[i] {
				inner[n] = int32(i)
			}
		}
	}
	for _, t := range x.Types() {
		m.types[string(t)] = len(m.types)
	}
	m.maxPer = make([]int, len(m.types))
	m.devOf = make([][][]int32, m.nn)
	for n := 0; n < m.nn; n++ {
		v := int32(m.nd + n)
		name, devs := x.Node(n)
		m.name[v] = name
		m.depth[v] = nl
		p := m.root
		if d, ok := inner[name]; ok {
			p = d
		}
		m.parent[v] = p
		m.devOf[n] = make([][]int32, len(m.types))
		for _, d := range devs {
			if !d.Usable() {
				continue
			}
			t := m.types[string(d.Type)]
			g := int32(len(m.devID))
			m.devID = append(m.devID, d.ID)
			m.devNum[d.ID] = g
			m.nodeOf = append(m.nodeOf, v)
			m.typeOf = append(m.typeOf, int32(t))
			m.devOf[n][t] = append(m.devOf[n][t], g)
		}
		for t, ds := range m.devOf[n] {
			m.maxPer[t] = max(m.maxPer[t], len(ds))
		}
	}
	m.depth[m.root] = -1
	m.parent[m.root] = -1
	for v := int32(0); v < m.root; v++ {
		m.kids[m.parent[v]] = append(m.kids[m.parent[v]], v)
	}
	for v := range m.kids {
		slices.SortFunc(m.kids[v], func(a, b int32) int { return strings.Compare(m.name[a], m.name[b]) })
	}
	m.atLvl = make([][]int32, nl+1)
	for v := int32(0); v < m.root; v++ {
		m.atLvl[m.depth[v]] = append(m.atLvl[m.depth[v]], v)
	}
	for d := range m.atLvl {
		slices.SortFunc(m.atLvl[d], func(a, b int32) int { return strings.Compare(m.name[a], m.name[b]) })
	}
	// Post-order of the domains and the root: deepest first is enough,
	// since a parent is always at an outer depth.
	for d := nl - 1; d >= 0; d-- {
		m.post = append(m.post, m.atLvl[d]...)
	}
	m.post = append(m.post, m.root)
	return m
}

// ancestorAt returns v's ancestor (or v) at depth d, or -1 when v hangs
// above that depth.
func (m *model) ancestorAt(v int32, d int) int32 {
	for ; v >= 0; v = m.parent[v] {
		if m.depth[v] == d {
			return v
		}
		if m.depth[v] < d {
			return -1
		}
	}
	return -1
}

// spanDepth returns the innermost common vertex of the node vertices in
// nodes: the node itself when there is one distinct node, else a domain,
// else the root.
func (m *model) span(nodes []int32) int32 {
	if len(nodes) == 0 {
		return m.root
	}
	c := nodes[0]
	for _, n := range nodes[1:] {
		c = m.common(c, n)
	}
	return c
}

func (m *model) common(a, b int32) int32 {
	for a != b {
		if m.depth[a] >= m.depth[b] {
			a = m.parent[a]
		} else {
			b = m.parent[b]
		}
		if a < 0 || b < 0 {
			return m.root
		}
	}
	return a
}
