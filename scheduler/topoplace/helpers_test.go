package topoplace

import (
	"fmt"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
)

// fabric builds blocks × racks × nodes of gpus devices ("b0/r1/n2"),
// levels block › rack, with some devices unhealthy.
func fabric(t testing.TB, blocks, racks, nodes, gpus int, unhealthy map[string]bool) (accel.Cluster, *topology.Topology, *placement.Index) {
	t.Helper()
	var c accel.Cluster
	spec := topology.Spec{Levels: []topology.Level{{Name: "block", Bandwidth: 50}, {Name: "rack", Bandwidth: 900}}}
	for b := 0; b < blocks; b++ {
		bn := fmt.Sprintf("b%d", b)
		spec.Domains = append(spec.Domains, topology.DomainSpec{Name: bn, Level: "block"})
		for r := 0; r < racks; r++ {
			rn := fmt.Sprintf("%s/r%d", bn, r)
			spec.Domains = append(spec.Domains, topology.DomainSpec{Name: rn, Level: "rack", Parent: bn})
			for n := 0; n < nodes; n++ {
				nn := fmt.Sprintf("%s/n%d", rn, n)
				node := accel.Node{Name: nn}
				for g := 0; g < gpus; g++ {
					id := fmt.Sprintf("%s/%d", nn, g)
					node.Devices = append(node.Devices, accel.Device{ID: id, Node: nn, Type: "gb200", Index: g, Healthy: !unhealthy[id]})
				}
				c.Nodes = append(c.Nodes, node)
				spec.Nodes = append(spec.Nodes, topology.Membership{Node: nn, Domain: rn})
			}
		}
	}
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	x, err := placement.NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, top, x
}

func constraints(m map[string]Constraint) func(string) Constraint {
	return func(job string) Constraint { return m[job] }
}
