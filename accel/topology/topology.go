// Package topology models the network above the node: a tree of domains of
// any depth (zone › block › rack › NVLink domain › node), each level with a
// bandwidth, and answers the questions placement asks of it: which domain
// of a level holds a node, which is the innermost domain (and so the
// slowest tier) a set of nodes spans, and which nodes each domain of a level
// holds.
//
// A Topology is built from a Spec (Build) or imported from the vocabularies
// of the schedulers users come from: Kubernetes node labels named by an
// ordered level list, as Kueue's and KAI's Topology objects do
// (FromLabels); Volcano HyperNode objects (ParseHyperNodes); Slurm's
// topology.conf for the tree and block plugins (ParseSlurmConf) and its
// topology.yaml (ParseSlurmYAML). Every bad input is a typed error
// (errors.Is against the Err… sentinels); nothing panics.
//
// A Topology is immutable once built and safe for concurrent use.
package topology

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Sentinel errors; each error returned by this package wraps one of them
// and names the offending level, domain, node or line.
var (
	// ErrCycle: a domain is, through its parents, its own ancestor.
	ErrCycle = errors.New("topology: cycle")
	// ErrNodeInTwoDomains: a node is attached to more than one domain.
	ErrNodeInTwoDomains = errors.New("topology: node in two domains")
	// ErrUnknownLevel: a level name that the topology does not define.
	ErrUnknownLevel = errors.New("topology: unknown level")
	// ErrBandwidth: a level's bandwidth is negative, NaN or infinite.
	ErrBandwidth = errors.New("topology: bandwidth must be finite and >= 0")
	// ErrUnknownDomain: a parent or member domain that is not defined.
	ErrUnknownDomain = errors.New("topology: unknown domain")
	// ErrDuplicate: a level or domain name defined twice.
	ErrDuplicate = errors.New("topology: duplicate name")
	// ErrLevelOrder: a domain's parent is not at an outer level than it.
	ErrLevelOrder = errors.New("topology: parent not at an outer level")
	// ErrUnknownNode: a query names a node the topology does not hold.
	ErrUnknownNode = errors.New("topology: unknown node")
	// ErrSyntax: an input file that cannot be parsed.
	ErrSyntax = errors.New("topology: syntax error")
	// ErrUnsupported: a valid construct of an imported format that this
	// package does not implement (e.g. a HyperNode labelMatch with
	// matchExpressions).
	ErrUnsupported = errors.New("topology: unsupported")
)

// Level is one tier of the tree.
type Level struct {
	// Name identifies the level: a node-label key for FromLabels
	// ("cloud.provider.com/topology-rack"), "tier-N" or a HyperNode
	// tierName, "switch-N" or "block" for Slurm.
	Name string
	// Bandwidth is what one node can send to another node whose innermost
	// shared domain is at this level, in any unit used consistently across
	// levels (GB/s suggested). 0 means unknown.
	Bandwidth float64
}

// DomainSpec declares one domain of a Spec.
type DomainSpec struct {
	Name   string // unique among all domains
	Level  string // one of Spec.Levels' names
	Parent string // "" for a root domain
}

// Membership attaches a node to the innermost domain that holds it.
type Membership struct {
	Node   string
	Domain string // "" for a node outside every domain
}

// Spec declares a topology. Levels are ordered outermost first; a domain's
// parent must be at an outer level, not necessarily the adjacent one (a
// Slurm switch may skip tiers).
type Spec struct {
	Levels  []Level
	Domains []DomainSpec
	Nodes   []Membership
}

// Domain is one built domain, as returned by the queries.
type Domain struct {
	Name   string
	Level  string
	Parent string   // "" for a root domain
	Nodes  []string // every node beneath it, sorted
}

type domain struct {
	name   string
	level  int
	parent int // -1 for a root
	nodes  []string
}

// Topology is a built, validated tree. The zero value holds nothing.
type Topology struct {
	levels  []Level
	domains []domain
	byName  map[string]int
	nodeAt  map[string]int // node → innermost domain index, -1 if none
}

func checkBandwidth(l Level) error {
	if math.IsNaN(l.Bandwidth) || math.IsInf(l.Bandwidth, 0) || l.Bandwidth < 0 {
		return fmt.Errorf("%w: level %q has %v", ErrBandwidth, l.Name, l.Bandwidth)
	}
	return nil
}

