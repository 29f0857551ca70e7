package scheduler

import (
	"context"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// Kind says how a job may be adapted by the scheduler.
type Kind int

const (
	// Rigid jobs run on exactly their requested number of devices.
	Rigid Kind = iota
	// Elastic jobs may run on any count between MinReplicas and MaxReplicas.
	Elastic
	// Adaptive jobs are elastic and also adapt their batch size; their
	// Speedup includes statistical efficiency (Pollux's goodput).
	Adaptive
)

// Job is what the scheduler knows of one job in one round.
type Job struct {
	// ID identifies the job; unique within an Input.
	ID string
	// Submitted is when the job arrived; its age is Input.Now − Submitted.
	Submitted time.Time
	// Weight scales the job's share in fairness objectives (0 = 1).
	Weight float64
	// Priority orders jobs in baselines and repair; higher first.
	Priority int
	// Kind says whether the job's count (and batch) may change.
	Kind Kind
	// MinReplicas and MaxReplicas bound the device count of elastic jobs
	// (MaxReplicas 0 = no bound beyond the cluster).
	MinReplicas, MaxReplicas int
	// Requested is the device count rigid jobs and rigid baselines
	// (FIFO, Tiresias) give the job; 0 = MinReplicas, or 1.
	Requested int
	// NonPreemptible jobs, once running, keep exactly their devices:
	// every policy's target for them is replaced by their current
	// (type, count), and they are never preempted, moved, resized or
	// restarted, even when Types, MinReplicas/MaxReplicas or Requested no
	// longer admit that allocation (those constrain where a job starts,
	// not a pinned job that already runs). Their Current assignment, like
	// every other, must use one device type (validated once per round).
	NonPreemptible bool
	// Types are the accelerator types the job may use; empty = any.
	Types []accel.TypeKey
	// Speedup predicts the job's speedup per (type, nodes, replicas);
	// nil = linear in replicas. If it also implements goodput.BatchPlanner,
	// decisions carry the batch plan.
	Speedup goodput.Speedup
	// Attained is the service received so far, in device-time.
	Attained time.Duration
	// Restarts is how many times the job has been re-allocated so far.
	Restarts int
	// RemainingWork is an estimate of the work left, in seconds on one
	// device of its best type (used by the Optimus oracle); 0 = unknown.
	RemainingWork float64
	// Queue is the leaf queue (Input.Queues) the job belongs to. It must
	// name a leaf queue when Input.Queues is set, and be "" when it is
	// empty (then no quota applies).
	Queue string
}

// Target is a policy's decision for one job: how many devices of which
// type. Count 0 means the job does not run this round.
type Target struct {
	// Job is the job's ID.
	Job string
	// Type and Count are the device type and how many devices of it.
	Type  accel.TypeKey
	Count int
	// MaxNodes limits how many nodes the gang may span (0 = any).
	MaxNodes int
	// Reason and Note explain the target (optional): a typed code and the
	// policy's figures in words, such as "speedup 2.9→4.6, restart factor
	// 0.97". The Scheduler prefixes the action ("grew 4→8: ").
	Reason Reason
	Note   string
}

// Input is everything one scheduling round sees. It is treated as
// immutable by the scheduler and by policies.
type Input struct {
	// Cluster is the snapshot of nodes and devices; unhealthy devices are
	// never given out.
	Cluster accel.Cluster
	// Jobs are every job in the system, running or waiting.
	Jobs []Job
	// Current is the placement in effect when the round starts. Every
	// entry is validated, including those of jobs no longer in Jobs
	// (whose devices are released): its devices must be in the cluster,
	// held by no other entry and of one device type; a job appears at
	// most once. Anything else fails with ErrInvalid.
	Current []placement.Assignment
	// Now is the logical time of the round.
	Now time.Time
	// Queues is the quota tree tenants share the cluster by; empty = no
	// quotas (every plan is as without queues). When set, every job names
	// a leaf queue, and each round every queue gets, per device type, an
	// entitlement (the most devices its jobs may hold together, reported
	// in Plan.Queues) that every policy's targets are kept within.
	//
	// Entitlements are computed per device type, top-down from the
	// cluster's usable devices of the type (the implicit top cohort),
	// independently for each type (weighted max-min per type, not DRF:
	// quotas are per type, as Kueue's resource flavors, and a job runs on
	// one type, so a vector of demands across types does not exist). At
	// each cohort, given what the cohort received, its children get:
	//
	//  1. Their floor: what their running non-preemptible jobs hold and
	//     their reserve (Nominal − LendingLimit, which nobody else may
	//     borrow even when they have no demand); a cohort's floor is at
	//     least its children's summed.
	//  2. Their guarantee: min(Nominal, demand), at least the floor.
	//  3. The rest, shared by weighted max-min of the devices beyond the
	//     guarantee, each child up to its demand and to Nominal +
	//     BorrowingLimit (progressive filling one device at a time, ties
	//     by queue name). A child's weight here is Weight × the number of
	//     its jobs with demand for the type: what is left over is shared
	//     per job, as one shared pool would share it (which is what keeps
	//     borrowing's job completion times near the shared pool's), and a
	//     queue's Weight scales its jobs' shares. This is what borrowing
	//     is: devices beyond Nominal come from siblings' unused quota.
	//
	// When a cohort cannot cover every guarantee (the cluster has fewer
	// usable devices than the roots' Nominal sum, or others' pinned jobs
	// hold them), floors come first, then the guarantees are shared by
	// weighted max-min above the floors. Weighted max-min per type keeps
	// each type's rule a simple, checkable water-filling; DRF's dominant
	// share needs one demand vector per job, and our jobs pick one type.
	//
	// A leaf's demand for a type is, over its jobs that may use the type,
	// the sum of their maximum counts (MaxReplicas, or the type's usable
	// devices when unbounded; a rigid job's Requested); running
	// non-preemptible jobs count on their current type only. A job that
	// may use several types counts on each, so a queue may be entitled on
	// several types at once. A cohort's demand is its children's, each
	// capped by the child's Nominal + BorrowingLimit and raised to its
	// reserve.
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
	// the search: pollux.Problem.Floors). FIFO and Tiresias keep a
	// running job only within its queue's entitlement, so the devices a
	// reclaim frees go to the owner's waiting jobs in the same round.
	//
	// Work conservation: when the targets leave devices idle while a queue
	// at its entitlement has more demand (jobs whose sizes did not fit
	// what another queue was entitled to, jobs that could use several
	// types counted on each), the policy is asked once more with relaxed
	// entitlements: every queue keeps what it was given; a queue that did
	// not use all of its entitlement keeps the rest only as reserves and,
	// while it has unmet demand, as the guarantee still owed to it (never
	// lent, so that it is there the moment the policy gives it out: the
	// guarantee holds even when Pollux declines a growth that would not
	// pay for its restart), and releases the rest; queues that shed
	// devices get them back first from what is idle, then the idle
	// devices are shared by the rules above. So a reclaim is undone when
	// idle devices can serve the owner instead.
	Queues []Queue
}

// Policy decides per round how many devices of which type each job gets.
// Every policy, the built-in ones included, is called the same way: the
// Scheduler validates the Input, builds the Round (the validated view of
// it, with the cluster's index and a way to try placements) and calls
// Allocate. Implementations must be deterministic and must not modify
// what the Round returns.
//
// A policy or placer that also has a method Validate() error is checked
// by New, so that bad settings fail when the Scheduler is built.
type Policy interface {
	// Allocate returns at most one Target per job; a job left out gets
	// nothing this round.
	Allocate(ctx context.Context, r *Round) ([]Target, error)
}

// RoundLength is an optional interface of a Policy that is designed for a
// round length of its own, such as Gavel's 6-minute rounds: a host that
// calls Schedule on a clock (scheduler/sim does) uses it when it is given
// no round length. Check for it with a type assertion.
type RoundLength interface {
	// RoundLength returns the time between rounds the policy is designed
	// for (> 0).
	RoundLength() time.Duration
}

// Placer realises a round's targets on concrete devices. Implementations
// must be deterministic and must not modify their input.
type Placer interface {
	// Place returns an assignment for every target it could place and an
	// Unplaced entry, with a typed reason, for every target it could not.
	Place(ctx context.Context, in PlaceInput) (PlaceResult, error)
}

// PlaceInput is what a Placer is asked to realise.
type PlaceInput struct {
	// Cluster is the round's cluster index (the Scheduler builds one per
	// distinct cluster; read-only).
	Cluster *placement.Index
	// Current holds the assignments in effect, in job order (jobs absent
	// from Targets release their devices); State is the same usage as a
	// placement state, a copy the Placer may modify.
	Current []placement.Assignment
	State   *placement.State
	// Targets are the targets to realise, with positive counts, in job
	// order.
	Targets []Target
	// AllowInterference lifts the rule that a node hosts at most one
	// distributed (multi-node) job (Config.AllowInterference).
	AllowInterference bool
}

// PlaceResult is a Placer's answer.
type PlaceResult struct {
	// Assignments holds one assignment per placed target.
	Assignments []placement.Assignment
	// Unplaced lists the targets that could not be placed, with the
	// placement package's typed reason. A job that held devices may keep
	// them (an assignment equal to its current one).
	Unplaced []placement.Unplaced
}
