package unrelated

import (
	"errors"
	"fmt"
	"math"
)

// ErrAction is wrapped by the error of a Step with an infeasible action: a
// job that is not pending, or retiring the last active machine.
var ErrAction = errors.New("unrelated: infeasible action")

// Action is a decision for the machine that has just become free: the index
// of a pending job to start on it, or Retire.
type Action int

// Retire takes the free machine out of service for good. It is feasible only
// while another machine is still active.
const Retire Action = -1

// Schedule is a complete solution: Sequences[i] lists the jobs machine i runs,
// in order, back to back from the end of its initial occupation.
type Schedule struct {
	Sequences [][]int
}

// Cost is the objective of a schedule, split into its three terms.
type Cost struct {
	// Makespan is when the last machine finishes (initial occupations
	// included).
	Makespan float64
	// JobTardiness is Σ weight × max(0, completion − deadline) over jobs.
	JobTardiness float64
	// MachineTardiness is Σ weight × max(0, finish − deadline) over
	// machines, where a machine finishes with its last job (or its initial
	// occupation).
	MachineTardiness float64
}

// Total is Makespan + JobTardiness + MachineTardiness: what every solver here
// minimises.
func (c Cost) Total() float64 { return c.Makespan + c.JobTardiness + c.MachineTardiness }

// Evaluate computes the cost of s. It fails (wrapping ErrInvalid) unless s
// has one sequence per machine and runs every job exactly once.
func (in Instance) Evaluate(s Schedule) (Cost, error) {
	if len(s.Sequences) != len(in.Machines) {
		return Cost{}, fmt.Errorf("%w: schedule has %d sequences for %d machines", ErrInvalid, len(s.Sequences), len(in.Machines))
	}
	seen := make([]bool, len(in.Jobs))
	var c Cost
	for i, seq := range s.Sequences {
		m := in.Machines[i]
		t := m.Busy
		for _, j := range seq {
			if j < 0 || j >= len(in.Jobs) || seen[j] {
				return Cost{}, fmt.Errorf("%w: machine %d: job %d unknown or run twice", ErrInvalid, i, j)
			}
			seen[j] = true
			t += in.Jobs[j].Processing[i]
			c.JobTardiness += in.Jobs[j].Weight * math.Max(0, t-in.Jobs[j].Deadline)
		}
		c.MachineTardiness += m.Weight * math.Max(0, t-m.Deadline)
		c.Makespan = math.Max(c.Makespan, t)
	}
	for j, ok := range seen {
		if !ok {
			return Cost{}, fmt.Errorf("%w: job %d is not scheduled", ErrInvalid, j)
		}
	}
	return c, nil
}

// State is a moment of the decision process of the paper: a machine has
// become free (the earliest-ready active machine, the lowest index among
// equals) and must start a pending job or retire. Read it through its
// fields and methods; change it only with Step.
type State struct {
	in *Instance
	// Time is the current time: when Machine became free.
	Time float64
	// Machine is the free machine the next action is for.
	Machine int
	// Ready[i] is when machine i is (or was) free: its initial occupation
	// plus the jobs started on it so far.
	Ready []float64
	// Active[i] is false once machine i has retired.
	Active []bool
	// Pending[j] is true while job j has not been started.
	Pending []bool

	pending, active int
	seq             [][]int
}

// Start validates in and returns the first decision state.
func Start(in Instance) (*State, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	s := &State{in: &in, Ready: make([]float64, len(in.Machines)), Active: make([]bool, len(in.Machines)),
		Pending: make([]bool, len(in.Jobs)), pending: len(in.Jobs), active: len(in.Machines), seq: make([][]int, len(in.Machines))}
	for i, m := range in.Machines {
		s.Ready[i], s.Active[i] = m.Busy, true
	}
	for j := range s.Pending {
		s.Pending[j] = true
	}
	s.advance()
	return s, nil
}

// Instance returns the instance being scheduled (not to be modified).
func (s *State) Instance() *Instance { return s.in }

// Done reports whether every job has been started.
func (s *State) Done() bool { return s.pending == 0 }

// PendingCount is the number of jobs not yet started.
func (s *State) PendingCount() int { return s.pending }

// ActiveCount is the number of machines not retired.
func (s *State) ActiveCount() int { return s.active }

// CanRetire reports whether Retire is feasible now.
func (s *State) CanRetire() bool { return !s.Done() && s.active > 1 }

// Step applies a to the free machine and moves to the next decision. On an
// infeasible action it returns an error wrapping ErrAction and leaves the
// state unchanged.
func (s *State) Step(a Action) error {
	if s.Done() {
		return fmt.Errorf("%w: every job has started", ErrAction)
	}
	i := s.Machine
	switch {
	case a == Retire:
		if s.active <= 1 {
			return fmt.Errorf("%w: machine %d is the last active machine", ErrAction, i)
		}
		s.Active[i] = false
		s.active--
	case int(a) >= 0 && int(a) < len(s.Pending) && s.Pending[a]:
		s.Pending[a] = false
		s.pending--
		s.Ready[i] += s.in.Jobs[a].Processing[i]
		s.seq[i] = append(s.seq[i], int(a))
	default:
		return fmt.Errorf("%w: job %d is not pending", ErrAction, a)
	}
	s.advance()
	return nil
}

// advance picks the next free machine: the active one ready first, the
// lowest index among equals.
func (s *State) advance() {
	best := -1
	for i, ok := range s.Active {
		if ok && (best < 0 || s.Ready[i] < s.Ready[best]) {
			best = i
		}
	}
	s.Machine, s.Time = best, s.Ready[best]
}

// Schedule returns the sequences started so far (complete once Done).
func (s *State) Schedule() Schedule {
	out := Schedule{Sequences: make([][]int, len(s.seq))}
	for i, q := range s.seq {
		out.Sequences[i] = append([]int{}, q...)
	}
	return out
}

// Clone returns an independent copy of s.
func (s *State) Clone() *State {
	c := *s
	c.Ready = append([]float64(nil), s.Ready...)
	c.Active = append([]bool(nil), s.Active...)
	c.Pending = append([]bool(nil), s.Pending...)
	c.seq = s.Schedule().Sequences
	return &c
}

// Policy decides, in each state of the process, what the free machine does.
type Policy interface {
	Decide(s *State) Action
}

// Run plays policy p on in from the start and returns the schedule and its
// cost. An infeasible decision is an error wrapping ErrAction.
func Run(in Instance, p Policy) (Schedule, Cost, error) {
	s, err := Start(in)
	if err != nil {
		return Schedule{}, Cost{}, err
	}
	for !s.Done() {
		if err := s.Step(p.Decide(s)); err != nil {
			return Schedule{}, Cost{}, err
		}
	}
	sch := s.Schedule()
	c, err := in.Evaluate(sch)
	return sch, c, err
}
