package topology

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrNoTopology: a topology.yaml holds no topology of the requested name.
var ErrNoTopology = errors.New("topology: no such topology in file")

// ParseSlurmYAML reads Slurm's topology.yaml, a list of named topologies,
// and builds the one called name; name "" picks the first with
// cluster_default: true, else the first. A tree topology (switches[] with
// switch, children, nodes) and a block topology (block_sizes, blocks[] with
// block, nodes) become the same levels as in ParseSlurmConf; a flat
// topology has no levels and no nodes. Ring and torus topologies are
// ErrUnsupported. Errors: ErrNoTopology, ErrSyntax, and those of
// ParseSlurmConf.
func ParseSlurmYAML(data []byte, name string) (*Topology, error) {
	docs, err := decodeDocuments(data)
	if err != nil {
		return nil, err
	}
	var all []any
	for i, d := range docs {
		l, err := asList(d, fmt.Sprintf("document %d", i+1))
		if err != nil {
			return nil, err
		}
		all = append(all, l...)
	}
	var chosen map[string]any
	var chosenName string
	firstDefault := -1
	var maps []map[string]any
	var names []string
	for i, raw := range all {
		path := fmt.Sprintf("topology[%d]", i)
		m, err := asMap(raw, path)
		if err != nil {
			return nil, err
		}
		n, err := asString(m["topology"], path+".topology")
		if err != nil {
			return nil, err
		}
		if n == "" {
			return nil, fmt.Errorf("%w: %s has no topology name", ErrSyntax, path)
		}
		if def, _ := m["cluster_default"].(string); def == "true" && firstDefault < 0 {
			firstDefault = i
		}
		maps, names = append(maps, m), append(names, n)
	}
	pick := -1
	switch {
	case name != "":
		for i, n := range names {
			if n == name {
				pick = i
				break
			}
		}
	case firstDefault >= 0:
		pick = firstDefault
	case len(maps) > 0:
		pick = 0
	}
	if pick >= 0 {
		chosen, chosenName = maps[pick], names[pick]
	}
	if chosen == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoTopology, name)
	}
	path := fmt.Sprintf("topology %q", chosenName)
	kinds := 0
	var build func() (*Topology, error)
	if v, ok := chosen["tree"]; ok {
		kinds++
		build = func() (*Topology, error) { return slurmYAMLTree(v, path+".tree") }
	}
	if v, ok := chosen["block"]; ok {
		kinds++
		build = func() (*Topology, error) { return slurmYAMLBlock(v, path+".block") }
	}
	if _, ok := chosen["flat"]; ok {
		kinds++
		build = func() (*Topology, error) { return Build(Spec{}) }
	}
	for _, k := range []string{"ring", "torus3d", "torus"} {
		if _, ok := chosen[k]; ok {
			return nil, fmt.Errorf("%w: %s is a %s topology", ErrUnsupported, path, k)
		}
	}
	if kinds != 1 {
		return nil, fmt.Errorf("%w: %s: want exactly one of tree, block, flat", ErrSyntax, path)
	}
	return build()
}

func slurmYAMLTree(v any, path string) (*Topology, error) {
	m, err := asMap(v, path)
	if err != nil {
		return nil, err
	}
	list, err := asList(m["switches"], path+".switches")
	if err != nil {
		return nil, err
	}
	var switches []slurmSwitch
	for i, raw := range list {
		p := fmt.Sprintf("%s.switches[%d]", path, i)
		sm, err := asMap(raw, p)
		if err != nil {
			return nil, err
		}
		var s slurmSwitch
		if s.name, err = asString(sm["switch"], p+".switch"); err != nil {
			return nil, err
		}
		if s.switches, err = yamlHostlist(sm["children"], p+".children"); err != nil {
			return nil, err
		}
		if s.nodes, err = yamlHostlist(sm["nodes"], p+".nodes"); err != nil {
			return nil, err
		}
		switches = append(switches, s)
	}
	return buildTree(switches)
}

func slurmYAMLBlock(v any, path string) (*Topology, error) {
	m, err := asMap(v, path)
	if err != nil {
		return nil, err
	}
	sizeList, err := asList(m["block_sizes"], path+".block_sizes")
	if err != nil {
		return nil, err
	}
	var sizes []int
	for i, raw := range sizeList {
		s, err := asString(raw, fmt.Sprintf("%s.block_sizes[%d]", path, i))
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: %s.block_sizes[%d] = %q", ErrSyntax, path, i, s)
		}
		sizes = append(sizes, n)
	}
	list, err := asList(m["blocks"], path+".blocks")
	if err != nil {
		return nil, err
	}
	var blocks []slurmBlock
	for i, raw := range list {
		p := fmt.Sprintf("%s.blocks[%d]", path, i)
		bm, err := asMap(raw, p)
		if err != nil {
			return nil, err
		}
		var b slurmBlock
		if b.name, err = asString(bm["block"], p+".block"); err != nil {
			return nil, err
		}
		if b.nodes, err = yamlHostlist(bm["nodes"], p+".nodes"); err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return buildBlocks(blocks, sizes)
}

// yamlHostlist reads a hostlist given as one expression or a list of them.
func yamlHostlist(v any, path string) ([]string, error) {
	var exprs []string
	if l, ok := v.([]any); ok {
		for i, e := range l {
			s, err := asString(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			exprs = append(exprs, s)
		}
	} else {
		s, err := asString(v, path)
		if err != nil {
			return nil, err
		}
		exprs = []string{s}
	}
	var out []string
	for _, e := range exprs {
		names, err := ExpandHostlist(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, names...)
	}
	return out, nil
}
