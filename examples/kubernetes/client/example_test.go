package client_test

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
)

// ExampleMeter times a trainer's steps between two reports: each optimizer
// step (with the part spent synchronising gradients) is recorded under the
// shape it ran in, and Take returns the means a Report carries.
func ExampleMeter() {
	var m client.Meter
	shape := client.Shape{Nodes: 1, Replicas: 2, Local: 64}
	m.Optim(shape, 120*time.Millisecond, 20*time.Millisecond)
	m.Optim(shape, 80*time.Millisecond, 10*time.Millisecond)
	for _, st := range m.Take() {
		fmt.Printf("%d node, %d replicas, local %d: %d steps of %.3f s, %.3f s syncing\n",
			st.Nodes, st.Replicas, st.Local, st.Count, st.OptimSeconds, st.SyncSeconds)
	}
	fmt.Println("left after Take:", len(m.Take()))
	// Output:
	// 1 node, 2 replicas, local 64: 2 steps of 0.100 s, 0.015 s syncing
	// left after Take: 0
}
