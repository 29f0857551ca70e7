package unrelated

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// MaxExactJobs is the most pending jobs Optimal and OptimalFrom accept: the
// solver's time grows as (active machines) × 3^jobs per makespan level.
const MaxExactJobs = 12

// ErrTooLarge is returned by the exact solver for more than MaxExactJobs
// pending jobs.
var ErrTooLarge = errors.New("unrelated: too many jobs for the exact solver")

// Optimal returns a schedule of minimum total cost and that cost.
//
// The solver is exact. Any schedule is a partition of the jobs into one
// ordered sequence per machine, and every such partition is reachable in
// the decision process (a machine whose sequence is done retires). For a
// fixed set of jobs on a machine its finish time is fixed and the best order
// minimises single-machine weighted tardiness, solved exactly by dynamic
// programming over subsets. The makespan couples the machines, so the
// solver enumerates makespan levels M in increasing order (every finish time
// some machine can have) and, for each, finds the cheapest partition whose
// machines all finish by M, again exactly by dynamic programming over
// subsets; M plus that cost bounds the optimum from above and is exact at
// the optimum's own makespan. It stops as soon as M plus the cost of the
// unconstrained partition (a lower bound for every level ≥ M) reaches the
// best cost found: the optimality proof. Tests check it against exhaustive
// search of the decision process.
func Optimal(in Instance) (Schedule, Cost, error) {
	s, err := Start(in)
	if err != nil {
		return Schedule{}, Cost{}, err
	}
	return OptimalFrom(s)
}

// OptimalFrom completes s at minimum total cost: the best schedule that
// keeps every decision already taken in s (s itself is not modified).
func OptimalFrom(s *State) (Schedule, Cost, error) {
	var jobs, machines []int
	for j, p := range s.Pending {
		if p {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) > MaxExactJobs {
		return Schedule{}, Cost{}, fmt.Errorf("%w: %d pending, at most %d", ErrTooLarge, len(jobs), MaxExactJobs)
	}
	floor := 0.0
	for i, a := range s.Active {
		if a {
			machines = append(machines, i)
		} else {
			floor = math.Max(floor, s.Ready[i])
		}
	}
	sets := solve(s.in, jobs, machines, s.Ready, floor)
	out := s.Schedule()
	for a, i := range machines {
		out.Sequences[i] = append(out.Sequences[i], sets[a]...)
	}
	c, err := s.in.Evaluate(out)
	return out, c, err
}

// solve returns, per machine of machines, the ordered jobs it should run
// next so that the schedule costs least.
func solve(in *Instance, jobs, machines []int, ready []float64, floor float64) [][]int {
	k, K := len(jobs), len(machines)
	full := 1<<k - 1
	n := 1 << k
	inf := math.Inf(1)
	finish := make([][]float64, K) // finish[a][T]
	cost := make([][]float64, K)   // best cost of machine a running exactly T
	last := make([][]int8, K)      // last job of the best order of T on a
	lmin := floor
	for a, i := range machines {
		r := ready[i]
		lmin = math.Max(lmin, r)
		f, c, l := make([]float64, n), make([]float64, n), make([]int8, n)
		f[0] = r
		for T := 1; T < n; T++ {
			low := bits.TrailingZeros(uint(T))
			f[T] = f[T&(T-1)] + in.Jobs[jobs[low]].Processing[i]
			best, arg := inf, -1
			for R := T; R != 0; R &= R - 1 {
				b := bits.TrailingZeros(uint(R))
				job := in.Jobs[jobs[b]]
				v := c[T&^(1<<b)] + job.Weight*math.Max(0, f[T]-job.Deadline)
				if v < best {
					best, arg = v, b
				}
			}
			c[T], l[T] = best, int8(arg)
		}
		finish[a], cost[a], last[a] = f, c, l
	}
	total := make([][]float64, K)
	for a, i := range machines {
		m := in.Machines[i]
		t := make([]float64, n)
		for T := 0; T < n; T++ {
			t[T] = cost[a][T] + m.Weight*math.Max(0, finish[a][T]-m.Deadline)
		}
		total[a] = t
	}

	// Makespan levels: every finish time above the smallest possible one.
	levels := []float64{lmin}
	for a := range machines {
		for _, f := range finish[a] {
			if f > lmin {
				levels = append(levels, f)
			}
		}
	}
	sort.Float64s(levels)

	d := make([][]float64, K)
	choice := make([][]int, K)
	for a := range d {
		d[a], choice[a] = make([]float64, n), make([]int, n)
	}
	partition := func(M float64) float64 {
		for a := 0; a < K; a++ {
			for S := 0; S < n; S++ {
				if a == K-1 && S != full {
					continue
				}
				best, arg := inf, -1
				for T := S; ; T = (T - 1) & S {
					if finish[a][T] <= M {
						prev := 0.0
						if a > 0 {
							prev = d[a-1][S&^T]
						} else if S&^T != 0 {
							prev = inf
						}
						if v := prev + total[a][T]; v < best {
							best, arg = v, T
						}
					}
					if T == 0 {
						break
					}
				}
				d[a][S], choice[a][S] = best, arg
			}
		}
		return d[K-1][full]
	}
	sets := make([]int, K)
	record := func() {
		S := full
		for a := K - 1; a >= 0; a-- {
			sets[a] = choice[a][S]
			S &^= sets[a]
		}
	}
	lower := partition(inf)
	record()
	best := math.Max(lmin, maxFinish(finish, sets)) + lower
	prev := math.NaN()
	for _, M := range levels {
		if M == prev {
			continue
		}
		prev = M
		if M+lower >= best {
			break
		}
		if v := partition(M); M+v < best {
			best = M + v
			record()
		}
	}
	out := make([][]int, K)
	for a := range machines {
		var seq []int
		for T := sets[a]; T != 0; {
			b := int(last[a][T])
			seq = append(seq, jobs[b])
			T &^= 1 << b
		}
		for x, y := 0, len(seq)-1; x < y; x, y = x+1, y-1 {
			seq[x], seq[y] = seq[y], seq[x]
		}
		out[a] = seq
	}
	return out
}

func maxFinish(finish [][]float64, sets []int) float64 {
	m := 0.0
	for a, T := range sets {
		m = math.Max(m, finish[a][T])
	}
	return m
}
