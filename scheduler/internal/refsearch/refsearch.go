// Package refsearch is a reference genetic search over job × node
// allocation matrices, after PolluxSched's (OSDI'21): a population warm-
// started from the current allocation, single-point crossover over job
// rows, Pollux's three mutations, and its repair rules (interference
// avoidance, max replicas, node cap, per-node capacity in job order, min
// replicas), plus Sia's one device type per job. It exists to check the
// fast Pollux policy against; it is slow by design.
//
// The host contract:
//  1. Describe nodes (type, capacity) and jobs (bounds, allowed types,
//     pinned, current row) in a Problem, with a Fitness over whole
//     matrices (higher is better).
//  2. Call Search with Options carrying an explicit Seed. The first
//     individuals are the current allocation, the current allocation with
//     waiting jobs added first-fit at their minimum, and every job at its
//     minimum first-fit from empty; the rest are mutations of the current
//     allocation.
//  3. Read the best matrix and its fitness from the Result.
//
// Search is deterministic for a given Problem and Options and keeps no
// state; it is safe for concurrent use if Fitness is.
package refsearch

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// ErrInvalid reports a malformed Problem or Options.
var ErrInvalid = errors.New("refsearch: invalid")

// Job is one row of the matrix.
type Job struct {
	// Min and Max bound the job's total replicas (a job below Min gets 0).
	Min, Max int
	// Allowed[t] reports whether the job may use type t; nil = all.
	Allowed []bool
	// Pinned jobs keep Current unchanged.
	Pinned bool
	// Current is the job's replicas per node now (nil = none).
	Current []int
}

// Problem is one search instance.
type Problem struct {
	// NodeType and NodeCap give each node's type index and device count.
	NodeType []int
	NodeCap  []int
	// Jobs in repair priority order (earlier jobs keep their replicas
	// when capacity runs out).
	Jobs []Job
	// Interference enforces at most one distributed job per node.
	Interference bool
	// MaxNodes caps the nodes one job spans (0 = no cap; Pollux used 16).
	MaxNodes int
	// Fitness scores a whole matrix, rows[j][n]; higher is better. It must
	// not keep or modify rows.
	Fitness func(rows [][]int) float64
}

// Options tune the search. Zero fields take Pollux's values.
type Options struct {
	// Population is the population size; 0 = 100.
	Population int
	// Generations is the number of generations; 0 = 100.
	Generations int
	// Seed seeds the random source (PCG).
	Seed uint64
}

// Result is the best matrix found.
type Result struct {
	Rows    [][]int
	Fitness float64
	// Evaluations counts Fitness calls.
	Evaluations int
}

type indiv struct {
	rows [][]int
	fit  float64
}

