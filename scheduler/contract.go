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
}

// Policy decides per round how many devices of which type each job gets.
// Implementations must be deterministic and must not modify the Input.
type Policy interface {
	// Allocate returns at most one Target per job; a job left out gets
	// nothing this round.
	Allocate(ctx context.Context, in Input) ([]Target, error)
}

// RoundLength is an optional interface of a Policy that is designed for a
// round length of its own, such as Gavel's 6-minute rounds: a host that
// calls Allocate on a clock (scheduler/sim does) uses it when it is given
// no round length. Check for it with a type assertion.
type RoundLength interface {
	// RoundLength returns the time between calls to Allocate the policy
	// is designed for (> 0).
	RoundLength() time.Duration
}

// Action is what the host must do for a job.
type Action int

// Actions of a Decision.
const (
	Keep    Action = iota // no change
	Start                 // start on the given devices
	Grow                  // restart on more devices
	Shrink                // restart on fewer devices
	Move                  // restart on other devices, same count
	Preempt               // stop; the job waits
	Queue                 // not running and not started this round
)
