package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// TierLevel returns the level name of Volcano HyperNodes of tier n that
// carry no tierName.
func TierLevel(n int) string { return "tier-" + strconv.Itoa(n) }

type hyperNode struct {
	name, tierName string
	tier           int
	members        []hyperMember
}

type hyperMember struct {
	hyperNode bool   // type HyperNode, else Node
	exact     string // selector.exactMatch.name
	pattern   *regexp.Regexp
	labels    map[string]string // selector.labelMatch.matchLabels
}

// ParseHyperNodes builds a topology from Volcano HyperNode objects (group
// topology.volcano.sh), given as YAML ("---"-separated documents) or JSON
// (one object, an array, or a List with items). Each HyperNode is a domain
// of the level of its spec.tier (tier 1 innermost), named by its
// spec.tierName if any, else TierLevel(tier). spec.members[] of type Node or
// HyperNode select their members with exactMatch.name, regexMatch.pattern
// (Go RE2, unanchored unless the pattern anchors itself: Volcano calls
// regexp.MatchString on the node name) or labelMatch.matchLabels; regexMatch
// and labelMatch select among nodes (name → labels) for type Node and among
// the other HyperNodes' names for type HyperNode (labelMatch on a HyperNode
// matches nothing). An exactMatch node name is taken as given, listed in
// nodes or not. A node belongs to one HyperNode: one selected by two (even a
// tier-1 and a tier-2 one) is ErrNodeInTwoDomains. Errors: ErrSyntax,
// ErrUnsupported (labelMatch.matchExpressions), ErrUnknownDomain,
// ErrNodeInTwoDomains (a node, or a HyperNode, selected by two HyperNodes),
// ErrCycle, ErrLevelOrder (a member at a tier not below its parent's).
func ParseHyperNodes(data []byte, nodes map[string]map[string]string) (*Topology, error) {
	docs, err := decodeDocuments(data)
	if err != nil {
		return nil, err
	}
	var hns []hyperNode
	var collect func(doc any, path string) error
	collect = func(doc any, path string) error {
		if list, ok := doc.([]any); ok {
			for i, d := range list {
				if err := collect(d, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			return nil
		}
		m, err := asMap(doc, path)
		if err != nil {
			return err
		}
		if items, ok := m["items"]; ok {
			return collect(items, path+".items")
		}
		if len(m) == 0 {
			return nil
		}
		hn, err := parseHyperNode(m, path)
		if err != nil {
			return err
		}
		hns = append(hns, hn)
		return nil
	}
	for i, d := range docs {
		if err := collect(d, fmt.Sprintf("document %d", i+1)); err != nil {
			return nil, err
		}
	}
	return buildHyperNodes(hns, nodes)
}

func parseHyperNode(m map[string]any, path string) (hyperNode, error) {
	var hn hyperNode
	if kind, _ := m["kind"].(string); kind != "" && kind != "HyperNode" {
		return hn, fmt.Errorf("%w: %s: kind %q, want HyperNode", ErrSyntax, path, kind)
	}
	meta, err := asMap(m["metadata"], path+".metadata")
	if err != nil {
		return hn, err
	}
	if hn.name, err = asString(meta["name"], path+".metadata.name"); err != nil {
		return hn, err
	}
	if hn.name == "" {
		return hn, fmt.Errorf("%w: %s: metadata.name is empty", ErrSyntax, path)
	}
	path = fmt.Sprintf("HyperNode %q", hn.name)
	spec, err := asMap(m["spec"], path+" spec")
	if err != nil {
		return hn, err
	}
	tier, err := asString(spec["tier"], path+" spec.tier")
	if err != nil {
		return hn, err
	}
	if hn.tier, err = strconv.Atoi(tier); err != nil || hn.tier < 1 {
		return hn, fmt.Errorf("%w: %s: spec.tier %q is not a positive integer", ErrSyntax, path, tier)
	}
	if hn.tierName, err = asString(spec["tierName"], path+" spec.tierName"); err != nil {
		return hn, err
	}
	members, err := asList(spec["members"], path+" spec.members")
	if err != nil {
		return hn, err
	}
	for i, raw := range members {
		mp := fmt.Sprintf("%s spec.members[%d]", path, i)
		mm, err := asMap(raw, mp)
		if err != nil {
			return hn, err
		}
		var member hyperMember
		switch typ, _ := mm["type"].(string); typ {
		case "Node":
		case "HyperNode":
			member.hyperNode = true
		default:
			return hn, fmt.Errorf("%w: %s: type %q, want Node or HyperNode", ErrSyntax, mp, typ)
		}
		sel, err := asMap(mm["selector"], mp+".selector")
		if err != nil {
			return hn, err
		}
		kinds := 0
		if v, ok := sel["exactMatch"]; ok {
			kinds++
			em, err := asMap(v, mp+".selector.exactMatch")
			if err != nil {
				return hn, err
			}
			if member.exact, err = asString(em["name"], mp+".selector.exactMatch.name"); err != nil {
				return hn, err
			}
			if member.exact == "" {
				return hn, fmt.Errorf("%w: %s: exactMatch.name is empty", ErrSyntax, mp)
			}
		}
		if v, ok := sel["regexMatch"]; ok {
			kinds++
			rm, err := asMap(v, mp+".selector.regexMatch")
			if err != nil {
				return hn, err
			}
			pat, err := asString(rm["pattern"], mp+".selector.regexMatch.pattern")
			if err != nil {
				return hn, err
			}
			if member.pattern, err = regexp.Compile(pat); err != nil || pat == "" {
				return hn, fmt.Errorf("%w: %s: regexMatch.pattern %q: %v", ErrSyntax, mp, pat, err)
			}
		}
		if v, ok := sel["labelMatch"]; ok {
			kinds++
			lm, err := asMap(v, mp+".selector.labelMatch")
			if err != nil {
				return hn, err
			}
			if _, ok := lm["matchExpressions"]; ok {
				return hn, fmt.Errorf("%w: %s: labelMatch.matchExpressions", ErrUnsupported, mp)
			}
			ml, err := asMap(lm["matchLabels"], mp+".selector.labelMatch.matchLabels")
			if err != nil {
				return hn, err
			}
			member.labels = map[string]string{}
			for k, v := range ml {
				if member.labels[k], err = asString(v, mp+".selector.labelMatch.matchLabels."+k); err != nil {
					return hn, err
				}
			}
			if len(member.labels) == 0 {
				return hn, fmt.Errorf("%w: %s: labelMatch.matchLabels is empty", ErrSyntax, mp)
			}
		}
		if kinds != 1 {
			return hn, fmt.Errorf("%w: %s: want exactly one of exactMatch, regexMatch, labelMatch", ErrSyntax, mp)
		}
		hn.members = append(hn.members, member)
	}
	return hn, nil
}

func (m hyperMember) selects(name string, labels map[string]string) bool {
	switch {
	case m.exact != "":
		return name == m.exact
	case m.pattern != nil:
		return m.pattern.MatchString(name)
	}
	if labels == nil {
		return false
	}
	for k, v := range m.labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func buildHyperNodes(hns []hyperNode, nodes map[string]map[string]string) (*Topology, error) {
	tierName := map[int]string{}
	for _, hn := range hns {
		name := hn.tierName
		if name == "" {
			name = TierLevel(hn.tier)
		}
		if prev, ok := tierName[hn.tier]; ok && prev != name {
			return nil, fmt.Errorf("%w: tier %d named both %q and %q (HyperNode %q)", ErrSyntax, hn.tier, prev, name, hn.name)
		}
		tierName[hn.tier] = name
	}
	tiers := make([]int, 0, len(tierName))
	for t := range tierName {
		tiers = append(tiers, t)
	}
	slices.Sort(tiers)
	var spec Spec
	for i := len(tiers) - 1; i >= 0; i-- {
		spec.Levels = append(spec.Levels, Level{Name: tierName[tiers[i]]})
	}
	nodeNames := make([]string, 0, len(nodes))
	for n := range nodes {
		nodeNames = append(nodeNames, n)
	}
	slices.Sort(nodeNames)
	hnNames := make([]string, len(hns))
	for i, hn := range hns {
		hnNames[i] = hn.name
	}
	parent := map[string]string{}
	for _, hn := range hns {
		for _, m := range hn.members {
			if m.hyperNode {
				var picked []string
				if m.exact != "" {
					picked = []string{m.exact} // an unknown name is Build's ErrUnknownDomain
				} else {
					for _, c := range hnNames {
						if m.selects(c, nil) {
							picked = append(picked, c)
						}
					}
				}
				for _, c := range picked {
					if p, dup := parent[c]; dup && p != hn.name {
						return nil, fmt.Errorf("%w: HyperNode %q is a member of %q and %q", ErrNodeInTwoDomains, c, p, hn.name)
					}
					parent[c] = hn.name
				}
				continue
			}
			if m.exact != "" {
				spec.Nodes = append(spec.Nodes, Membership{Node: m.exact, Domain: hn.name})
				continue
			}
			for _, n := range nodeNames {
				if m.selects(n, nodes[n]) {
					spec.Nodes = append(spec.Nodes, Membership{Node: n, Domain: hn.name})
				}
			}
		}
	}
	for _, hn := range hns {
		name := hn.tierName
		if name == "" {
			name = TierLevel(hn.tier)
		}
		spec.Domains = append(spec.Domains, DomainSpec{Name: hn.name, Level: name, Parent: parent[hn.name]})
	}
	// A node selected twice by the same HyperNode (exact and regex) is one
	// membership, not two domains.
	spec.Nodes = dedupMemberships(spec.Nodes)
	return Build(spec)
}

func dedupMemberships(ms []Membership) []Membership {
	seen := map[Membership]bool{}
	out := ms[:0]
	for _, m := range ms {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
