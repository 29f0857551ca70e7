package unrelated

import (
	"errors"
	"math"
	"math/rand"
	"testing"
)

// bruteForce explores every trajectory of the decision process: the oracle
// the exact solver is checked against.
func bruteForce(t *testing.T, s *State) float64 {
	if s.Done() {
		c, err := s.in.Evaluate(s.Schedule())
		if err != nil {
			t.Fatal(err)
		}
		return c.Total()
	}
	best := math.Inf(1)
	actions := []Action{}
	for j, p := range s.Pending {
		if p {
			actions = append(actions, Action(j))
		}
	}
	if s.CanRetire() {
		actions = append(actions, Retire)
	}
	for _, a := range actions {
		c := s.Clone()
		if err := c.Step(a); err != nil {
			t.Fatal(err)
		}
		best = math.Min(best, bruteForce(t, c))
	}
	return best
}

func TestOptimalMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 150; trial++ {
		n, m := 1+rng.Intn(5), 1+rng.Intn(3)
		in := Random(rng, n, m)
		if trial%3 == 0 { // fractional times and several busy machines
			for j := range in.Jobs {
				for i := range in.Jobs[j].Processing {
					in.Jobs[j].Processing[i] += rng.Float64()
				}
			}
			for i := range in.Machines {
				in.Machines[i].Busy = 20 * rng.Float64()
			}
		}
		sch, c, err := Optimal(in)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := Start(in)
		want := bruteForce(t, s)
		if math.Abs(c.Total()-want) > 1e-9 {
			t.Fatalf("trial %d (%dx%d): exact %v, brute force %v (%v)", trial, n, m, c.Total(), want, sch)
		}
		if rc, _, _ := runCost(in, Rule{}); rc < want-1e-9 {
			t.Fatalf("trial %d: rule %v beats the optimum %v", trial, rc, want)
		}
	}
}

func TestOptimalFromKeepsPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	in := Random(rng, 5, 2)
	s, _ := Start(in)
	if err := s.Step(Action(4)); err != nil {
		t.Fatal(err)
	}
	want := bruteForce(t, s.Clone())
	sch, c, err := OptimalFrom(s)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.Total()-want) > 1e-9 {
		t.Fatalf("from state: exact %v, brute force %v", c.Total(), want)
	}
	found := false
	for _, q := range sch.Sequences {
		found = found || (len(q) > 0 && q[0] == 4)
	}
	if !found {
		t.Fatalf("prefix lost: %v", sch)
	}
}

func TestOptimalTooLarge(t *testing.T) {
	in := Random(rand.New(rand.NewSource(1)), MaxExactJobs+1, 2)
	if _, _, err := Optimal(in); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func runCost(in Instance, p Policy) (float64, Schedule, error) {
	sch, c, err := Run(in, p)
	return c.Total(), sch, err
}
