// Package twin is the digital twin of goodsched's measurement loop: its
// test runs a small Pollux workload on a real kube-apiserver with kwok
// nodes, scheduled by the real host (internal/host) with the goodput
// policy, while emulated trainers (one goroutine per job) follow the batch
// plans, train at the simulator's ground-truth speed in compressed time,
// and report their step times and gradient statistics through the real
// HTTPS endpoint (internal/report) with real pod-bound tokens. It compares
// the average job completion time with scheduler/sim's for the same jobs,
// cluster, policy and round interval.
//
// The package has no non-test code.
package twin