// Build validates s and returns its Topology. Errors: ErrDuplicate,
// ErrBandwidth, ErrUnknownLevel, ErrUnknownDomain, ErrCycle, ErrLevelOrder,
// ErrNodeInTwoDomains.
func Build(s Spec) (*Topology, error) {
	t := &Topology{
		levels: slices.Clone(s.Levels),
		byName: make(map[string]int, len(s.Domains)),
		nodeAt: make(map[string]int, len(s.Nodes)),
	}
	levelIdx := make(map[string]int, len(s.Levels))
	for i, l := range s.Levels {
		if l.Name == "" {
			return nil, fmt.Errorf("%w: level %d has no name", ErrUnknownLevel, i)
		}
		if _, dup := levelIdx[l.Name]; dup {
			return nil, fmt.Errorf("%w: level %q", ErrDuplicate, l.Name)
		}
		if err := checkBandwidth(l); err != nil {
			return nil, err
		}
		levelIdx[l.Name] = i
	}
	t.domains = make([]domain, len(s.Domains))
	for i, d := range s.Domains {
		if d.Name == "" {
			return nil, fmt.Errorf("%w: domain %d has no name", ErrUnknownDomain, i)
		}
		if _, dup := t.byName[d.Name]; dup {
			return nil, fmt.Errorf("%w: domain %q", ErrDuplicate, d.Name)
		}
		li, ok := levelIdx[d.Level]
		if !ok {
			return nil, fmt.Errorf("%w: %q (domain %q)", ErrUnknownLevel, d.Level, d.Name)
		}
		t.byName[d.Name] = i
		t.domains[i] = domain{name: d.Name, level: li, parent: -1}
	}
	for i, d := range s.Domains {
		if d.Parent == "" {
			continue
		}
		p, ok := t.byName[d.Parent]
		if !ok {
			return nil, fmt.Errorf("%w: %q (parent of %q)", ErrUnknownDomain, d.Parent, d.Name)
		}
		t.domains[i].parent = p
	}
	// Cycles first: they explain a level-order violation better than it does.
	state := make([]byte, len(t.domains)) // 0 new, 1 on the current walk, 2 done
	for i := range t.domains {
		var walk []int
		j := i
		for j >= 0 && state[j] == 0 {
			state[j] = 1
			walk = append(walk, j)
			j = t.domains[j].parent
		}
		if j >= 0 && state[j] == 1 {
			return nil, fmt.Errorf("%w: through domain %q", ErrCycle, t.domains[j].name)
		}
		for _, w := range walk {
			state[w] = 2
		}
	}
	for _, d := range t.domains {
		if d.parent >= 0 && t.domains[d.parent].level >= d.level {
			p := t.domains[d.parent]
			return nil, fmt.Errorf("%w: %q (level %q) under %q (level %q)", ErrLevelOrder,
				d.name, t.levels[d.level].Name, p.name, t.levels[p.level].Name)
		}
	}
	for _, m := range s.Nodes {
		if m.Node == "" {
			return nil, fmt.Errorf("%w: a membership has no node name", ErrUnknownNode)
		}
		di := -1
		if m.Domain != "" {
			var ok bool
			if di, ok = t.byName[m.Domain]; !ok {
				return nil, fmt.Errorf("%w: %q (holding node %q)", ErrUnknownDomain, m.Domain, m.Node)
			}
		}
		if prev, dup := t.nodeAt[m.Node]; dup {
			return nil, fmt.Errorf("%w: %q in %q and %q", ErrNodeInTwoDomains, m.Node, t.domainName(prev), m.Domain)
		}
		t.nodeAt[m.Node] = di
		for j := di; j >= 0; j = t.domains[j].parent {
			t.domains[j].nodes = append(t.domains[j].nodes, m.Node)
		}
	}
	for i := range t.domains {
		slices.Sort(t.domains[i].nodes)
	}
	return t, nil
}

func (t *Topology) domainName(i int) string {
	if i < 0 {
		return ""
	}
	return t.domains[i].name
}

// Levels returns the levels, outermost first.
func (t *Topology) Levels() []Level { return slices.Clone(t.levels) }

