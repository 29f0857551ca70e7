// Package polluxdata embeds the measured model profiles and workloads of the
// Pollux simulator (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for
// Goodput-Optimized Deep Learning", OSDI 2021), so that the simulator's
// tests and the examples/simulate defaults work in a fresh clone.
//
// Source: https://github.com/petuum/adaptdl, branch osdi21-artifact, commit
// c793c7089bd307462686339d29707925c461f9a9, directory simulator/; licence
// Apache-2.0 (Copyright 2020 Petuum, Inc.). Data only; no code was copied.
// The Philly trace (traces/philly.csv) is deliberately not included.
//
// Layout of FS (byte-identical to upstream):
//
//	traces/<model>/placements.csv      step and sync time per placement and per-GPU batch (4× T4 nodes)
//	traces/<model>/scalability.csv     the same for larger (nodes, replicas) shapes
//	traces/<model>/validation-<M>.csv  progress, iterations and gradient statistics per epoch at batch M
//	workloads/workload-{1..8}.csv      160-job traces at 1.0× load (tuned jobs)
//	workloads-0.5, -1.5, -2.0          80, 240 and 320 jobs per trace
//	workloads-realistic                the 1.0× jobs with Philly's GPU counts
//
// Models: bert, cifar10, deepspeech2, imagenet, ncf, yolov3. Use it with
// sim.LoadProfiles(sim.ProfileOptions{}, sim.ProfileSource{FS: polluxdata.FS,
// Dir: "traces"}) and sim.LoadWorkloads(polluxdata.FS, "workloads").
package polluxdata

import "embed"

// FS holds the embedded files. It is read-only and safe for concurrent use.
//
//go:embed traces workloads workloads-0.5 workloads-1.5 workloads-2.0 workloads-realistic
var FS embed.FS
