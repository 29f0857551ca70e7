// Package scheduler decides, once per round, how many accelerators of
// which type every deep-learning job gets, realises that on concrete
// devices through a placement.Placer, and hands the host a Plan it can apply. It
// computes; the host orchestrator acts.
//
// The host contract, in steps:
//
//  1. Build a Scheduler once: New(Config{Policy: ..., Placer: ...}). The
//     zero Config runs the Pollux policy (Pollux's goodput objective, Sia's
//     one configuration per job) realised by placement.RoundPlacer (the
//     placement package's round), avoiding interference (Config.AllowInterference is
//     the one setting for it, read by policy and placer alike). A
//     Scheduler keeps no decision state between rounds (it only caches the
//     last cluster's index and, for the Pollux policy, the speedups it
//     evaluated for jobs with a *goodput.Curve) and is safe for concurrent
//     use.
//  2. Each round, fill an Input: the cluster snapshot (accel.Cluster), the
//     jobs in the system (Job: bounds, kind, types, weight, a goodput
//     Speedup, attained service, restarts), the assignments in effect
//     (Current: what the host applied last round) and the logical time
//     Now (ages and restart factors are measured against it). Tenants
//     share the cluster through Input.Queues, a tree of queues with per
//     type guaranteed quotas, borrowing and lending limits and weights;
//     each job names its leaf queue (Job.Queue).
//  3. Call Schedule(ctx, in). Invalid input is an error naming the job or
//     field (errors.Is ErrInvalid, ErrUnknownType, ErrBadSpeedup); nothing
//     is half-applied.
//  4. Apply the Plan: one Decision per job, sorted by job ID, with a
//     placement.Action (Keep, Grow, Shrink, Move, Start, Stop, Queue), the
//     devices to run on, a batch plan when the job's Speedup is a
//     goodput.BatchPlanner, and a typed Reason with a sentence such as
//     "grew 4→8: speedup 2.90→4.60, restart factor 0.97". A job that cannot
//     be served is queued with a reason, never dropped. With queues, a
//     reclaim or a quota says so (ReasonReclaimed, ReasonQuota: "shrank
//     8→4: reclaimed by queue vision …") and Plan.Queues reports each
//     queue's guaranteed, entitled, used, borrowed, lent and pending
//     devices per type.
//  5. Next round, pass Plan.Assignments() (or what actually runs) as
//     Input.Current, and the jobs' updated Attained, Restarts and Speedup.
//
// Policies are values implementing Policy; the host picks one, no name
// lookup happens inside. Every policy, built-in or not, gets the same
// Round: the validated view of the Input, the cluster's placement.Index,
// each job's effective bounds, and Round.Place to try candidate targets
// with the Scheduler's Placer. Pollux is the elastic, goodput-optimal
// policy (its search is package scheduler/pollux; Pollux.Engine hands it
// to other searches over its objective, such as the genetic reference in
// package scheduler/genetic); the FIFO, Tiresias and Optimus baselines are
// package scheduler/baselines, Gavel's policies package scheduler/gavel;
// package scheduler/carbonaware wraps any policy for a grid that is not always
// clean (delay-tolerant jobs planned into clean hours through
// Round.Restrict). A user policy returns a Target (type, count) per job
// and the Scheduler does the rest; a policy that wraps another narrows
// the Round with Restrict and keeps caches between rounds with Carry.
//
// # Queues and quotas
//
// Input.Queues is the quota tree tenants share the cluster by. Package
// quota holds its arithmetic and documents the entitlement rule (per
// device type, top-down from the cluster's usable devices: floors, then
// guarantees, then weighted max-min borrowing within each queue's
// limits). Each round every queue gets, per type, an entitlement;
// Round.Entitlements hands them to policies.
//
// Reclaim: a queue over its entitlement (it borrowed and an owner's
// demand returned) is brought back within it in the same round.
// Pollux enforces entitlements inside its search (its warm start
// sheds borrowed devices by least goodput lost per device freed, and
// no move grows a queue past its cap); for any other policy the
// Scheduler trims the targets after Allocate, shrinking elastic jobs
// (least speedup lost per device freed first) before preempting any
// (lowest priority, newest first). Non-preemptible jobs are never
// touched. A queue within its guarantee is never trimmed, since its
// entitlement is at least its guarantee; under Pollux it also loses
// no devices to another queue's growth (its guarantee is a floor in
// the search: pollux.Problem.Floors). The FIFO and Tiresias baselines keep a
// running job only within its queue's entitlement, so the devices a
// reclaim frees go to the owner's waiting jobs in the same round.
//
// Work conservation: when the targets leave devices idle while a queue
// at its entitlement has more demand, the policy is asked once more with
// the entitlements relaxed (quota.Entitlements.Relax has the rule), so a
// reclaim is undone when idle devices can serve the owner instead.
package scheduler
