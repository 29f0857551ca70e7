package topology

import (
	"errors"
	"slices"
	"testing"
)

var sentinels = []error{ErrCycle, ErrNodeInTwoDomains, ErrUnknownLevel, ErrBandwidth, ErrUnknownDomain,
	ErrDuplicate, ErrLevelOrder, ErrUnknownNode, ErrSyntax, ErrUnsupported, ErrNoTopology}

// checkResult fails unless err wraps a sentinel, or top is self-consistent:
// each node lies in at most one domain per level, in the domain DomainOf
// names, and Span answers for the whole node set.
func checkResult(t *testing.T, top *Topology, err error) {
	t.Helper()
	if err != nil {
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error wraps no sentinel: %v", err)
	}
	nodes := top.Nodes()
	for _, l := range top.Levels() {
		ds, err := top.Domains(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, d := range ds {
			for _, n := range d.Nodes {
				if prev, dup := seen[n]; dup {
					t.Fatalf("node %q in %q and %q at level %q", n, prev, d.Name, l.Name)
				}
				seen[n] = d.Name
			}
		}
		for _, n := range nodes {
			d, ok, err := top.DomainOf(n, l.Name)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (seen[n] != "") || (ok && d.Name != seen[n]) || (ok && !slices.Contains(d.Nodes, n)) {
				t.Fatalf("DomainOf(%q, %q) = %q %v, Domains says %q", n, l.Name, d.Name, ok, seen[n])
			}
		}
	}
	if len(nodes) > 0 {
		if _, err := top.Span(nodes); err != nil {
			t.Fatal(err)
		}
	}
}

func FuzzParseSlurmConf(f *testing.F) {
	f.Add(readTestdata(f, "slurm_tree.conf"))
	f.Add(readTestdata(f, "slurm_block.conf"))
	f.Add([]byte("SwitchName=a Switches=b\nSwitchName=b Switches=a\n"))
	f.Add([]byte("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2,4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		top, err := ParseSlurmConf(data)
		checkResult(t, top, err)
	})
}

func FuzzParseSlurmYAML(f *testing.F) {
	f.Add(readTestdata(f, "slurm_topology.yaml"), "")
	f.Add(readTestdata(f, "slurm_topology.yaml"), "topo2")
	f.Add([]byte("- topology: t\n  tree:\n    switches:\n      - switch: a\n        nodes: [n1, n2]\n"), "t")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		top, err := ParseSlurmYAML(data, name)
		checkResult(t, top, err)
	})
}

func FuzzParseHyperNodes(f *testing.F) {
	f.Add(readTestdata(f, "volcano_tree.yaml"))
	f.Add(readTestdata(f, "volcano_leaf.yaml"))
	f.Add([]byte(`[{"kind":"HyperNode","metadata":{"name":"a"},"spec":{"tier":1,"members":[{"type":"Node","selector":{"regexMatch":{"pattern":"n"}}}]}}]`))
	nodes := map[string]map[string]string{"node-0": {"rack": "r0"}, "node-1": {"rack": "r1"}, "n2": nil}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, err := ParseHyperNodes(data, nodes)
		checkResult(t, top, err)
	})
}

func FuzzFromLabels(f *testing.F) {
	f.Add("zone", "rack", "a", "z1", "r1", "b", "z1", "")
	f.Add("rack", "rack", "a", "r", "r", "b", "", "x")
	f.Fuzz(func(t *testing.T, outer, inner, n1, o1, i1, n2, o2, i2 string) {
		labels := func(o, i string) map[string]string {
			m := map[string]string{}
			if o != "" {
				m[outer] = o
			}
			if i != "" {
				m[inner] = i
			}
			return m
		}
		top, err := FromLabels([]Level{{Name: outer}, {Name: inner}},
			map[string]map[string]string{n1: labels(o1, i1), n2: labels(o2, i2)})
		checkResult(t, top, err)
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"tux[0-3,7]", "node[01-04]", "a,b[1-2]", "r[1-2]n[1-3]", "x[", "y[9-1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := ExpandHostlist(expr)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error is not ErrSyntax: %v", err)
			}
			return
		}
		if len(names) > maxHostlist {
			t.Fatalf("%d names", len(names))
		}
	})
}
