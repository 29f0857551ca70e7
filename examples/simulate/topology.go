package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/scheduler/topoplace"
)

// Per-tier throughput kept by a gang, from Gavel's measured consolidated
// vs unconsolidated throughputs (shared/data/gavel, MIT:
// simulation_throughputs.json, V100, median over its 19 multi-GPU job
// types): 1.908× at 4 GPUs for a gang that leaves its NVLink domain under
// one IB leaf, 3.346× at 8 GPUs for one that crosses the spine. Inside an
// NVL72 rack the gang is as consolidated as on one node.
const (
	keepLeaf  = 1 / 1.908
	keepSpine = 1 / 3.346
)

// gb200 describes the built-in -topology gb200 cluster: 32 NVL72 racks of
// 18 nodes × 4 GPUs (2,304 GPUs), 4 racks per IB leaf switch, the 8 leaves
// under one spine.
const (
	gb200Racks, gb200Nodes, gb200GPUs, gb200PerLeaf = 32, 18, 4, 4
	// gb200Scale multiplies the workload's GPU counts: a Pollux job of
	// 16 T4s becomes a 64-GPU gang, nearly a rack.
	gb200Scale = 4
	// gb200Type is the device type: the embedded step-time profiles are
	// measured on T4s, so the devices run at T4 speed; the topology is
	// GB200's.
	gb200Type = accel.TypeKey("t4")
)

// topoRun is -topology: the cluster's tree, the tier model, the
// constraints every placer is given and the per-run metrics.
type topoRun struct {
	top   *topology.Topology
	keep  map[string]float64 // per level, as topoplace.Placer.Keep
	level string             // the innermost level: the NVLink domain
	typ   accel.TypeKey
	// cons is every job's constraint: gangs of at least half the
	// innermost domain (and that fit one) require it; larger ones
	// require the next level; the others ask nothing.
	cons map[string]topoplace.Constraint
	x    *placement.Index

	mu        sync.Mutex
	stranded  map[int][]float64 // per run: one value per round
	violation map[int]int       // per run
}

// setupTopology reads -topology: "gb200" (built in: it also sets the
// cluster and merges and scales the workloads) or a file (Slurm
// topology.conf or topology.yaml, or Volcano HyperNode YAML, whose nodes
// are the -cluster's node names). It returns nil without -topology.
func setupTopology(o options, cluster *accel.Cluster, workloads *[]sim.Workload) (*topoRun, error) {
	if o.topology == "" {
		return nil, nil
	}
	if o.tenants != "" {
		return nil, usage("-topology and -tenants do not combine")
	}
	tr := &topoRun{stranded: map[int][]float64{}, violation: map[int]int{}}
	scale := 1
	if o.topology == "gb200" {
		var err error
		if *cluster, tr.top, err = buildGB200(); err != nil {
			return nil, err
		}
		tr.keep = map[string]float64{"rack": 1, "leaf": keepLeaf, "": keepSpine}
		tr.typ = gb200Type
		scale = gb200Scale
	} else {
		data, err := os.ReadFile(o.topology)
		if err != nil {
			return nil, usage("-topology: %v", err)
		}
		switch ext := strings.ToLower(filepath.Ext(o.topology)); {
		case ext == ".conf":
			tr.top, err = topology.ParseSlurmConf(data)
		case strings.Contains(string(data), "kind: HyperNode"):
			tr.top, err = topology.ParseHyperNodes(data, nil)
		default:
			tr.top, err = topology.ParseSlurmYAML(data, "")
		}
		if err != nil {
			return nil, usage("-topology %s: %v", o.topology, err)
		}
		levels := tr.top.Levels()
		if len(levels) == 0 {
			return nil, usage("-topology %s: no levels", o.topology)
		}
		// Innermost level as consolidated as one node, the next one out
		// at Gavel's unconsolidated ratio, beyond it the spine's.
		tr.keep = map[string]float64{levels[len(levels)-1].Name: 1, "": keepSpine}
		if len(levels) > 1 {
			tr.keep[levels[len(levels)-2].Name] = keepLeaf
		}
		types := cluster.Types()
		if len(types) != 1 {
			return nil, usage("-topology %s: want a cluster of one device type, have %d", o.topology, len(types))
		}
		tr.typ = types[0]
	}
	levels := tr.top.Levels()
	tr.level = levels[len(levels)-1].Name
	var err error
	if tr.x, err = placement.NewIndex(*cluster); err != nil {
		return nil, err
	}
	merged := sim.Workload{Name: "merged"}
	for k, w := range *workloads {
		for _, j := range w.Jobs {
			if len(*workloads) > 1 {
				j.Name = fmt.Sprintf("w%d-%s", k+1, j.Name)
			}
			j.Replicas *= scale
			merged.Jobs = append(merged.Jobs, j)
		}
	}
	slices.SortStableFunc(merged.Jobs, func(a, b sim.JobSpec) int { return int(a.Submit - b.Submit) })
	*workloads = []sim.Workload{merged}
	domain := 0 // devices in the largest innermost domain
	doms, _ := tr.top.Domains(tr.level)
	for _, d := range doms {
		n := 0
		for _, node := range d.Nodes {
			n += countOn(*cluster, node, tr.typ)
		}
		domain = max(domain, n)
	}
	tr.cons = map[string]topoplace.Constraint{}
	for _, j := range merged.Jobs {
		switch {
		case j.Replicas > domain && len(levels) > 1:
			tr.cons[j.Name] = topoplace.Constraint{Required: levels[len(levels)-2].Name}
		case 2*j.Replicas >= domain && j.Replicas <= domain:
			tr.cons[j.Name] = topoplace.Constraint{Required: tr.level}
		}
	}
	return tr, nil
}

