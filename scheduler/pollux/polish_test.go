package scheduler

import (
	"context"
	"testing"
)

// TestPolishVacate checks the vacate replay on an instance where a job
// shrinking across two nodes should leave its full node to two new gangs
// (so that a running job keeps its devices) rather than shrink in place.
func TestPolishVacate(t *testing.T) {
	in := genInput(2, refShapes[0])
	x, err := analyze(&in)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Goodput{}.newEngine(x)
	if err != nil {
		t.Fatal(err)
	}
	typ := make([]int, len(e.jobs))
	cnt := []int{3, 3, 2, 4, 2, 2}
	inPlace, vacated := e.replay(typ, cnt, false), e.replay(typ, cnt, true)
	for i, s := range []*state{inPlace, vacated} {
		for k := range e.jobs {
			if s.cnt[k] != cnt[k] {
				t.Fatalf("replay %d: job %d got %d devices, want %d", i, k, s.cnt[k], cnt[k])
			}
		}
	}
	if len(vacated.place[2]) != 2 || len(vacated.place[3]) != 1 {
		t.Fatalf("vacated layout %v: want job 2 on two nodes and job 3 on one", vacated.place)
	}
	if e.objective(vacated) <= e.objective(inPlace) {
		t.Fatalf("vacated objective %v not above in-place %v", e.objective(vacated), e.objective(inPlace))
	}
	// The policy finds it: its plan is at least as fit as the vacated layout.
	s, err := New(Config{Policy: Goodput{}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Goodput{}.Fitness(in, plan)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.realizedFitness(e.layoutResult(vacated)); got < want*(1-1e-9) {
		t.Fatalf("plan fitness %v < vacated layout's %v", got, want)
	}
}
