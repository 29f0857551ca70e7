// Package dispatch is a duplication-aware task dispatcher in the manner of
// DAS (Bashir et al., "Reducing Tail Latency Using Duplication: A
// Multi-Layered Approach", CoNEXT 2019): every task may run as a primary and
// a duplicate on two different workers; each worker keeps two strict
// priority classes, so duplicates only use capacity that primaries leave
// idle; and the slower copy is purged as soon as the other finishes. With
// strict priority and purging, primaries are served about as if there were
// no duplicates, so duplicating everything stays safe at high load, while it
// cuts the tail at low and medium load.
//
// The package imports nothing else of goodsched. It computes decisions and
// keeps queues; the host runs the work, owns the clock and passes time in.
//
// # Host contract
//
//  1. Create a Dispatcher with New, choosing a Policy (PolicyDAS by default;
//     PolicyNone, PolicyNaive, PolicyHedged and PolicyBudgeted for
//     comparison) and a Choice for placement (least loaded, power of two
//     choices with Config.Seed, or round robin). Add workers with
//     Config.Workers or Join.
//  2. For each task call Submit(payload, now). The returned Placement names
//     the workers that received a copy; wake them if they are idle.
//  3. An idle worker w calls Next(w). It gets the oldest queued primary, else
//     the oldest queued duplicate, else ok == false (sleep until woken).
//     Work in service is never preempted.
//  4. When worker w finishes a copy it calls Complete(id, w, now). If
//     Outcome.Won, deliver the result; the sibling copy has been purged:
//     dropped from its queue (Outcome.Purged) or, when it was already in
//     service, marked cancelled (Outcome.Cancel names that worker: tell it
//     to stop). A worker can also poll Cancelled(w). A cancelled worker
//     calls Next (which releases the cancelled copy) or Complete (which
//     returns Won == false). Then go to step 3.
//  5. Under PolicyHedged, also call Hedge(now) in a loop whenever the clock
//     reaches NextHedge(); each call places one due duplicate.
//  6. Leave(w) drains a worker (its queued copies move elsewhere; it may
//     finish the copy in service); Fail(w) removes a crashed worker and
//     re-queues every copy it held, including the one in service. Both
//     return the idle workers that received copies: wake them. No task is
//     lost; with no live worker left, copies wait for the next Join (call
//     Next on the new worker).
//  7. Optionally, scan work that may be faulty or malicious (Abdulazeez,
//     Garncarek, Kowalski and Wong, IEEE EDGE 2017, arXiv 1705.02671): set
//     Config.Scan (ScanRobust, or the baselines ScanAll and ScanNone) and
//     Config.BadRecovery, and submit with SubmitRisk, giving each task's
//     Risk. A copy Next hands out with Task.Scan set is scanned by its
//     worker first, which reports the verdict with Scanned: a bad task is
//     rejected (never run, its other copy purged), a clean one runs and is
//     completed as usual. No other copy of the task runs before the
//     verdict. A bad task that ran unscanned costs its worker what the
//     host says (BadRecovery); the Dispatcher cannot see it.
//
// Every task ends exactly once — won by one Complete, or rejected by one
// Scanned — through any sequence of failures, leaves and joins
// (Srinivasrao et al., IJDPS 2013, ask this of failover; the tests check it
// over millions of random operations with duplication and scanning on).
//
// Bad calls — an unknown task or worker, completing twice, a worker that
// left or failed, Next while still serving — return errors wrapping the
// package's sentinels (ErrUnknownTask, ErrCompleted, ErrNotServing,
// ErrUnknownWorker, ErrWorkerGone, ErrBusy, ErrNoWorkers, ErrTooManyWorkers,
// ErrConfig, ErrTimeOrder, ErrRisk, ErrRejected, ErrScanOrder).
//
// # Cost
//
// A Dispatcher is safe for concurrent use (one mutex). Submit, Next and
// Complete cost O(log n) in the number of workers with ChoiceLeastLoaded
// and O(1) otherwise; purging is O(1) through intrusive doubly linked queues
// addressed by index. Task slots are recycled through a free list, so in
// steady state no call allocates. Hedged's adaptive delay costs amortised
// O(1) per completion (a quickselect over a window every window/8
// completions). Scanning adds O(1) to SubmitRisk and Scanned; a copy that
// Next holds back while its sibling is scanned is held once at most, so
// Next stays amortised O(1).
package dispatch
