package scheduler

import (
	"context"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
	"github.com/goodsched/goodsched/scheduler/tiers"
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
	// device of its best type (used by the Optimus oracle and by
	// carbonaware.Policy); 0 = unknown.
	RemainingWork float64
	// Queue is the leaf queue (Input.Queues) the job belongs to. It must
	// name a leaf queue when Input.Queues is set, and be "" when it is
	// empty (then no quota applies).
	Queue string
	// Deadline is when the job must finish; the zero time means none. It
	// must not be before Submitted.
	Deadline time.Time
	// DelayTolerant says the job's work may be shifted in time (run
	// narrower, or not at all, now) as long as it meets its Deadline:
	// carbonaware.Policy moves such work to cleaner hours.
	DelayTolerant bool
	// Workers is the job's number of logical workers (EasyScale's W, its
	// world size): 0 = not such a job, and nothing below applies. A
	// W-job keeps W and its global batch for its whole run, on 1 to W
	// devices that each host some of its workers (Assignment.Workers, one
	// count per device, summing to W): its device count is bounded by W
	// whatever MaxReplicas says (MinReplicas and Requested above W are
	// errors). When its Speedup also implements goodput.GangSpeedup for
	// the same W, it may run on devices of several types at once
	// (RoundJob.Mixes; Target.Shares).
	Workers int
	// Tier is the job's service tier (tiers.None = none): once it has
	// started, a premium job is pinned to its devices and a standard one
	// keeps tiers.Guarantee of them, whatever the policy's targets (a
	// tier outside the constants fails with tiers.ErrUnknown).
	Tier tiers.Tier
}

// Target is a policy's decision for one job: how many devices of which
// type. Count 0 means the job does not run this round.
type Target struct {
	// Job is the job's ID.
	Job string
	// Type and Count are the device type and how many devices of it.
	Type  accel.TypeKey
	Count int
	// MaxNodes limits how many nodes the gang may span (0 = any; for a
	// gang of several types, each type's part).
	MaxNodes int
	// Shares gives a job that may mix types (RoundJob.Mixes) devices of
	// several types: per type, how many and how many of its logical
	// workers they host (counts ≥ 1, at most its workers; workers summing
	// to Job.Workers). Count must be the total; Type is ignored. Empty
	// means Count devices of Type, hosting all of a W-job's workers.
	Shares []placement.Share
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
	// The rules are in the package documentation, "Queues and quotas".
	Queues []quota.Queue
	// Carbon is the grid's carbon-intensity forecast from Now on (at
	// least until the jobs' deadlines), fetched by the host, for example
	// with a carbon.Forecaster: Schedule itself reads no clock and calls
	// no service. The zero Series means none. Package scheduler/carbonaware plans with it;
	// other policies ignore it.
	Carbon carbon.Series
	// Envelope caps, per device type, how many devices delay-tolerant
	// jobs with a deadline may hold together this round (a carbon
	// envelope such as carbon.ClusterEnvelope's, or a provider's virtual
	// capacity curve); a type it does not list is not capped, and nil
	// caps nothing. carbonaware.Policy honours it; other policies ignore it.
	Envelope map[accel.TypeKey]int
	// Speeds reports per-device, per-job slowdowns (measured and learned
	// online, for example by package variability); nil = none, and every
	// plan is as without it. The Round hands it to the Placer
	// (placement.PlaceInput.Speeds); policies read it through Round.Input.
	Speeds placement.Speeds
}

// Policy decides per round how many devices of which type each job gets.
// Every policy, the built-in ones included, is called the same way: the
// Scheduler validates the Input, builds the Round (the validated view of
// it, with the cluster's index and a way to try placements) and calls
// Allocate. Implementations must be deterministic and must not modify
// what the Round returns.
//
// A policy or placer that is also a Validator is checked by New, so that
// bad settings fail when the Scheduler is built.
type Policy interface {
	// Allocate returns at most one Target per job; a job left out gets
	// nothing this round.
	Allocate(ctx context.Context, r *Round) ([]Target, error)
}

// Validator is an optional interface of a Policy or Placer whose
// settings can be wrong: New calls Validate and fails with its error.
type Validator interface {
	// Validate checks the settings; New wraps an error that is not
	// already an ErrInvalid with it (placement.RoundPlacer's, say).
	Validate() error
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