// Nodes returns every node, sorted.
func (t *Topology) Nodes() []string {
	out := make([]string, 0, len(t.nodeAt))
	for n := range t.nodeAt {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// LevelIndex returns the position of the named level (0 = outermost), or
// an ErrUnknownLevel error.
func (t *Topology) LevelIndex(level string) (int, error) {
	for i, l := range t.levels {
		if l.Name == level {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w: %q", ErrUnknownLevel, level)
}

// WithBandwidths returns a copy of t whose levels named in bw get those
// bandwidths (importers leave bandwidths 0 = unknown). Errors:
// ErrUnknownLevel, ErrBandwidth.
func (t *Topology) WithBandwidths(bw map[string]float64) (*Topology, error) {
	c := *t
	c.levels = slices.Clone(t.levels)
	for name, b := range bw {
		i, err := t.LevelIndex(name)
		if err != nil {
			return nil, err
		}
		c.levels[i].Bandwidth = b
		if err := checkBandwidth(c.levels[i]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

func (t *Topology) export(i int) Domain {
	d := t.domains[i]
	return Domain{Name: d.name, Level: t.levels[d.level].Name, Parent: t.domainName(d.parent), Nodes: slices.Clone(d.nodes)}
}

// DomainOf returns the domain of the given level that holds node. ok is
// false when the node hangs above that level (a node attached directly to
// a spine switch has no leaf). Errors: ErrUnknownNode, ErrUnknownLevel.
func (t *Topology) DomainOf(node, level string) (d Domain, ok bool, err error) {
	li, err := t.LevelIndex(level)
	if err != nil {
		return Domain{}, false, err
	}
	j, known := t.nodeAt[node]
	if !known {
		return Domain{}, false, fmt.Errorf("%w: %q", ErrUnknownNode, node)
	}
	for ; j >= 0; j = t.domains[j].parent {
		if t.domains[j].level == li {
			return t.export(j), true, nil
		}
	}
	return Domain{}, false, nil
}

// Domains returns the domains of a level, sorted by name, each with its
// nodes. Errors: ErrUnknownLevel.
func (t *Topology) Domains(level string) ([]Domain, error) {
	li, err := t.LevelIndex(level)
	if err != nil {
		return nil, err
	}
	var out []Domain
	for i, d := range t.domains {
		if d.level == li {
			out = append(out, t.export(i))
		}
	}
	slices.SortFunc(out, func(a, b Domain) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Span says how far a set of nodes reaches up the tree.
type Span struct {
	// SameNode is true when the set holds one distinct node: no network
	// tier is crossed.
	SameNode bool
	// Domain is the innermost domain holding every node, and Level its
	// level; both "" when the nodes share no domain (they span the whole
	// cluster, above every level), or when SameNode.
	Domain, Level string
	// Bandwidth is the bandwidth of Level: the slowest tier the set's
	// traffic crosses. 0 when Level is "" or unknown.
	Bandwidth float64
}

// Span returns the innermost domain that holds all of nodes: the lowest
// common level, whose bandwidth is the slowest tier a gang on these nodes
// spans. Errors: ErrUnknownNode (also for an empty set).
func (t *Topology) Span(nodes []string) (Span, error) {
	if len(nodes) == 0 {
		return Span{}, fmt.Errorf("%w: empty node set", ErrUnknownNode)
	}
	var path []int // the first node's chain, innermost first
	first, known := t.nodeAt[nodes[0]]
	if !known {
		return Span{}, fmt.Errorf("%w: %q", ErrUnknownNode, nodes[0])
	}
	for j := first; j >= 0; j = t.domains[j].parent {
		path = append(path, j)
	}
	at := make(map[int]int, len(path)) // domain → its position in path
	for i, j := range path {
		at[j] = i
	}
	cut := 0 // path[cut:] are the common ancestors so far
	same := true
	for _, n := range nodes[1:] {
		j, known := t.nodeAt[n]
		if !known {
			return Span{}, fmt.Errorf("%w: %q", ErrUnknownNode, n)
		}
		if n == nodes[0] {
			continue
		}
		same = false
		for ; j >= 0; j = t.domains[j].parent {
			if i, ok := at[j]; ok {
				cut = max(cut, i)
				break
			}
		}
		if j < 0 {
			cut = len(path)
		}
	}
	if same {
		return Span{SameNode: true}, nil
	}
	if cut == len(path) {
		return Span{}, nil
	}
	d := t.domains[path[cut]]
	l := t.levels[d.level]
	return Span{Domain: d.name, Level: l.Name, Bandwidth: l.Bandwidth}, nil
}
