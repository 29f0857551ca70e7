package topology

import (
	"fmt"
	"slices"
	"strings"
)

// FromLabels builds a topology the way Kueue's and KAI's Topology objects
// describe one: levels is the ordered levels[].nodeLabel list, outermost
// first (e.g. "cloud.provider.com/topology-block",
// "cloud.provider.com/topology-rack", "kubernetes.io/hostname"), and nodes
// maps each node name to its labels.
//
// A domain is a distinct path of label values from the outermost level
// down, so rack "r1" under block "b1" and rack "r1" under block "b2" are
// two domains; its name is the values joined by "/" ("b1/r1"), which no
// label value can contain. A node that lacks the labels of its innermost
// levels hangs from the deepest level it has (a CPU node without
// nvidia.com/gpu.clique sits in its rack); a node without any of the
// labels is in the topology but in no domain. Errors: ErrUnknownLevel (a
// node has a level's label but not an outer one's: its place is
// ambiguous), ErrBandwidth, ErrDuplicate.
func FromLabels(levels []Level, nodes map[string]map[string]string) (*Topology, error) {
	spec := Spec{Levels: levels}
	seen := map[string]bool{}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	slices.Sort(names) // deterministic domain order
	for _, node := range names {
		labels := nodes[node]
		var path []string
		parent, missing := "", ""
		for _, l := range levels {
			v, ok := labels[l.Name]
			if !ok || v == "" {
				if missing == "" {
					missing = l.Name
				}
				continue
			}
			if missing != "" {
				return nil, fmt.Errorf("%w: node %q has label %q but not the outer %q", ErrUnknownLevel, node, l.Name, missing)
			}
			path = append(path, v)
			name := strings.Join(path, "/")
			if !seen[name] {
				seen[name] = true
				spec.Domains = append(spec.Domains, DomainSpec{Name: name, Level: l.Name, Parent: parent})
			}
			parent = name
		}
		spec.Nodes = append(spec.Nodes, Membership{Node: node, Domain: parent})
	}
	return Build(spec)
}
