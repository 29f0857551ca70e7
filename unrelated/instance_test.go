package unrelated

import (
	"errors"
	"math"
	"math/rand"
	"testing"
)

func TestValidateProcessingTime(t *testing.T) {
	for _, p := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		in := Instance{Machines: []Machine{{}, {}}, Jobs: []Job{{Processing: []float64{1, 1}}, {Processing: []float64{2, p}}}}
		err := in.Validate()
		var pe *ProcessingTimeError
		if !errors.Is(err, ErrProcessingTime) || !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) || pe.Job != 1 || pe.Machine != 1 {
			t.Fatalf("p=%v: got %v, want a ProcessingTimeError for job 1 machine 1", p, err)
		}
		if _, _, err := Optimal(in); !errors.Is(err, ErrProcessingTime) {
			t.Fatalf("Optimal accepted p=%v: %v", p, err)
		}
		if _, _, err := Run(in, Rule{}); !errors.Is(err, ErrProcessingTime) {
			t.Fatalf("Run accepted p=%v: %v", p, err)
		}
	}
}

func TestValidateOtherFields(t *testing.T) {
	good := func() Instance {
		return Instance{Machines: []Machine{{Deadline: 1, Weight: 1}}, Jobs: []Job{{Processing: []float64{1}, Deadline: 1, Weight: 1}}}
	}
	bad := []func(*Instance){
		func(in *Instance) { in.Machines = nil },
		func(in *Instance) { in.Machines[0].Busy = -1 },
		func(in *Instance) { in.Machines[0].Weight = math.NaN() },
		func(in *Instance) { in.Jobs[0].Deadline = math.Inf(1) },
		func(in *Instance) { in.Jobs[0].Weight = -2 },
		func(in *Instance) { in.Jobs[0].Processing = []float64{1, 2} },
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for k, f := range bad {
		in := good()
		f(&in)
		if err := in.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: got %v, want ErrInvalid", k, err)
		}
	}
}

func TestFromThroughput(t *testing.T) {
	m := []Machine{{}, {}}
	in, err := FromThroughput([][]float64{{2, 4}}, []WorkJob{{Type: 0, Work: 8}}, m, []int{1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Jobs[0].Processing; got[0] != 2 || got[1] != 4 {
		t.Fatalf("processing %v, want [2 4]", got)
	}
	if _, err := FromThroughput([][]float64{{0, 4}}, []WorkJob{{Type: 0, Work: 8}}, m, []int{0, 1}); !errors.Is(err, ErrProcessingTime) {
		t.Fatalf("zero throughput: got %v", err)
	}
	if _, err := FromThroughput([][]float64{{1, 4}}, []WorkJob{{Type: 3, Work: 8}}, m, []int{0, 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown type: got %v", err)
	}
}

func TestStepRejectsInfeasible(t *testing.T) {
	in := Random(rand.New(rand.NewSource(5)), 2, 1)
	s, _ := Start(in)
	before := s.Clone()
	for _, a := range []Action{Retire, 7, -5} {
		if err := s.Step(a); !errors.Is(err, ErrAction) {
			t.Fatalf("action %d: got %v, want ErrAction", a, err)
		}
	}
	if s.Machine != before.Machine || s.PendingCount() != 2 || s.ActiveCount() != 1 {
		t.Fatal("a rejected action changed the state")
	}
	if err := s.Step(0); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(0); !errors.Is(err, ErrAction) {
		t.Fatalf("job started twice: %v", err)
	}
}

func TestEvaluateTerms(t *testing.T) {
	in := Instance{
		Machines: []Machine{{Busy: 1, Deadline: 2, Weight: 3}, {Deadline: 0, Weight: 1}},
		Jobs:     []Job{{Processing: []float64{2, 9}, Deadline: 2, Weight: 5}},
	}
	c, err := in.Evaluate(Schedule{Sequences: [][]int{{0}, nil}})
	if err != nil {
		t.Fatal(err)
	}
	// Machine 0 finishes at 3: job late by 1 (×5), machine late by 1 (×3).
	if c.Makespan != 3 || c.JobTardiness != 5 || c.MachineTardiness != 3 || c.Total() != 11 {
		t.Fatalf("cost %+v", c)
	}
	if _, err := in.Evaluate(Schedule{Sequences: [][]int{nil, nil}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("missing job accepted: %v", err)
	}
}

func TestNoJobsAndDoneStates(t *testing.T) {
	in := Instance{Machines: []Machine{{Busy: 3, Deadline: 1, Weight: 2}, {}}}
	for _, p := range []Policy{Rule{}, Learned{}} {
		_, c, err := Run(in, p)
		if err != nil || c.Makespan != 3 || c.MachineTardiness != 4 {
			t.Fatalf("%T on no jobs: %+v %v", p, c, err)
		}
	}
	if _, c, err := Optimal(in); err != nil || c.Total() != 7 {
		t.Fatalf("optimal on no jobs: %+v %v", c, err)
	}
	s, _ := Start(in)
	for _, p := range []Policy{Rule{}, Learned{}} {
		if err := s.Step(p.Decide(s)); !errors.Is(err, ErrAction) {
			t.Fatalf("%T decided on a finished state: %v", p, err)
		}
	}
}
