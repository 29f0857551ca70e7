package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// BlockLevel is the name of the level of Slurm's base blocks; aggregated
// block levels are named "block-N" for a BlockSizes entry of N nodes.
const BlockLevel = "block"

// SwitchLevel returns the level name of Slurm tree switches at switch
// level k: 0 for a leaf switch (nodes only), and one more than its highest
// child switch otherwise, as Slurm computes it.
func SwitchLevel(k int) string { return "switch-" + strconv.Itoa(k) }

type slurmSwitch struct {
	name     string
	switches []string
	nodes    []string
}

type slurmBlock struct {
	name  string
	nodes []string
}

// ParseSlurmConf reads Slurm's topology.conf: the topology/tree lines
// (SwitchName= with Switches= and/or Nodes=; LinkSpeed= is accepted and
// ignored, as Slurm does) or the topology/block lines (BlockName= with
// Nodes=, and BlockSizes=). Names use Slurm's hostlist syntax
// (ExpandHostlist). Keys are case-insensitive and # starts a comment.
//
// Tree levels are SwitchLevel(k), outermost first. Block levels are
// BlockLevel and, for each BlockSizes entry after the first, "block-N",
// whose domains group N/BlockSizes[0] consecutive base blocks in file
// order; base blocks left over at the end belong to no aggregate (Slurm
// cannot place an N-node segment there either). Errors: ErrSyntax,
// ErrUnknownDomain, ErrCycle, ErrNodeInTwoDomains, ErrDuplicate.
func ParseSlurmConf(data []byte) (*Topology, error) {
	var switches []slurmSwitch
	var blocks []slurmBlock
	var sizes []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		kv := map[string]string{}
		var first string
		for _, f := range fields {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("%w: line %d: %q is not KEY=VALUE", ErrSyntax, line, f)
			}
			k = strings.ToLower(k)
			if _, dup := kv[k]; dup {
				return nil, fmt.Errorf("%w: line %d: %s twice", ErrSyntax, line, k)
			}
			if first == "" {
				first = k
			}
			kv[k] = v
		}
		expand := func(key string) ([]string, error) {
			v, ok := kv[key]
			if !ok {
				return nil, nil
			}
			names, err := ExpandHostlist(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			return names, nil
		}
		switch first {
		case "switchname":
			s := slurmSwitch{name: kv["switchname"]}
			var err error
			if s.switches, err = expand("switches"); err != nil {
				return nil, err
			}
			if s.nodes, err = expand("nodes"); err != nil {
				return nil, err
			}
			for k := range kv {
				if k != "switchname" && k != "switches" && k != "nodes" && k != "linkspeed" {
					return nil, fmt.Errorf("%w: line %d: unknown key %s", ErrSyntax, line, k)
				}
			}
			switches = append(switches, s)
		case "blockname":
			b := slurmBlock{name: kv["blockname"]}
			var err error
			if b.nodes, err = expand("nodes"); err != nil {
				return nil, err
			}
			for k := range kv {
				if k != "blockname" && k != "nodes" {
					return nil, fmt.Errorf("%w: line %d: unknown key %s", ErrSyntax, line, k)
				}
			}
			blocks = append(blocks, b)
		case "blocksizes":
			if len(kv) != 1 || sizes != nil {
				return nil, fmt.Errorf("%w: line %d: BlockSizes must stand alone, once", ErrSyntax, line)
			}
			for _, s := range strings.Split(kv["blocksizes"], ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					return nil, fmt.Errorf("%w: line %d: block size %q", ErrSyntax, line, s)
				}
				sizes = append(sizes, n)
			}
		default:
			return nil, fmt.Errorf("%w: line %d: unknown key %s", ErrSyntax, line, first)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	switch {
	case len(switches) > 0 && (len(blocks) > 0 || sizes != nil):
		return nil, fmt.Errorf("%w: both SwitchName and BlockName lines", ErrSyntax)
	case len(blocks) > 0:
		return buildBlocks(blocks, sizes)
	case sizes != nil:
		return nil, fmt.Errorf("%w: BlockSizes without blocks", ErrSyntax)
	}
	return buildTree(switches)
}

