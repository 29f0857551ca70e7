package scheduler

import (
	"context"
	"testing"

	"github.com/goodsched/goodsched/placement"
)

// refShapes are the instances on which the fast policy must match or beat
// the reference genetic search.
var refShapes = []genOpts{
	{groups: []group{{4, 4, "t4"}}, jobs: 6, maxReplicas: 8, rounds: 2},
	{groups: []group{{4, 4, "t4"}}, jobs: 12, maxReplicas: 8, rounds: 2, pinnedFrac: 0.2, rigidFrac: 0.2},
	{groups: []group{{16, 4, "t4"}}, jobs: 20, maxReplicas: 16, rounds: 2, pinnedFrac: 0.1, rigidFrac: 0.2},
	{groups: []group{{16, 4, "t4"}}, jobs: 60, maxReplicas: 16, rounds: 2, rigidFrac: 0.2},
	{groups: []group{{2, 8, "a100"}, {4, 4, "t4"}, {2, 8, "v100"}}, jobs: 10, maxReplicas: 24, rounds: 2, rigidFrac: 0.2},
	{groups: []group{{2, 8, "a100"}, {4, 4, "t4"}, {2, 8, "v100"}}, jobs: 30, maxReplicas: 24, rounds: 3, pinnedFrac: 0.2, rigidFrac: 0.3},
}

// TestPolluxVsReference checks that the fast Pollux policy's plan has a
// fitness at least the reference genetic search's on every instance.
func TestPolluxVsReference(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("slow; single-goroutine, so -race adds nothing (.ci/run runs it without -race)")
	}
	ctx := context.Background()
	mustNew := func(cfg Config) *Scheduler {
		t.Helper()
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// fitness schedules in with s and returns the plan's fitness.
	fitness := func(s *Scheduler, in Input) float64 {
		t.Helper()
		p, err := s.Schedule(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Pollux{}.Fitness(in, p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fast := mustNew(Config{Policy: Pollux{}})
	fastRP := mustNew(Config{Policy: Pollux{}, Placer: placement.RoundPlacer{}})
	for si, sh := range refShapes {
		for seed := uint64(0); seed < 3; seed++ {
			in := genInput(seed+100*uint64(si), sh)
			ga := geneticAt(50, 50, seed)
			ref := mustNew(Config{Policy: ga})
			refRP := mustNew(Config{Policy: ga, Placer: placement.RoundPlacer{}})
			ff, fr := fitness(fast, in), fitness(ref, in)
			t.Logf("shape %d seed %d: own layouts: fast %.5f reference %.5f", si, seed, ff, fr)
			// Both realised by the same placement round: the fast policy
			// must never be worse.
			ffRP, frRP := fitness(fastRP, in), fitness(refRP, in)
			t.Logf("shape %d seed %d: placement round: fast %.5f reference %.5f", si, seed, ffRP, frRP)
			if ffRP < frRP*(1-1e-9) {
				t.Errorf("shape %d seed %d: fast fitness %.6f < reference %.6f", si, seed, ffRP, frRP)
			}
			// With each policy free to use its own node layout too.
			if ff < fr*(1-1e-9) {
				t.Errorf("shape %d seed %d: own layouts: fast fitness %.6f < reference %.6f", si, seed, ff, fr)
			}
		}
	}
}
