// Package genetic is the reference search the goodput policy is checked
// against: Pollux's genetic algorithm over job × node allocation matrices,
// scoring each matrix with Pollux's objective (scheduler.Pollux). It is a
// scheduler.Policy built on the exported Round and the Pollux engine
// (Pollux.Engine), one to three orders of magnitude slower than Pollux;
// it exists to check Pollux against and to reproduce Pollux's paper.
package genetic

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/pollux"
)

// Policy is the reference search: Pollux's genetic algorithm over job ×
// node allocation matrices (population warm-started from the current
// allocation, crossover over job rows, Pollux's mutations and repair
// rules, one device type per job), scoring each matrix with Pollux's
// objective. Prefer scheduler.Pollux in production.
//
// Policy is a plain value: safe for concurrent use; for a given Seed its
// result is deterministic.
type Policy struct {
	// Exponent, Geometric and RestartDelay are the objective's, as in
	// scheduler.Pollux (0 = −1, the harmonic mean; 30 s).
	Exponent     float64
	Geometric    bool
	RestartDelay time.Duration
	// Population and Generations size the search; 0 = 100 each (Pollux).
	// Population is at most MaxPopulation; neither may be negative.
	Population, Generations int
	// MaxNodes caps the nodes a job spans (0 = none; Pollux used 16).
	MaxNodes int
	// Seed seeds the search.
	Seed uint64
}

var _ scheduler.Policy = Policy{}

// objective is the Pollux policy whose objective the search scores.
func (g Policy) objective() scheduler.Pollux {
	return scheduler.Pollux{Exponent: g.Exponent, Geometric: g.Geometric, RestartDelay: g.RestartDelay}
}

// MaxPopulation bounds Policy.Population: each member is a job × node
// matrix, so a population sized by a typo would exhaust memory.
const MaxPopulation = 10_000

// Validate checks the search settings and the objective's.
func (g Policy) Validate() error {
	if g.Population < 0 || g.Population > MaxPopulation {
		return fmt.Errorf("%w: Genetic.Population %d: want 0..%d (MaxPopulation)", scheduler.ErrInvalid, g.Population, MaxPopulation)
	}
	if g.Generations < 0 || g.MaxNodes < 0 {
		return fmt.Errorf("%w: Genetic.Generations %d and MaxNodes %d must not be negative", scheduler.ErrInvalid, g.Generations, g.MaxNodes)
	}
	return g.objective().Validate()
}

// Allocate implements scheduler.Policy: it runs the search and, when the
// Round takes offers, offers the best matrix exactly as it lays the jobs
// out if that places better than Round.Place.
func (g Policy) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	e, targets, err := g.objective().Engine(r)
	if err != nil {
		return nil, err
	}
	// The engine's jobs are the round's in ID order; the repair order,
	// after pinned jobs, is least attained service, then oldest.
	jobs := r.Jobs()
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(jobs[a].Job.ID, jobs[b].Job.ID) })
	byService := slices.Clone(order)
	slices.SortStableFunc(byService, func(a, b int) int {
		ja, jb := jobs[a].Job, jobs[b].Job
		return cmp.Or(cmp.Compare(ja.Attained, jb.Attained), ja.Submitted.Compare(jb.Submitted), cmp.Compare(ja.ID, jb.ID))
	})
	rank := make([]int, len(order))
	pos := make([]int, len(jobs)) // round position → engine position
	for k, i := range order {
		pos[i] = k
	}
	for n, i := range byService {
		rank[pos[i]] = n
	}
	sol, err := e.Reference(ctx, pollux.ReferenceOptions{Population: g.Population, Generations: g.Generations,
		MaxNodes: g.MaxNodes, Seed: g.Seed, Rank: rank})
	if err != nil {
		return nil, err
	}
	if r.TakesOffers() {
		if err := offerLayout(ctx, r, e, sol, targets(sol, false)); err != nil {
			return nil, err
		}
	}
	return targets(sol, true), nil
}

// offerLayout offers sol exactly as the engine lays it out for targets
// tg (made from sol) when that places better than Round.Place.
func offerLayout(ctx context.Context, r *scheduler.Round, e *pollux.Search, sol *pollux.Solution, tg []scheduler.Target) error {
	res, err := r.Place(ctx, tg)
	if err != nil {
		return err
	}
	own := e.Layout(sol)
	if own == nil {
		return nil
	}
	placed, err := e.Realized(res.Assignments)
	if err != nil {
		return err
	}
	if f, err := e.Realized(own); err == nil && f > placed {
		return r.Offer(tg, placement.PlaceResult{Assignments: own})
	}
	return nil
}