// buildTree turns Slurm switches into a Spec: switch levels from the leaves
// up, each switch's parent the switch that lists it.
func buildTree(switches []slurmSwitch) (*Topology, error) {
	idx := make(map[string]int, len(switches))
	for i, s := range switches {
		if s.name == "" {
			return nil, fmt.Errorf("%w: SwitchName is empty", ErrSyntax)
		}
		if _, dup := idx[s.name]; dup {
			return nil, fmt.Errorf("%w: switch %q", ErrDuplicate, s.name)
		}
		idx[s.name] = i
	}
	parent := make([]string, len(switches))
	for _, s := range switches {
		for _, c := range s.switches {
			ci, ok := idx[c]
			if !ok {
				return nil, fmt.Errorf("%w: switch %q (child of %q)", ErrUnknownDomain, c, s.name)
			}
			if parent[ci] != "" && parent[ci] != s.name {
				return nil, fmt.Errorf("%w: switch %q under %q and %q", ErrNodeInTwoDomains, c, parent[ci], s.name)
			}
			parent[ci] = s.name
		}
	}
	// Switch levels: 0 for a leaf, else 1 + the highest child; a cycle is
	// found on the way.
	level := make([]int, len(switches))
	state := make([]byte, len(switches))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("%w: through switch %q", ErrCycle, switches[i].name)
		case 2:
			return nil
		}
		state[i] = 1
		for _, c := range switches[i].switches {
			ci := idx[c]
			if err := visit(ci); err != nil {
				return err
			}
			level[i] = max(level[i], level[ci]+1)
		}
		state[i] = 2
		return nil
	}
	top := 0
	for i := range switches {
		if err := visit(i); err != nil {
			return nil, err
		}
		top = max(top, level[i])
	}
	var spec Spec
	for k := top; k >= 0; k-- {
		spec.Levels = append(spec.Levels, Level{Name: SwitchLevel(k)})
	}
	for i, s := range switches {
		spec.Domains = append(spec.Domains, DomainSpec{Name: s.name, Level: SwitchLevel(level[i]), Parent: parent[i]})
		for _, n := range s.nodes {
			spec.Nodes = append(spec.Nodes, Membership{Node: n, Domain: s.name})
		}
	}
	if len(switches) == 0 {
		spec.Levels = nil
	}
	return Build(spec)
}

// buildBlocks turns Slurm blocks and BlockSizes into a Spec.
func buildBlocks(blocks []slurmBlock, sizes []int) (*Topology, error) {
	var spec Spec
	var aggregates []int // base blocks per aggregate, outermost last
	for i := 1; i < len(sizes); i++ {
		if sizes[i] <= sizes[i-1] || sizes[i]%sizes[0] != 0 {
			return nil, fmt.Errorf("%w: BlockSizes %v: each must be a larger multiple of the first", ErrSyntax, sizes)
		}
		ratio := sizes[i] / sizes[0]
		if ratio&(ratio-1) != 0 {
			return nil, fmt.Errorf("%w: BlockSizes %v: %d is not a power-of-two multiple of %d", ErrSyntax, sizes, sizes[i], sizes[0])
		}
		aggregates = append(aggregates, ratio)
	}
	for i := len(sizes) - 1; i >= 1; i-- {
		spec.Levels = append(spec.Levels, Level{Name: aggregateName(sizes[i])})
	}
	spec.Levels = append(spec.Levels, Level{Name: BlockLevel})
	for bi, b := range blocks {
		if b.name == "" {
			return nil, fmt.Errorf("%w: BlockName is empty", ErrSyntax)
		}
		parent := ""
		if len(aggregates) > 0 {
			parent = aggregateDomain(sizes[1], bi/aggregates[0], len(blocks)/aggregates[0] > bi/aggregates[0])
		}
		spec.Domains = append(spec.Domains, DomainSpec{Name: b.name, Level: BlockLevel, Parent: parent})
		for _, n := range b.nodes {
			spec.Nodes = append(spec.Nodes, Membership{Node: n, Domain: b.name})
		}
	}
	for a, ratio := range aggregates {
		complete := len(blocks) / ratio
		for g := 0; g < complete; g++ {
			parent := ""
			if a+1 < len(aggregates) {
				outer := aggregates[a+1] / ratio
				parent = aggregateDomain(sizes[a+2], g/outer, complete/outer > g/outer)
			}
			spec.Domains = append(spec.Domains, DomainSpec{Name: aggregateDomain(sizes[a+1], g, true), Level: aggregateName(sizes[a+1]), Parent: parent})
		}
	}
	return Build(spec)
}

func aggregateName(size int) string { return BlockLevel + "-" + strconv.Itoa(size) }

// aggregateDomain names group g of an aggregate level ("block-120/0"), or
// "" when that group is incomplete.
func aggregateDomain(size, g int, complete bool) string {
	if !complete {
		return ""
	}
	return aggregateName(size) + "/" + strconv.Itoa(g)
}
