package topoplace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
)

// BenchmarkPlaceGang512On10kNodes: one Place of a 512-device gang that
// requires one block (16 NVL72 racks of 18 nodes × 4 GPUs), on 10,000
// nodes with about half of them held by jobs of 1 to 16 whole nodes that
// keep their devices; examples/benchmark reports its p99 as
// place_gang512_10k_nodes_p99_ms.
func BenchmarkPlaceGang512On10kNodes(b *testing.B) {
	var c accel.Cluster
	spec := topology.Spec{Levels: []topology.Level{{Name: "block"}, {Name: "rack"}}}
	for n := 0; n < 10_000; n++ {
		rack, block := fmt.Sprintf("r%04d", n/18), fmt.Sprintf("b%03d", n/18/16)
		if n%(18*16) == 0 {
			spec.Domains = append(spec.Domains, topology.DomainSpec{Name: block, Level: "block"})
		}
		if n%18 == 0 {
			spec.Domains = append(spec.Domains, topology.DomainSpec{Name: rack, Level: "rack", Parent: block})
		}
		name := fmt.Sprintf("n%05d", n)
		node := accel.Node{Name: name}
		for g := 0; g < 4; g++ {
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, g), Node: name, Type: "gb200", Index: g, Healthy: true})
		}
		c.Nodes = append(c.Nodes, node)
		spec.Nodes = append(spec.Nodes, topology.Membership{Node: name, Domain: rack})
	}
	top, err := topology.Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	x, err := placement.NewIndex(c)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cur, tg := occupy(rng, c)
	tg = append(tg, placement.Target{Job: "gang", Type: "gb200", Count: 512})
	p := Placer{Topology: top, Constraint: func(job string) Constraint {
		if job == "gang" {
			return Constraint{Required: "block"}
		}
		return Constraint{}
	}}
	in := placement.PlaceInput{Cluster: x, Current: cur, Targets: tg}
	ctx := context.Background()
	if res, err := p.Place(ctx, in); err != nil || len(res.Unplaced) > 0 {
		b.Fatal(err, res.Unplaced)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Place(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// occupy gives about half the nodes to jobs of 1, 2, 4, 8 or 16
// consecutive whole nodes, and returns their assignments and targets.
func occupy(rng *rand.Rand, c accel.Cluster) ([]placement.Assignment, []placement.Target) {
	var cur []placement.Assignment
	var tg []placement.Target
	for n := 0; n < len(c.Nodes); {
		size := 1 << rng.IntN(5)
		if rng.IntN(2) == 0 {
			job := fmt.Sprintf("a-%05d", n)
			var ids []string
			for _, node := range c.Nodes[n:min(n+size, len(c.Nodes))] {
				for _, d := range node.Devices {
					ids = append(ids, d.ID)
				}
			}
			cur = append(cur, placement.Assignment{Job: job, Devices: ids})
			tg = append(tg, placement.Target{Job: job, Type: "gb200", Count: len(ids)})
		}
		n += size
	}
	return cur, tg
}
