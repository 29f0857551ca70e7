package unrelated

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
)

// ErrInvalid is wrapped by every error about a malformed Instance.
var ErrInvalid = errors.New("unrelated: invalid instance")

// ErrProcessingTime is wrapped by a ProcessingTimeError: a processing time
// that is not a finite number greater than zero.
var ErrProcessingTime = errors.New("unrelated: processing time must be finite and > 0")

// ProcessingTimeError names the job and machine of a processing time that is
// ≤ 0 or not finite. errors.Is(err, ErrProcessingTime) and
// errors.Is(err, ErrInvalid) both hold.
type ProcessingTimeError struct {
	Job, Machine int
	Value        float64
}

// Error names the job, the machine and the refused processing time.
func (e *ProcessingTimeError) Error() string {
	return fmt.Sprintf("unrelated: job %d on machine %d: processing time %v must be finite and > 0", e.Job, e.Machine, e.Value)
}

// Is reports both ErrProcessingTime and ErrInvalid.
func (e *ProcessingTimeError) Is(target error) bool {
	return target == ErrProcessingTime || target == ErrInvalid
}

// Job is one job: how long it takes on each machine, when it is due and what
// each unit of time past that costs.
type Job struct {
	// Processing[i] is the job's processing time on machine i (> 0, finite).
	Processing []float64
	// Deadline is the time after which the job is tardy (≥ 0).
	Deadline float64
	// Weight is the cost per unit of tardiness (≥ 0).
	Weight float64
}

// Machine is one machine: its initial occupation and its own deadline and
// weight, charged on the time it is still busy after the deadline.
type Machine struct {
	// Busy is how long the machine is still occupied at time 0 (≥ 0).
	Busy float64
	// Deadline is the time after which the machine's busy time is tardy.
	Deadline float64
	// Weight is the cost per unit of the machine's tardiness (≥ 0).
	Weight float64
}

// Instance is one offline unrelated-machines problem (Hitzges & Sagnol,
// ICMLA'25): every job runs once, on one machine, without preemption; a
// machine works through its jobs back to back from the end of its initial
// occupation. The cost of a schedule is its makespan plus the weighted
// tardiness of the jobs plus the weighted tardiness of the machines.
type Instance struct {
	Jobs     []Job
	Machines []Machine
}

// Validate checks the instance: at least one machine, every job with one
// processing time per machine, each finite and > 0 (a *ProcessingTimeError
// otherwise), deadlines, weights and initial occupations finite and ≥ 0.
func (in Instance) Validate() error {
	if len(in.Machines) == 0 {
		return fmt.Errorf("%w: no machines", ErrInvalid)
	}
	for i, m := range in.Machines {
		if err := nonNegative(m.Busy); err != nil {
			return fmt.Errorf("%w: machine %d: Busy %v %v", ErrInvalid, i, m.Busy, err)
		}
		if err := nonNegative(m.Deadline); err != nil {
			return fmt.Errorf("%w: machine %d: Deadline %v %v", ErrInvalid, i, m.Deadline, err)
		}
		if err := nonNegative(m.Weight); err != nil {
			return fmt.Errorf("%w: machine %d: Weight %v %v", ErrInvalid, i, m.Weight, err)
		}
	}
	for j, job := range in.Jobs {
		if len(job.Processing) != len(in.Machines) {
			return fmt.Errorf("%w: job %d: %d processing times for %d machines", ErrInvalid, j, len(job.Processing), len(in.Machines))
		}
		for i, p := range job.Processing {
			if !(p > 0) || math.IsInf(p, 0) {
				return &ProcessingTimeError{Job: j, Machine: i, Value: p}
			}
		}
		if err := nonNegative(job.Deadline); err != nil {
			return fmt.Errorf("%w: job %d: Deadline %v %v", ErrInvalid, j, job.Deadline, err)
		}
		if err := nonNegative(job.Weight); err != nil {
			return fmt.Errorf("%w: job %d: Weight %v %v", ErrInvalid, j, job.Weight, err)
		}
	}
	return nil
}

