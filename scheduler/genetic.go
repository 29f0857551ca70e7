package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/scheduler/internal/refsearch"
)

// Genetic is the reference search: Pollux's genetic algorithm over job ×
// node allocation matrices (population warm-started from the current
// allocation, crossover over job rows, Pollux's mutations and repair
// rules, one device type per job), scoring each matrix with the same
// objective as Objective. It is one to three orders of magnitude slower
// than Goodput and exists to check Goodput against and to reproduce
// Pollux; prefer Goodput in production.
//
// Genetic is a plain value: safe for concurrent use; for a given Seed its
// result is deterministic.
type Genetic struct {
	// Objective holds the exponent, restart delay and interference
	// settings; its search settings are ignored.
	Objective Goodput
	// Population and Generations size the search; 0 = 100 each (Pollux).
	// Population is at most MaxPopulation; neither may be negative.
	Population, Generations int
	// MaxNodes caps the nodes a job spans (0 = none; Pollux used 16).
	MaxNodes int
	// Seed seeds the search.
	Seed uint64
}

var _ Policy = Genetic{}

// MaxPopulation bounds Genetic.Population: each member is a job × node
// matrix, so a population sized by a typo would exhaust memory.
const MaxPopulation = 10_000

// validate checks the search settings and the objective's.
func (g Genetic) validate() error {
	if g.Population < 0 || g.Population > MaxPopulation {
		return fmt.Errorf("%w: Genetic.Population %d: want 0..%d (MaxPopulation)", ErrInvalid, g.Population, MaxPopulation)
	}
	if g.Generations < 0 || g.MaxNodes < 0 {
		return fmt.Errorf("%w: Genetic.Generations %d and MaxNodes %d must not be negative", ErrInvalid, g.Generations, g.MaxNodes)
	}
	return g.Objective.validate()
}

// Allocate implements Policy.
func (g Genetic) Allocate(ctx context.Context, in Input) ([]Target, error) {
	x, err := analyze(&in)
	if err != nil {
		return nil, err
	}
	tg, _, err := g.allocate(ctx, x, nil, false)
	return tg, err
}

// allocate runs the search; with a Placer it realises the best matrix
// with it and, when ownLayout allows, exactly as the matrix lays it out,
// and keeps the better placement.
func (g Genetic) allocate(ctx context.Context, x *instance, pl Placer, ownLayout bool) ([]Target, *PlaceResult, error) {
	if err := g.validate(); err != nil {
		return nil, nil, err
	}
	e, err := g.Objective.newEngine(x)
	if err != nil {
		return nil, nil, err
	}
	// Nodes of the matrix: one column per (node, type) with healthy devices.
	var ntype, ncap []int
	col := make(map[string]int) // device ID → column
	for _, n := range x.in.Cluster.Nodes {
		cols := make(map[int]int)
		for _, d := range n.Devices {
			if !d.Healthy {
				continue
			}
			t := x.typeIdx[d.Type]
			c, ok := cols[t]
			if !ok {
				c = len(ntype)
				cols[t] = c
				ntype = append(ntype, t)
				ncap = append(ncap, 0)
			}
			ncap[c]++
			col[d.ID] = c
		}
	}
	// Repair order: pinned first, then least attained service, then oldest.
	order := make([]int, len(e.jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ja, jb := e.jobs[a].info, e.jobs[b].info
		pa, pb := 1, 1
		if ja.pinned {
			pa = 0
		}
		if jb.pinned {
			pb = 0
		}
		return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(ja.job.Attained, jb.job.Attained),
			ja.job.Submitted.Compare(jb.job.Submitted), cmp.Compare(ja.job.ID, jb.job.ID))
	})
	p := refsearch.Problem{NodeType: ntype, NodeCap: ncap, Interference: e.interference, MaxNodes: g.MaxNodes}
	cur := make([][]int, len(order))
	for k, i := range order {
		j := &e.jobs[i]
		rj := refsearch.Job{Min: j.min, Max: j.max, Pinned: j.pinned, Allowed: make([]bool, len(x.types))}
		for _, t := range j.allowed {
			rj.Allowed[t] = true
		}
		if len(j.info.curDevs) > 0 {
			rj.Current = make([]int, len(ntype))
			for _, id := range j.info.curDevs {
				if c, ok := col[id]; ok {
					rj.Current[c]++
				}
			}
		}
		cur[k] = rj.Current
		p.Jobs = append(p.Jobs, rj)
	}
	type key struct{ t, n, c int }
	cache := make([]map[key]float64, len(order))
	vals := make([]float64, len(e.jobs))
	p.Fitness = func(rows [][]int) float64 {
		for k, i := range order {
			j := &e.jobs[i]
			r := rows[k]
			c, n, t := 0, 0, -1
			for col, v := range r {
				if v > 0 {
					c += v
					n++
					t = ntype[col]
				}
			}
			if c == 0 {
				vals[i] = 0
				continue
			}
			if cache[k] == nil {
				cache[k] = make(map[key]float64)
			}
			kk := key{t, n, c}
			v, ok := cache[k][kk]
			if !ok {
				raw, err := x.speedup(j.info, t, n, c)
				if err != nil && e.err == nil {
					e.err = err
				}
				v = raw / j.base
				cache[k][kk] = v
			}
			if j.penal && !equalRow(r, cur[k]) {
				v *= j.rf
			}
			vals[i] = v
		}
		return e.fitness(vals)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	res, err := refsearch.Search(p, refsearch.Options{Population: g.Population, Generations: g.Generations, Seed: g.Seed})
	if err != nil {
		return nil, nil, err
	}
	if e.err != nil {
		return nil, nil, e.err
	}
	// The matrix's columns are the engine's bins (same construction order).
	s := e.emptyState()
	for k, i := range order {
		c, t := 0, -1
		var p []slot
		for col, v := range res.Rows[k] {
			if v > 0 {
				c += v
				t = ntype[col]
				p = append(p, slot{col, v})
			}
		}
		if c > 0 {
			e.assign(s, i, t, c, p)
		}
	}
	tg := e.targets(s)
	if pl == nil {
		return tg, nil, nil
	}
	placed, err := pl.Place(ctx, x.in.Cluster, x.currentAssignments(), x.toPlace(tg))
	if err != nil {
		return nil, nil, placeError(err)
	}
	if ownLayout {
		if own := e.layoutResult(s); e.realizedFitness(own) > e.realizedFitness(placed) {
			placed = own
		}
	}
	return tg, &placed, e.err
}

func equalRow(r, cur []int) bool {
	if cur == nil {
		for _, v := range r {
			if v != 0 {
				return false
			}
		}
		return true
	}
	return slices.Equal(r, cur)
}
