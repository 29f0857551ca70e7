// Package gavel implements Gavel's heterogeneity-aware scheduling policies
// (Narayanan et al., OSDI 2020) for rigid jobs on a cluster of several
// accelerator types, solved in milliseconds by exploiting their structure,
// and Gavel's round mechanism behind the scheduler.Policy interface.
//
// # The model
//
// A Problem holds a throughput matrix T[job][type] (steps per second of the
// job's whole gang on that type; a Table, a goodput model or Gavel's
// published matrix supply it), devices per type and per-job scale factors
// and weights. A policy chooses time shares X[job][type] with
// Σ_type X ≤ 1 per job and Σ_job scale·X ≤ devices per type; the job's
// effective throughput is Σ_type T·X. The objectives are values:
//
//   - MaxMinFairness: maximise the minimum of scale factor × effective
//     throughput over the job's proportional throughput and weight
//     (Gavel's heterogeneity-aware LAS, which equalises device-time
//     shares); HeterogeneityBlind solves it with every T = 1 (Tiresias'
//     LAS analogue); WaterFilling continues level by level (multi-level
//     fairness).
//   - FinishTimeFairness: minimise the largest Themis ρ against the job's
//     isolated share, 1/M of the cluster.
//   - MinMakespan: minimise the time until all jobs finish.
//   - MaxThroughputPerCost: maximise Σ throughput / price, with optional
//     SLO rows.
//
// Each objective computes what Gavel's policy file computes (the tests
// hold them to LPs written from those files); goodsched's earlier
// variants stay available as options (EqualTimeShares, Normalized).
//
// # The solver
//
// Only the per-type capacity rows couple the jobs. Solve prices those K rows
// (column generation on the Lagrangian dual, Kelley's cutting planes in K
// dimensions): for given device prices each job's cheapest mix is read off
// a K+1-point lower convex hull, and the best level is a weighted
// selection over the hull breakpoints, so each pricing round costs
// O(jobs·K) expected; about 50 rounds reach a 1e-7 gap whether there are
// 100 or 10,000 jobs (2,048 jobs × 4 types: ≈ 7 ms of CPU). Every price
// vector gives a proven bound by weak duality, and the restricted master (K+1
// rows) gives a feasible allocation, so Solution.Gap is proven, not
// assumed. Finish-time fairness bisects on ρ with a max-min feasibility
// test that proves each step either way; SLO feasibility is a max-min test
// too. POP-style random partitioning (Settings.Partitions) is available for
// very large inputs, but is off by default: the number of pricing rounds
// does not grow with the number of jobs, so partitioning only adds rounds
// (see the benchmarks). gonum's dense simplex is used only as the oracle in
// tests. Solve keeps no state and is safe for concurrent use.
//
// # The host contract (Policy)
//
//  1. Build one Policy per cluster with NewPolicy; give it a
//     ThroughputFunc (a Table's Throughput, or SpeedupThroughput over the
//     jobs' goodput models) and an Objective.
//  2. Each round, call Allocate (directly or through scheduler.Scheduler)
//     with the jobs, the cluster, the assignments in effect (Input.Current)
//     and the round's logical time Input.Now, non-decreasing. Rounds are
//     meant to be Policy.RoundLength apart (Config.RoundLength, 6 minutes
//     as in Gavel; scheduler/sim uses it unless told otherwise): a job
//     rotated out pays a restart, so short rounds multiply restarts.
//  3. The Policy credits the jobs in Current with the time since the last
//     call on their devices' type, solves for X and returns one Target per
//     job: a type and the job's gang size, or Count 0 to wait this round.
//  4. Place the targets (the scheduler's Placer keeps jobs whose type and
//     count are unchanged on their devices) and apply them; what actually
//     ran is what the next round's Input.Current reports.
//
// Over rounds, each job's share of time on each type approaches X: jobs are
// served in order of effective throughput due under X over throughput
// received.
package gavel