func nonNegative(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return errors.New("must be finite and ≥ 0")
	}
	return nil
}

// WorkJob is a job given by its amount of work and its row in a throughput
// matrix, for FromThroughput.
type WorkJob struct {
	// Type is the job's row in the throughput matrix.
	Type int
	// Work is the job's amount of work, in the matrix's units (for
	// instance iterations when the matrix holds iterations per second).
	Work     float64
	Deadline float64
	Weight   float64
}

// FromThroughput builds an Instance from a Gavel-style throughput matrix:
// throughput[t][a] is how fast a job of type t runs on one accelerator of
// type a (work per unit of time), machineTypes[i] is the accelerator type
// of machine i. A job's processing time on machine i is its Work divided by
// the throughput of its type there; a zero throughput (the job cannot run
// there) yields a *ProcessingTimeError.
func FromThroughput(throughput [][]float64, jobs []WorkJob, machines []Machine, machineTypes []int) (Instance, error) {
	if len(machineTypes) != len(machines) {
		return Instance{}, fmt.Errorf("%w: %d machine types for %d machines", ErrInvalid, len(machineTypes), len(machines))
	}
	in := Instance{Machines: append([]Machine(nil), machines...), Jobs: make([]Job, len(jobs))}
	for j, w := range jobs {
		if w.Type < 0 || w.Type >= len(throughput) {
			return Instance{}, fmt.Errorf("%w: job %d: Type %d outside the %d rows of the throughput matrix", ErrInvalid, j, w.Type, len(throughput))
		}
		row := throughput[w.Type]
		p := make([]float64, len(machines))
		for i, a := range machineTypes {
			if a < 0 || a >= len(row) {
				return Instance{}, fmt.Errorf("%w: machine %d: type %d outside the %d columns of throughput row %d", ErrInvalid, i, a, len(row), w.Type)
			}
			p[i] = w.Work / row[a]
		}
		in.Jobs[j] = Job{Processing: p, Deadline: w.Deadline, Weight: w.Weight}
	}
	return in, in.Validate()
}

// Random draws an instance of n jobs and m machines the way the paper's
// generator does (max deadline 30, max weight 10): a maximum processing time
// uniform in [10, 45], a maximum initial occupation uniform in [a third of
// it, all of it]; integer processing times uniform in [1, max], initial
// occupations uniform in [0, max] with at least one machine free at time 0,
// deadlines uniform in [0, 30], weights uniform in [1, 10]. Unlike the
// paper's code it does not reorder jobs and machines by weight. Negative
// sizes count as 0 (an instance without machines fails Validate).
func Random(rng *rand.Rand, n, m int) Instance {
	n, m = max(n, 0), max(m, 0)
	const maxDeadline, maxWeight = 30, 10
	maxRuntime := 10 + rng.Intn(36)
	lo := int(math.Round(float64(maxRuntime) / 3))
	maxInit := lo + rng.Intn(maxRuntime-lo+1)
	in := Instance{Machines: make([]Machine, m), Jobs: make([]Job, n)}
	anyFree := false
	for i := range in.Machines {
		busy := rng.Intn(maxInit + 1)
		anyFree = anyFree || busy == 0
		in.Machines[i] = Machine{Busy: float64(busy)}
	}
	if !anyFree && m > 0 {
		in.Machines[rng.Intn(m)].Busy = 0
	}
	for i := range in.Machines {
		in.Machines[i].Deadline = float64(rng.Intn(maxDeadline + 1))
		in.Machines[i].Weight = float64(1 + rng.Intn(maxWeight))
	}
	for j := range in.Jobs {
		p := make([]float64, m)
		for i := range p {
			p[i] = float64(1 + rng.Intn(maxRuntime))
		}
		in.Jobs[j] = Job{Processing: p, Deadline: float64(rng.Intn(maxDeadline + 1)), Weight: float64(1 + rng.Intn(maxWeight))}
	}
	return in
}

var inf = math.Inf(1)
