package pollux

import (
	"cmp"
	"context"
	"slices"

	"github.com/goodsched/goodsched/scheduler/internal/refsearch"
)

// ReferenceOptions size the reference search.
type ReferenceOptions struct {
	// Population and Generations size the search (0 = 100 each, Pollux).
	Population, Generations int
	// MaxNodes caps the nodes a job spans (0 = none).
	MaxNodes int
	// Seed seeds the search.
	Seed uint64
	// Rank orders the repair after pinned jobs: per job (in Problem.Jobs
	// order), lower first, ties by ID; nil = by ID. Pollux repairs the
	// jobs with the least attained service first.
	Rank []int
}

// Reference runs Pollux's genetic algorithm over job × node allocation
// matrices (one column per bin; population warm-started from the current
// allocation, crossover over job rows, Pollux's mutations and repair) with
// the same objective, and returns its best matrix as a Solution. It is one
// to three orders of magnitude slower than Solve.
func (e *Search) Reference(ctx context.Context, o ReferenceOptions) (*Solution, error) {
	l := e.lay
	// Repair order: pinned first, then by rank.
	order := make([]int, len(e.jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ja, jb := &e.jobs[a], &e.jobs[b]
		pa, pb := 1, 1
		if ja.pinned {
			pa = 0
		}
		if jb.pinned {
			pb = 0
		}
		c := cmp.Compare(pa, pb)
		if o.Rank != nil {
			c = cmp.Or(c, cmp.Compare(o.Rank[a], o.Rank[b]))
		}
		return cmp.Or(c, cmp.Compare(ja.ID, jb.ID))
	})
	p := refsearch.Problem{NodeType: l.binType, NodeCap: l.binCap, Interference: e.interference, MaxNodes: o.MaxNodes}
	cur := make([][]int, len(order))
	for k, i := range order {
		j := &e.jobs[i]
		rj := refsearch.Job{Min: j.min, Max: j.max, Pinned: j.pinned, Allowed: make([]bool, len(e.types))}
		for _, t := range j.allowed {
			rj.Allowed[t] = true
		}
		if len(j.Current) > 0 {
			rj.Current = make([]int, len(l.binCap))
			for _, id := range j.Current {
				if b, ok := l.devBin[id]; ok {
					rj.Current[b]++
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
			for b, v := range r {
				if v > 0 {
					c += v
					n++
					t = l.binType[b]
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
				raw, _ := e.eval(j, t, n, c) // a bad one fails the search (e.err)
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
		return nil, err
	}
	res, err := refsearch.Search(p, refsearch.Options{Population: o.Population, Generations: o.Generations, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	if e.err != nil {
		return nil, e.err
	}
	s := e.emptyState()
	for k, i := range order {
		c, t := 0, -1
		var p []slot
		for b, v := range res.Rows[k] {
			if v > 0 {
				c += v
				t = l.binType[b]
				p = append(p, slot{b, v})
			}
		}
		if c > 0 {
			e.assign(s, i, t, c, p)
		}
	}
	return &Solution{s}, nil
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