// Search runs the genetic algorithm.
func Search(p Problem, o Options) (Result, error) {
	nn := len(p.NodeType)
	if nn != len(p.NodeCap) || p.Fitness == nil {
		return Result{}, fmt.Errorf("%w: NodeType, NodeCap lengths differ or Fitness is nil", ErrInvalid)
	}
	for j, jb := range p.Jobs {
		if jb.Current != nil && len(jb.Current) != nn {
			return Result{}, fmt.Errorf("%w: jobs[%d].Current has %d entries, want %d", ErrInvalid, j, len(jb.Current), nn)
		}
	}
	if o.Population <= 0 {
		o.Population = 100
	}
	if o.Generations <= 0 {
		o.Generations = 100
	}
	s := &searcher{p: p, rng: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
	cur := s.current()
	pop := make([]indiv, 0, o.Population)
	for k := 0; k < o.Population; k++ {
		rows := clone(cur)
		switch k {
		case 0:
		case 1:
			s.firstFit(rows)
		case 2:
			// Every job at its minimum, first fit from an empty cluster.
			for j := range rows {
				if !s.p.Jobs[j].Pinned {
					clear(rows[j])
				}
			}
			s.firstFit(rows)
		default:
			s.mutate(rows, cur)
		}
		s.repair(rows)
		pop = append(pop, s.eval(rows))
	}
	for g := 0; g < o.Generations; g++ {
		kids := make([]indiv, 0, o.Population)
		for len(kids) < o.Population {
			a, b := s.pick(pop), s.pick(pop)
			child := s.crossover(a.rows, b.rows)
			s.mutate(child, cur)
			s.repair(child)
			kids = append(kids, s.eval(child))
		}
		pop = append(pop, kids...)
		slices.SortStableFunc(pop, func(x, y indiv) int { return cmp.Compare(y.fit, x.fit) })
		pop = pop[:o.Population]
	}
	return Result{Rows: pop[0].rows, Fitness: pop[0].fit, Evaluations: s.evals}, nil
}

type searcher struct {
	p     Problem
	rng   *rand.Rand
	evals int
}

func (s *searcher) eval(rows [][]int) indiv {
	s.evals++
	return indiv{rows: rows, fit: s.p.Fitness(rows)}
}

func (s *searcher) current() [][]int {
	nn := len(s.p.NodeType)
	rows := make([][]int, len(s.p.Jobs))
	for j, jb := range s.p.Jobs {
		rows[j] = make([]int, nn)
		if jb.Current != nil {
			copy(rows[j], jb.Current)
		}
	}
	return rows
}

func clone(rows [][]int) [][]int {
	out := make([][]int, len(rows))
	for j := range rows {
		out[j] = slices.Clone(rows[j])
	}
	return out
}

// firstFit starts every job without devices on the first node of an
// allowed type with room for its minimum (Pollux's fast path for new
// jobs).
func (s *searcher) firstFit(rows [][]int) {
	used := s.used(rows)
	for j, jb := range s.p.Jobs {
		if jb.Pinned || sum(rows[j]) > 0 {
			continue
		}
		need := max(jb.Min, 1)
		for n, c := range s.p.NodeCap {
			t := s.p.NodeType[n]
			if jb.allows(t) && c-used[n] >= need {
				rows[j][n] = need
				used[n] += need
				break
			}
		}
	}
}

// pick is a binary tournament.
func (s *searcher) pick(pop []indiv) indiv {
	a, b := pop[s.rng.IntN(len(pop))], pop[s.rng.IntN(len(pop))]
	if b.fit > a.fit {
		return b
	}
	return a
}

// crossover takes rows 0..k from a and the rest from b.
func (s *searcher) crossover(a, b [][]int) [][]int {
	k := s.rng.IntN(len(a) + 1)
	out := make([][]int, len(a))
	for j := range a {
		if j < k {
			out[j] = slices.Clone(a[j])
		} else {
			out[j] = slices.Clone(b[j])
		}
	}
	return out
}

// mutate applies Pollux's mutations: reset a row to the current
// allocation, zero some entries, and grow entries on nodes with room.
func (s *searcher) mutate(rows, cur [][]int) {
	nn := len(s.p.NodeType)
	used := s.used(rows)
	for j := range rows {
		if s.p.Jobs[j].Pinned {
			continue
		}
		if s.rng.Float64() < 0.1 {
			for n := range rows[j] {
				used[n] += cur[j][n] - rows[j][n]
			}
			copy(rows[j], cur[j])
		}
		if s.rng.Float64() < 0.1 {
			for n := range rows[j] {
				if rows[j][n] > 0 && s.rng.Float64() < 0.1 {
					used[n] -= rows[j][n]
					rows[j][n] = 0
				}
			}
		}
		if s.rng.Float64() < 0.1 {
			// Grow on a node with free devices or one the job already uses.
			var cands []int
			for n := range nn {
				if used[n] < s.p.NodeCap[n] || rows[j][n] > 0 {
					cands = append(cands, n)
				}
			}
			if len(cands) > 0 {
				n := cands[s.rng.IntN(len(cands))]
				room := s.p.NodeCap[n] - used[n]
				if room > 0 {
					v := rows[j][n] + s.rng.IntN(room+1)
					used[n] += v - rows[j][n]
					rows[j][n] = v
				}
			}
		}
	}
}

// repair makes a matrix feasible, in Pollux's order, plus one type per job.
func (s *searcher) repair(rows [][]int) {
	p := s.p
	nn := len(p.NodeType)
	for j, jb := range p.Jobs {
		r := rows[j]
		if jb.Pinned {
			for n := range r {
				r[n] = 0
				if jb.Current != nil {
					r[n] = jb.Current[n]
				}
			}
			continue
		}
		// One allowed type per job: keep the allowed type holding most.
		var byType []int
		for n, v := range r {
			t := p.NodeType[n]
			for len(byType) <= t {
				byType = append(byType, 0)
			}
			if !jb.allows(t) {
				r[n] = 0
				continue
			}
			byType[t] += v
		}
		bt := -1
		for t, v := range byType {
			if v > 0 && (bt < 0 || v > byType[bt]) {
				bt = t
			}
		}
		for n := range r {
			if p.NodeType[n] != bt {
				r[n] = 0
			}
		}
		// Cap at Max, removing replicas in a random node order.
		total := sum(r)
		if jb.Max > 0 && total > jb.Max {
			for _, n := range s.rng.Perm(nn) {
				if total <= jb.Max {
					break
				}
				k := min(r[n], total-jb.Max)
				r[n] -= k
				total -= k
			}
		}
		// Cap the nodes spanned.
		if p.MaxNodes > 0 {
			k := 0
			for n := range r {
				if r[n] > 0 {
					if k++; k > p.MaxNodes {
						r[n] = 0
					}
				}
			}
		}
	}
	// Pinned jobs take their devices before anyone else.
	order := make([]int, 0, len(p.Jobs))
	for j := range p.Jobs {
		if p.Jobs[j].Pinned {
			order = append(order, j)
		}
	}
	for j := range p.Jobs {
		if !p.Jobs[j].Pinned {
			order = append(order, j)
		}
	}
	// Interference avoidance: at most one distributed job per node.
	if p.Interference {
		owner := make([]int, nn)
		for n := range owner {
			owner[n] = -1
		}
		for _, j := range order {
			if nodes(rows[j]) <= 1 {
				continue
			}
			for n, v := range rows[j] {
				if v == 0 {
					continue
				}
				if owner[n] >= 0 && !p.Jobs[j].Pinned {
					rows[j][n] = 0
				} else if owner[n] < 0 {
					owner[n] = j
				}
			}
		}
	}
	// Per-node capacity, cumulative in job order.
	used := make([]int, nn)
	for _, j := range order {
		for n, v := range rows[j] {
			k := min(v, max(p.NodeCap[n]-used[n], 0))
			if p.Jobs[j].Pinned {
				k = v
			}
			rows[j][n] = k
			used[n] += k
		}
	}
	// Jobs below Min get nothing.
	for j, jb := range p.Jobs {
		if !jb.Pinned && sum(rows[j]) < max(jb.Min, 1) {
			clear(rows[j])
		}
	}
}

// allows reports whether the job may use type t.
func (jb Job) allows(t int) bool {
	return jb.Allowed == nil || (t < len(jb.Allowed) && jb.Allowed[t])
}

// used returns the devices rows take on each node.
func (s *searcher) used(rows [][]int) []int {
	used := make([]int, len(s.p.NodeType))
	for _, r := range rows {
		for n, v := range r {
			used[n] += v
		}
	}
	return used
}

func sum(r []int) int {
	s := 0
	for _, v := range r {
		s += v
	}
	return s
}

func nodes(r []int) int {
	k := 0
	for _, v := range r {
		if v > 0 {
			k++
		}
	}
	return k
}
