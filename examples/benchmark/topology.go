package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/topoplace"
)

// topologyFigure is place_gang512_10k_nodes_p99_ms: the 99th percentile,
// over reps placements after a warm-up, of one topoplace.Placer.Place
// (LeastLoss) of a 512-device gang that requires one block, on 10,000
// nodes × 4 GPUs in NVL72 racks of 18 nodes, 16 racks per block, about
// half the nodes held by jobs of 1, 2, 4, 8 or 16 consecutive whole nodes
// that keep their devices (their targets are in the same call, as in a
// scheduling round). -quick: 1,000
// nodes, a 128-device gang.
func topologyFigure(clk clock, rng *rand.Rand, quick bool) (float64, error) {
	nodes, gang, reps := 10_000, 512, 200
	if quick {
		nodes, gang, reps = 1_000, 128, 50
	}
	c, top, err := fabricGB200(nodes, 18, 16)
	if err != nil {
		return 0, err
	}
	x, err := placement.NewIndex(c)
	if err != nil {
		return 0, err
	}
	var cur []placement.Assignment
	var tg []placement.Target
	for n := 0; n < len(c.Nodes); {
		size := 1 << rng.IntN(5)
		if rng.IntN(2) == 0 {
			job := fmt.Sprintf("run-%05d", n)
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
	tg = append(tg, placement.Target{Job: "gang", Type: "gb200", Count: gang})
	slices.SortFunc(tg, func(a, b placement.Target) int { return strings.Compare(a.Job, b.Job) })
	p := topoplace.Placer{Topology: top, Constraint: func(job string) topoplace.Constraint {
		if job == "gang" {
			return topoplace.Constraint{Required: "block"}
		}
		return topoplace.Constraint{}
	}}
	in := placement.PlaceInput{Cluster: x, Current: cur, Targets: tg}
	ctx := context.Background()
	times := make([]float64, 0, reps)
	for r := -1; r < reps; r++ {
		start := clk()
		res, err := p.Place(ctx, in)
		ms := float64((clk() - start).Nanoseconds()) / 1e6
		if err != nil {
			return 0, err
		}
		if len(res.Unplaced) > 0 {
			return 0, fmt.Errorf("topology figure: %s unplaced: %s", res.Unplaced[0].Target.Job, res.Unplaced[0].Reason.Text)
		}
		if r >= 0 { // r = -1 is the warm-up that builds the index's model
			times = append(times, ms)
		}
	}
	slices.Sort(times)
	return times[(len(times)*99+99)/100-1], nil
}

// fabricGB200 builds nodes × 4 GB200 GPUs ("n00000/0"), racks of perRack
// nodes (an NVLink domain each) and blocks of perBlock racks.
func fabricGB200(nodes, perRack, perBlock int) (accel.Cluster, *topology.Topology, error) {
	var c accel.Cluster
	spec := topology.Spec{Levels: []topology.Level{{Name: "block", Bandwidth: 50}, {Name: "rack", Bandwidth: 900}}}
	for n := 0; n < nodes; n++ {
		r, b := n/perRack, n/perRack/perBlock
		rack, block := fmt.Sprintf("rack%04d", r), fmt.Sprintf("block%03d", b)
		if n%(perRack*perBlock) == 0 {
			spec.Domains = append(spec.Domains, topology.DomainSpec{Name: block, Level: "block"})
		}
		if n%perRack == 0 {
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
	return c, top, err
}
