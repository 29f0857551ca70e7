package topology

import (
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustSpan(t *testing.T, top *Topology, nodes ...string) Span {
	t.Helper()
	s, err := top.Span(nodes)
	if err != nil {
		t.Fatalf("Span(%v): %v", nodes, err)
	}
	return s
}

func levelNames(top *Topology) []string {
	var out []string
	for _, l := range top.Levels() {
		out = append(out, l.Name)
	}
	return out
}

func domainNames(t *testing.T, top *Topology, level string) map[string][]string {
	t.Helper()
	ds, err := top.Domains(level)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range ds {
		out[d.Name] = d.Nodes
	}
	return out
}

// The topology/tree example of Slurm's topology.conf(5) man page.
func TestSlurmConfTreeManPageExample(t *testing.T) {
	top, err := ParseSlurmConf(readTestdata(t, "slurm_tree.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(top), []string{"switch-1", "switch-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v, want %v", got, want)
	}
	if n := len(top.Nodes()); n != 18 {
		t.Fatalf("%d nodes, want 18 (dev0..dev17)", n)
	}
	leaves := domainNames(t, top, "switch-0")
	if got := leaves["s1"]; !reflect.DeepEqual(got, []string{"dev10", "dev11", "dev6", "dev7", "dev8", "dev9"}) {
		t.Fatalf("s1 holds %v", got)
	}
	if s := mustSpan(t, top, "dev0", "dev5"); s.Domain != "s0" || s.Level != "switch-0" {
		t.Fatalf("dev0+dev5 span %+v, want s0", s)
	}
	if s := mustSpan(t, top, "dev0", "dev6", "dev17"); s.Domain != "s3" || s.Level != "switch-1" {
		t.Fatalf("span %+v, want s3", s)
	}
	if s := mustSpan(t, top, "dev3", "dev3"); !s.SameNode {
		t.Fatalf("one node spans %+v", s)
	}
	d, ok, err := top.DomainOf("dev12", "switch-0")
	if err != nil || !ok || d.Name != "s2" || d.Parent != "s3" {
		t.Fatalf("DomainOf(dev12, switch-0) = %+v %v %v", d, ok, err)
	}
}

// The topology/block example of topology.conf(5): four 32-node blocks,
// BlockSizes=30,120, so one aggregate of four base blocks.
func TestSlurmConfBlockManPageExample(t *testing.T) {
	top, err := ParseSlurmConf(readTestdata(t, "slurm_block.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(top), []string{"block-120", "block"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v, want %v", got, want)
	}
	if s := mustSpan(t, top, "node1", "node32"); s.Domain != "block1" {
		t.Fatalf("span %+v, want block1", s)
	}
	if s := mustSpan(t, top, "node1", "node128"); s.Domain != "block-120/0" {
		t.Fatalf("span %+v, want block-120/0", s)
	}
	if ds := domainNames(t, top, "block-120"); len(ds["block-120/0"]) != 128 {
		t.Fatalf("aggregate holds %d nodes, want 128", len(ds["block-120/0"]))
	}
}

func TestSlurmBlockIncompleteAggregate(t *testing.T) {
	conf := "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockName=b3 Nodes=n[5-6]\nBlockSizes=2,4,8\n"
	top, err := ParseSlurmConf([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(top), []string{"block-8", "block-4", "block"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v", got)
	}
	if s := mustSpan(t, top, "n1", "n4"); s.Domain != "block-4/0" {
		t.Fatalf("span %+v", s)
	}
	// b3 has no complete block-4 group, and there is no complete block-8.
	if s := mustSpan(t, top, "n1", "n5"); s.Domain != "" {
		t.Fatalf("span %+v, want none", s)
	}
	if ds := domainNames(t, top, "block-8"); len(ds) != 0 {
		t.Fatalf("block-8 domains %v", ds)
	}
}

// The EXAMPLE of Slurm's topology.yaml(5) man page.
func TestSlurmYAMLManPageExample(t *testing.T) {
	data := readTestdata(t, "slurm_topology.yaml")
	tree, err := ParseSlurmYAML(data, "") // topo1 is the cluster default
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(tree), []string{"switch-1", "switch-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v", got)
	}
	if s := mustSpan(t, tree, "node01", "node02"); s.Domain != "s1" {
		t.Fatalf("span %+v", s)
	}
	if s := mustSpan(t, tree, "node01", "node04"); s.Domain != "sw_root" {
		t.Fatalf("span %+v", s)
	}
	block, err := ParseSlurmYAML(data, "topo2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(block), []string{"block-16", "block"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v", got)
	}
	if s := mustSpan(t, block, "node05", "node08"); s.Domain != "b2" {
		t.Fatalf("span %+v", s)
	}
	if s := mustSpan(t, block, "node01", "node16"); s.Domain != "block-16/0" {
		t.Fatalf("span %+v", s)
	}
	flat, err := ParseSlurmYAML(data, "topo3")
	if err != nil || len(flat.Levels()) != 0 {
		t.Fatalf("flat: %v %v", flat, err)
	}
	if _, err := ParseSlurmYAML(data, "nope"); !errors.Is(err, ErrNoTopology) {
		t.Fatalf("unknown topology: %v", err)
	}
}

// The leaf HyperNode example of Volcano's v1.11 notes: exactMatch node-0
// and regexMatch node-[01] select node-0 and node-1, node-0 once.
func TestHyperNodeLeafExample(t *testing.T) {
	// node-10 matches too: Volcano compiles the pattern and calls
	// MatchString, which is unanchored.
	nodes := map[string]map[string]string{"node-0": nil, "node-1": nil, "node-2": nil, "node-10": nil}
	top, err := ParseHyperNodes(readTestdata(t, "volcano_leaf.yaml"), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := domainNames(t, top, "tier-1")["s0"]; !reflect.DeepEqual(got, []string{"node-0", "node-1", "node-10"}) {
		t.Fatalf("s0 holds %v", got)
	}
	if _, ok, err := top.DomainOf("node-2", "tier-1"); ok || err == nil {
		t.Fatalf("node-2 should be unknown to the topology, got ok=%v err=%v", ok, err)
	}
}

// The s0..s6 tree of Volcano's network-topology user guide, and its three
// stated spans.
func TestHyperNodeTreeUserGuide(t *testing.T) {
	top, err := ParseHyperNodes(readTestdata(t, "volcano_tree.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(top), []string{"tier-3", "tier-2", "tier-1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v", got)
	}
	for _, c := range []struct {
		a, b, domain, level string
	}{
		{"node0", "node1", "s0", "tier-1"},
		{"node1", "node2", "s4", "tier-2"},
		{"node0", "node4", "s6", "tier-3"},
	} {
		if s := mustSpan(t, top, c.a, c.b); s.Domain != c.domain || s.Level != c.level {
			t.Errorf("%s+%s span %+v, want %s at %s", c.a, c.b, s, c.domain, c.level)
		}
	}
}

func TestHyperNodeJSONAndLabelMatch(t *testing.T) {
	js := `{"apiVersion":"v1","kind":"List","items":[
	 {"kind":"HyperNode","metadata":{"name":"rack-0"},"spec":{"tier":1,"tierName":"rack",
	  "members":[{"type":"Node","selector":{"labelMatch":{"matchLabels":{"topology-rack":"rack-0"}}}}]}},
	 {"kind":"HyperNode","metadata":{"name":"spine"},"spec":{"tier":2,
	  "members":[{"type":"HyperNode","selector":{"regexMatch":{"pattern":"^rack-"}}}]}}]}`
	nodes := map[string]map[string]string{
		"w1": {"topology-rack": "rack-0"}, "w2": {"topology-rack": "rack-0"}, "w3": {"topology-rack": "rack-1"},
	}
	top, err := ParseHyperNodes([]byte(js), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := levelNames(top), []string{"tier-2", "rack"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("levels %v", got)
	}
	if got := domainNames(t, top, "tier-2")["spine"]; !reflect.DeepEqual(got, []string{"w1", "w2"}) {
		t.Fatalf("spine holds %v", got)
	}
}

// Kueue's documented level list (block › rack › hostname).
func TestFromLabelsKueueLevels(t *testing.T) {
	const block, rack, host = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"
	levels := []Level{{Name: block, Bandwidth: 25}, {Name: rack, Bandwidth: 50}, {Name: host, Bandwidth: 900}}
	nodes := map[string]map[string]string{}
	for i := range 8 {
		name := "n" + strconv.Itoa(i)
		nodes[name] = map[string]string{block: "b" + strconv.Itoa(i/4), rack: "r" + strconv.Itoa(i/2%2), host: name}
	}
	nodes["cpu"] = map[string]string{block: "b1", rack: "r0"} // no hostname label: hangs from its rack
	top, err := FromLabels(levels, nodes)
	if err != nil {
		t.Fatal(err)
	}
	racks := domainNames(t, top, rack)
	if len(racks) != 4 { // r0 and r1 under both blocks are four racks
		t.Fatalf("racks %v", racks)
	}
	if got := racks["b1/r0"]; !reflect.DeepEqual(got, []string{"cpu", "n4", "n5"}) {
		t.Fatalf("b1/r0 holds %v", got)
	}
	if s := mustSpan(t, top, "n0", "n1"); s.Domain != "b0/r0" || s.Bandwidth != 50 {
		t.Fatalf("span %+v", s)
	}
	if s := mustSpan(t, top, "n0", "n7"); s.Domain != "" || s.Level != "" {
		t.Fatalf("span across blocks %+v, want none", s)
	}
	if s := mustSpan(t, top, "n1", "n3"); s.Level != block || s.Bandwidth != 25 {
		t.Fatalf("span %+v", s)
	}
	bad := map[string]map[string]string{"x": {rack: "r0"}}
	if _, err := FromLabels(levels, bad); !errors.Is(err, ErrUnknownLevel) {
		t.Fatalf("inner label without outer: %v", err)
	}
}

func TestBadInputTypedErrors(t *testing.T) {
	lv := []Level{{Name: "rack"}, {Name: "nvl"}}
	cases := []struct {
		name string
		spec Spec
		want error
	}{
		{"cycle", Spec{Levels: lv, Domains: []DomainSpec{{"a", "rack", "b"}, {"b", "nvl", "a"}}}, ErrCycle},
		{"self cycle", Spec{Levels: lv, Domains: []DomainSpec{{"a", "rack", "a"}}}, ErrCycle},
		{"two domains", Spec{Levels: lv, Domains: []DomainSpec{{"a", "rack", ""}, {"b", "rack", ""}},
			Nodes: []Membership{{"n", "a"}, {"n", "b"}}}, ErrNodeInTwoDomains},
		{"unknown level", Spec{Levels: lv, Domains: []DomainSpec{{"a", "zone", ""}}}, ErrUnknownLevel},
		{"negative bandwidth", Spec{Levels: []Level{{Name: "rack", Bandwidth: -1}}}, ErrBandwidth},
		{"NaN bandwidth", Spec{Levels: []Level{{Name: "rack", Bandwidth: math.NaN()}}}, ErrBandwidth},
		{"Inf bandwidth", Spec{Levels: []Level{{Name: "rack", Bandwidth: math.Inf(1)}}}, ErrBandwidth},
		{"level order", Spec{Levels: lv, Domains: []DomainSpec{{"a", "nvl", ""}, {"b", "rack", "a"}}}, ErrLevelOrder},
		{"unknown parent", Spec{Levels: lv, Domains: []DomainSpec{{"a", "nvl", "zz"}}}, ErrUnknownDomain},
		{"duplicate domain", Spec{Levels: lv, Domains: []DomainSpec{{"a", "nvl", ""}, {"a", "nvl", ""}}}, ErrDuplicate},
	}
	for _, c := range cases {
		if _, err := Build(c.spec); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	top, err := Build(Spec{Levels: lv, Domains: []DomainSpec{{"r", "rack", ""}}, Nodes: []Membership{{"n", "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := top.DomainOf("n", "zone"); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("DomainOf unknown level: %v", err)
	}
	if _, err := top.Domains("zone"); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("Domains unknown level: %v", err)
	}
	if _, err := top.Span([]string{"n", "ghost"}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("Span unknown node: %v", err)
	}
	if _, err := top.WithBandwidths(map[string]float64{"rack": math.Inf(-1)}); !errors.Is(err, ErrBandwidth) {
		t.Errorf("WithBandwidths -Inf: %v", err)
	}
	if _, err := top.WithBandwidths(map[string]float64{"zone": 1}); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("WithBandwidths unknown level: %v", err)
	}

	parsers := []struct {
		name string
		err  error
		want error
	}{
		{"slurm cycle", errOf(ParseSlurmConf([]byte("SwitchName=a Switches=b\nSwitchName=b Switches=a\n"))), ErrCycle},
		{"slurm node twice", errOf(ParseSlurmConf([]byte("SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2\n"))), ErrNodeInTwoDomains},
		{"slurm unknown child", errOf(ParseSlurmConf([]byte("SwitchName=a Switches=zz\n"))), ErrUnknownDomain},
		{"slurm bad range", errOf(ParseSlurmConf([]byte("SwitchName=a Nodes=n[3-1]\n"))), ErrSyntax},
		{"slurm bad key", errOf(ParseSlurmConf([]byte("SwitchName=a Colour=red\n"))), ErrSyntax},
		{"slurm block sizes", errOf(ParseSlurmConf([]byte("BlockName=a Nodes=n1\nBlockSizes=4,12\n"))), ErrSyntax},
		{"hypernode cycle", errOf(ParseHyperNodes([]byte(hn("a", 1, "HyperNode", "b")+"---\n"+hn("b", 1, "HyperNode", "a")), nil)), ErrCycle},
		{"hypernode node twice", errOf(ParseHyperNodes([]byte(hn("a", 1, "Node", "n")+"---\n"+hn("b", 1, "Node", "n")), nil)), ErrNodeInTwoDomains},
		{"hypernode tier order", errOf(ParseHyperNodes([]byte(hn("a", 1, "HyperNode", "b")+"---\n"+hn("b", 2, "Node", "n")), nil)), ErrLevelOrder},
		{"hypernode bad regex", errOf(ParseHyperNodes([]byte("kind: HyperNode\nmetadata: {name: a}\nspec:\n  tier: 1\n  members:\n  - type: Node\n    selector:\n      regexMatch: {pattern: \"node-[\"}\n"), nil)), ErrSyntax},
		{"hypernode matchExpressions", errOf(ParseHyperNodes([]byte("kind: HyperNode\nmetadata: {name: a}\nspec:\n  tier: 1\n  members:\n  - type: Node\n    selector:\n      labelMatch:\n        matchExpressions: []\n"), nil)), ErrUnsupported},
		{"hypernode tier 0", errOf(ParseHyperNodes([]byte("kind: HyperNode\nmetadata: {name: a}\nspec: {tier: 0}\n"), nil)), ErrSyntax},
		{"yaml ring", errOf(ParseSlurmYAML([]byte("- topology: r\n  ring:\n    rings: []\n"), "")), ErrUnsupported},
	}
	for _, p := range parsers {
		if !errors.Is(p.err, p.want) {
			t.Errorf("%s: got %v, want %v", p.name, p.err, p.want)
		}
	}
}

func errOf(_ *Topology, err error) error { return err }

func hn(name string, tier int, typ, member string) string {
	return "kind: HyperNode\nmetadata:\n  name: " + name + "\nspec:\n  tier: " + strconv.Itoa(tier) +
		"\n  members:\n  - type: " + typ + "\n    selector:\n      exactMatch:\n        name: " + member + "\n"
}

func TestExpandHostlist(t *testing.T) {
	for expr, want := range map[string][]string{
		"tux[0-3,7]":        {"tux0", "tux1", "tux2", "tux3", "tux7"},
		"node[01-03]":       {"node01", "node02", "node03"},
		"a,b[1-2],c":        {"a", "b1", "b2", "c"},
		"r[1-2]n[1-2]":      {"r1n1", "r1n2", "r2n1", "r2n2"},
		"s[0-2,4-8,12]":     {"s0", "s1", "s2", "s4", "s5", "s6", "s7", "s8", "s12"},
		"tux[0-3,12,18-20]": {"tux0", "tux1", "tux2", "tux3", "tux12", "tux18", "tux19", "tux20"},
	} {
		got, err := ExpandHostlist(expr)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
	for _, bad := range []string{"a[", "a]", "a[1-]", "a[x]", "a[0-99999999]", "a[[1]]"} {
		if _, err := ExpandHostlist(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ExpandHostlist(%q): %v, want ErrSyntax", bad, err)
		}
	}
}

// Span against a brute-force oracle on random trees: the innermost domain
// whose node list holds every node of the set.
func TestSpanMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(47))
	for trial := range 200 {
		depth := 1 + rng.Intn(4)
		var spec Spec
		for l := range depth {
			spec.Levels = append(spec.Levels, Level{Name: "L" + strconv.Itoa(l), Bandwidth: float64(l + 1)})
		}
		var byLevel [][]string
		for l := range depth {
			var names []string
			for k := range 1 + rng.Intn(4) {
				name := "d" + strconv.Itoa(l) + "." + strconv.Itoa(k)
				parent := ""
				if l > 0 && rng.Intn(6) > 0 {
					up := rng.Intn(l) // any outer level, not only the adjacent one
					parent = byLevel[up][rng.Intn(len(byLevel[up]))]
				}
				spec.Domains = append(spec.Domains, DomainSpec{Name: name, Level: spec.Levels[l].Name, Parent: parent})
				names = append(names, name)
			}
			byLevel = append(byLevel, names)
		}
		var nodes []string
		for n := range 2 + rng.Intn(10) {
			node := "n" + strconv.Itoa(n)
			l := rng.Intn(depth)
			spec.Nodes = append(spec.Nodes, Membership{Node: node, Domain: byLevel[l][rng.Intn(len(byLevel[l]))]})
			nodes = append(nodes, node)
		}
		top, err := Build(spec)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		set := slices.Clone(nodes)
		rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
		set = set[:2+rng.Intn(len(set)-1)]
		got, err := top.Span(set)
		if err != nil {
			t.Fatal(err)
		}
		want, wantLevel := "", -1
		for l := range depth {
			ds, _ := top.Domains(spec.Levels[l].Name)
			for _, d := range ds {
				holds := true
				for _, n := range set {
					if !slices.Contains(d.Nodes, n) {
						holds = false
					}
				}
				if holds && l > wantLevel {
					want, wantLevel = d.Name, l
				}
			}
		}
		if got.Domain != want {
			t.Fatalf("trial %d: Span(%v) = %+v, brute force %q", trial, set, got, want)
		}
		if want != "" && got.Bandwidth != float64(wantLevel+1) {
			t.Fatalf("trial %d: bandwidth %v, want %v", trial, got.Bandwidth, wantLevel+1)
		}
	}
}

// BenchmarkSpan512of10k: the innermost domain of a 512-node gang on a
// 10,000-node zone › block › rack tree (8 blocks × 25 racks × 50 nodes).
func BenchmarkSpan512of10k(b *testing.B) {
	spec := Spec{Levels: []Level{{Name: "zone"}, {Name: "block"}, {Name: "rack"}}}
	spec.Domains = append(spec.Domains, DomainSpec{Name: "z", Level: "zone"})
	var nodes []string
	for bl := range 8 {
		bn := "b" + strconv.Itoa(bl)
		spec.Domains = append(spec.Domains, DomainSpec{Name: bn, Level: "block", Parent: "z"})
		for r := range 25 {
			rn := bn + "r" + strconv.Itoa(r)
			spec.Domains = append(spec.Domains, DomainSpec{Name: rn, Level: "rack", Parent: bn})
			for n := range 50 {
				node := rn + "n" + strconv.Itoa(n)
				spec.Nodes = append(spec.Nodes, Membership{Node: node, Domain: rn})
				nodes = append(nodes, node)
			}
		}
	}
	top, err := Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	gang := nodes[100 : 100+512] // spans racks within block b0
	b.ResetTimer()
	for range b.N {
		if s, err := top.Span(gang); err != nil || s.Level != "block" {
			b.Fatal(s, err)
		}
	}
}
