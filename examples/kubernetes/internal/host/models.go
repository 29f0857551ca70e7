package host

import (
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// JobKey names a scheduled unit: "namespace/name" of a batch/v1 Job, or
// "namespace/group" of a pod group.
type JobKey string

// ModelSource supplies the goodput models that jobs measure themselves (the
// measurement loop) and learns each round's decisions. A job for which
// Speedup reports ok becomes Adaptive for the round: its Speedup and batch
// plan come from the returned value (a *goodput.Curve, typically). A nil
// ModelSource in Config means no job is adaptive unless its annotations say
// so with a linear model.
//
// Implementations must be safe for concurrent use: the round reads models
// while reports arrive.
type ModelSource interface {
	// Speedup returns the job's measured model for this round, or ok false
	// when the job has not reported enough to fit one.
	Speedup(job JobKey) (s goodput.Speedup, ok bool)
	// Publish tells the source the job's decision after the round was
	// applied (its target replicas and batch plan), so that the next report
	// from the job can carry them back.
	Publish(job JobKey, d scheduler.Decision)
}

// RoundSink is optionally implemented by a ModelSource that also learns
// each round's whole Input and Plan, after the round was applied and the
// per-job Publish calls were made (the report endpoint answers a job's DMR
// reconfiguration requests from them until the next round).
type RoundSink interface {
	PublishRound(in scheduler.Input, plan scheduler.Plan)
}

// PriorSource is optionally implemented by a ModelSource that also models
// the adaptive jobs that have not reported yet: for a job annotated
// goodsched.io/kind=adaptive whose Speedup has no model, the host asks
// Prior, and the job is Adaptive with that model when ok. (Pollux offers a
// job that has never run one GPU: its exploration bound before the first
// measurement.) Without it such a job is scheduled as elastic.
type PriorSource interface {
	Prior(job JobKey) (s goodput.Speedup, ok bool)
}