func countOn(c accel.Cluster, node string, t accel.TypeKey) int {
	for _, n := range c.Nodes {
		if n.Name == node {
			k := 0
			for _, d := range n.Devices {
				if d.Type == t {
					k++
				}
			}
			return k
		}
	}
	return 0
}

// buildGB200 returns the -topology gb200 cluster and its tree: levels
// leaf › rack; the spine is the root.
func buildGB200() (accel.Cluster, *topology.Topology, error) {
	var c accel.Cluster
	spec := topology.Spec{Levels: []topology.Level{{Name: "leaf", Bandwidth: 50}, {Name: "rack", Bandwidth: 900}}}
	for r := 0; r < gb200Racks; r++ {
		leaf, rack := fmt.Sprintf("leaf%d", r/gb200PerLeaf), fmt.Sprintf("rack%02d", r)
		if r%gb200PerLeaf == 0 {
			spec.Domains = append(spec.Domains, topology.DomainSpec{Name: leaf, Level: "leaf"})
		}
		spec.Domains = append(spec.Domains, topology.DomainSpec{Name: rack, Level: "rack", Parent: leaf})
		for n := 0; n < gb200Nodes; n++ {
			name := fmt.Sprintf("%s-n%02d", rack, n)
			node := accel.Node{Name: name}
			for g := 0; g < gb200GPUs; g++ {
				node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, g), Node: name, Type: gb200Type, Index: g, Healthy: true})
			}
			c.Nodes = append(c.Nodes, node)
			spec.Nodes = append(spec.Nodes, topology.Membership{Node: name, Domain: rack})
		}
	}
	top, err := topology.Build(spec)
	return c, top, err
}

// topologyPlacers are the placers -topology compares, in order.
var topologyPlacers = []string{"kueue-bestfit", "kai-binpack", "default"}

// topologyPlacer returns the named topology-aware placer: kueue-bestfit,
// kai-binpack, or default (goodsched's least-loss), each given the run's
// constraints.
func (tr *topoRun) topologyPlacer(name string) (placement.Placer, bool) {
	st := map[string]topoplace.Strategy{"kueue-bestfit": topoplace.BestFit, "kai-binpack": topoplace.Binpack, "default": topoplace.LeastLoss}
	s, ok := st[name]
	if !ok {
		return nil, false
	}
	p := topoplace.Placer{Topology: tr.top, Strategy: s, Constraint: tr.constraint}
	if s == topoplace.LeastLoss {
		p.Keep = tr.keep
	}
	return p, true
}

func (tr *topoRun) constraint(job string) topoplace.Constraint { return tr.cons[job] }

// expand registers POLICY/PLACER for every policy and topology placer
// and returns those names.
func (tr *topoRun) expand(names []string, reg map[string]policySpec) []string {
	var out []string
	for _, n := range names {
		for _, pn := range topologyPlacers {
			spec := reg[n]
			spec.placer, _ = tr.topologyPlacer(pn)
			spec.about = fmt.Sprintf("%s, placed by %s", spec.about, pn)
			reg[n+"/"+pn] = spec
			out = append(out, n+"/"+pn)
		}
	}
	return out
}

// tiers is run k's network model: the slowest tier each gang spans, and
// per round the stranded capacity and required-constraint violations.
func (tr *topoRun) tiers(k int) *sim.Tiers {
	keep, _ := keepTableOf(tr.top, tr.keep)
	return &sim.Tiers{
		Keep: keep,
		Observe: func(r sim.TiersRound) {
			minGang := 0
			for _, w := range r.Waiting {
				if minGang == 0 || w < minGang {
					minGang = w
				}
			}
			s, _ := topoplace.Stranded(tr.x, tr.top, r.Current, tr.typ, tr.level, minGang)
			v, _ := topoplace.Check(tr.x, tr.top, r.Current, tr.constraint)
			tr.mu.Lock()
			tr.stranded[k] = append(tr.stranded[k], float64(s))
			tr.violation[k] += v
			tr.mu.Unlock()
		},
	}
}

// keepTableOf turns per-level keep fractions into the ground-truth
// function sim.Tiers.Keep: the fraction kept at the innermost domain
// holding all the nodes ("" = none holds them; one node keeps all).
func keepTableOf(top *topology.Topology, keep map[string]float64) (func([]string) float64, error) {
	return func(nodes []string) float64 {
		sp, err := top.Span(nodes)
		if err != nil || sp.SameNode {
			return 1
		}
		if v, ok := keep[sp.Level]; ok {
			return v
		}
		return keep[""]
	}, nil
}

// summarise adds stranded_gpus_avg and required_violations to the
// summaries: runs are policy-major, workloads per policy.
func (tr *topoRun) summarise(sums []summary, workloads int) {
	for k := range sums {
		var st, vi float64
		for w := 0; w < workloads; w++ {
			run := k*workloads + w
			xs := tr.stranded[run]
			m := 0.0
			for _, x := range xs {
				m += x
			}
			if len(xs) > 0 {
				m /= float64(len(xs))
			}
			st += m
			vi += float64(tr.violation[run])
		}
		st, vi = st/float64(workloads), vi/float64(workloads)
		sums[k].StrandedGPUsAvg, sums[k].RequiredViolations = &st, &vi
	}
}
