// Package fleet schedules a fleet of clusters the way Singularity does:
// one global layer above the per-cluster scheduler that routes waiting
// jobs to clusters and moves running ones between clusters when what the
// move is predicted to gain exceeds what it costs, after which every
// cluster runs its own scheduler.Scheduler round on its own devices.
//
// Like the rest of goodsched it decides and the host applies: no clock
// is read, nothing is stored but the per-cluster Schedulers (whose caches
// make the next round cheaper), and the same Input gives the same Plan.
// Fleet.Schedule runs the clusters' rounds concurrently, one goroutine
// per cluster (Config.Workers), each ending before Schedule returns; the
// plan is identical to running them one by one.
//
// # Migration cost
//
// A job declares its checkpoint (Checkpoint): size, the interval between
// periodic checkpoints, how long saving and restoring take, and whether it
// checkpoints on demand at its next step barrier (as Singularity's jobs
// do). Moving a running job costs the save, the transfer of the checkpoint
// over the bandwidth between the two clusters (Config.BandwidthGbps and
// Config.Links), the restore, and the work done since its last checkpoint
// unless it checkpoints on demand (Checkpoint.MigrationCost). Moving a job
// that has state but does not run (it was preempted: its checkpoint is
// saved) costs the transfer and the restore. A job that never ran has no
// state: routing it is free.
//
// # Service tiers
//
// A job's scheduler.Job.Tier is enforced inside each cluster by its
// scheduler round (premium jobs are never preempted or shrunk once
// started, standard ones keep tiers.StandardShare of their devices).
// The fleet honours it too: it routes premium jobs first and basic ones
// last, and never migrates a running premium or standard job (a move
// stops the job for its cost, and nothing guarantees that it starts on
// the target at once). An unknown tier is tiers.ErrUnknown.
//
// # Host contract
//
//  1. Build a Fleet with New once; keep it across rounds (it keeps one
//     Scheduler per cluster name).
//  2. Each round, pass every cluster present (a cluster with an Inventory
//     is snapshotted; one whose snapshot fails is treated as gone) and
//     every unfinished job: where it is (Job.Cluster, "" = waiting at the
//     fleet), its devices there (Job.Assignment), its checkpoint state and
//     its remaining work (scheduler.Job.RemainingWork).
//  3. Apply the Plan: for each Decision with Move Migrate, checkpoint the
//     job (or take its last checkpoint), transfer it and restore it on the
//     target; then apply each cluster's scheduler.Plan as with a single
//     cluster. Pass Decision.To as the job's Cluster next round and its
//     devices (Decision.Cluster.Assignment) as its Assignment.
//
// A job whose cluster is gone (absent from Input.Clusters, or whose
// Inventory failed) is never lost: it becomes a waiting fleet job in the
// same round and is routed again (Decision.Move Requeue when no cluster
// could take it).
package fleet
