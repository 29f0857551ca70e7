package scheduler

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// epsilon is added to every speedup inside the power mean, as in Pollux,
// so that a job without devices has a finite (and very low) utility.
const epsilon = 1e-3

// gjob is one job as the goodput engine sees it.
type gjob struct {
	info     *jobInfo
	idx      int // index in instance.jobs
	w        float64
	allowed  []int
	min, max int
	rigid    bool
	pinned   bool
	t0, c0   int // current type and count (t0 = −1: not running)
	penal    bool
	rf       float64
	base     float64
	cache    [][]float64 // per type: raw speedup / base at packed nodes, by count; NaN = unknown
}

// engine evaluates and searches allocations for one Goodput round.
type engine struct {
	x            *instance
	p            float64
	geo          bool
	interference bool
	jobs         []gjob // sorted by job ID
	look         []int  // per type: lookahead window of a move
	err          error  // first bad speedup seen
}

// newEngine builds the engine for instance x.
func (g Goodput) newEngine(x *instance) (*engine, error) {
	p := g.Exponent
	if p == 0 {
		p = -1
	}
	if math.IsNaN(p) || math.IsInf(p, 0) || p > 1 {
		return nil, fmt.Errorf("%w: Goodput.Exponent %v: must be finite and at most 1", ErrInvalid, g.Exponent)
	}
	if g.RestartDelay < 0 {
		return nil, fmt.Errorf("%w: Goodput.RestartDelay %v is negative", ErrInvalid, g.RestartDelay)
	}
	delta := g.RestartDelay
	if delta == 0 {
		delta = 30 * time.Second
	}
	e := &engine{x: x, p: p, geo: g.Geometric, interference: !g.AllowInterference}
	nt := len(x.types)
	e.look = make([]int, nt)
	for t := range nt {
		e.look[t] = max(x.perNode[t], 8)
	}
	order := make([]int, len(x.jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(x.jobs[a].job.ID, x.jobs[b].job.ID) })
	e.jobs = make([]gjob, len(order))
	fair := max(1, x.total/max(len(x.jobs), 1))
	for k, i := range order {
		ji := &x.jobs[i]
		j := gjob{info: ji, idx: i, w: ji.weight, allowed: ji.allowed, min: ji.min, max: ji.max,
			rigid: ji.rigid, pinned: ji.pinned, t0: ji.curType, c0: ji.curCount, base: 1,
			cache: make([][]float64, nt)}
		j.penal = ji.curCount > 0 || ji.job.Restarts > 0
		j.rf = restartFactor(ji.age, ji.job.Restarts, delta)
		if j.t0 >= 0 && !slices.Contains(j.allowed, j.t0) {
			j.t0, j.c0 = -1, 0 // running on a type it may no longer use
		}
		// Fair-share baseline: the best allowed type at 1/J of the cluster.
		f := min(max(fair, j.min), j.max)
		base := 0.0
		for _, t := range j.allowed {
			c := min(f, x.cap[t])
			if c <= 0 {
				continue
			}
			v, err := x.speedup(ji, t, x.packedNodes(t, c), c)
			if err != nil {
				return nil, err
			}
			base = max(base, v)
		}
		if base > 0 {
			j.base = base
		}
		e.jobs[k] = j
	}
	return e, nil
}

// norm returns job j's raw speedup over its baseline on (t, c) with the
// consolidated node count, without the restart factor.
func (e *engine) norm(j *gjob, t, c int) float64 {
	if c <= 0 {
		return 0
	}
	cs := j.cache[t]
	if c >= len(cs) {
		n := max(2*len(cs), c+1, 16)
		grown := make([]float64, n)
		copy(grown, cs)
		for i := len(cs); i < n; i++ {
			grown[i] = math.NaN()
		}
		j.cache[t], cs = grown, grown
	}
	if v := cs[c]; !math.IsNaN(v) {
		return v
	}
	v, err := e.x.speedup(j.info, t, e.x.packedNodes(t, c), c)
	if err != nil && e.err == nil {
		e.err = err
	}
	v /= j.base
	cs[c] = v
	return v
}

// value is job j's speedup over its baseline on (t, c), restart factor
// included when (t, c) differs from what the job runs now.
func (e *engine) value(j *gjob, t, c int) float64 {
	if c <= 0 {
		return 0
	}
	v := e.norm(j, t, c)
	if j.penal && (t != j.t0 || c != j.c0) {
		v *= j.rf
	}
	return v
}

// util is the concave increasing utility whose weighted sum the power
// mean orders the same way.
func (e *engine) util(v float64) float64 {
	switch {
	case e.geo:
		return math.Log(v + epsilon)
	case e.p == -1:
		return -1 / (v + epsilon)
	case e.p < 0:
		return -math.Pow(v+epsilon, e.p)
	}
	return math.Pow(v+epsilon, e.p)
}

// fitness is the weighted power mean of the values.
func (e *engine) fitness(vals []float64) float64 {
	var sw, s float64
	for i, v := range vals {
		w := e.jobs[i].w
		sw += w
		if e.geo {
			s += w * math.Log(v+epsilon)
		} else {
			s += w * math.Pow(v+epsilon, e.p)
		}
	}
	if sw == 0 {
		return 0
	}
	if e.geo {
		return math.Exp(s / sw)
	}
	return math.Pow(s/sw, 1/e.p)
}

// distNodes is how many nodes (t, c) takes from the budget of nodes that
// may host a distributed job: its packed node count when it spans more
// than one node and interference avoidance is on, else 0.
func (e *engine) distNodes(t, c int) int {
	if !e.interference || c <= 0 {
		return 0
	}
	if n := e.x.packedNodes(t, c); n > 1 {
		return n
	}
	return 0
}

// state is one allocation: a (type, count) per job and what is left.
type state struct {
	typ, cnt       []int
	free, distFree []int
}

func (e *engine) emptyState() *state {
	nt := len(e.x.types)
	s := &state{typ: make([]int, len(e.jobs)), cnt: make([]int, len(e.jobs)),
		free: slices.Clone(e.x.cap), distFree: slices.Clone(e.x.nodes)}
	for i := range s.typ {
		s.typ[i] = -1
	}
	_ = nt
	return s
}

func (s *state) clone() *state {
	return &state{typ: slices.Clone(s.typ), cnt: slices.Clone(s.cnt), free: slices.Clone(s.free), distFree: slices.Clone(s.distFree)}
}

// set moves job i to (t, c), updating the free counts. c = 0 removes it.
func (e *engine) set(s *state, i, t, c int) {
	if s.cnt[i] > 0 {
		ot := s.typ[i]
		s.free[ot] += s.cnt[i]
		s.distFree[ot] += e.distNodes(ot, s.cnt[i])
	}
	if c <= 0 {
		s.typ[i], s.cnt[i] = -1, 0
		return
	}
	s.typ[i], s.cnt[i] = t, c
	s.free[t] -= c
	s.distFree[t] -= e.distNodes(t, c)
}

// fits reports whether job i can move to (t, c) given what is free.
func (e *engine) fits(s *state, i, t, c int) bool {
	free, dist := s.free[t], s.distFree[t]
	if s.typ[i] == t && s.cnt[i] > 0 {
		free += s.cnt[i]
		dist += e.distNodes(t, s.cnt[i])
	}
	return c <= free && e.distNodes(t, c) <= dist
}

func (e *engine) jobUtil(s *state, i int) float64 {
	j := &e.jobs[i]
	return j.w * e.util(e.value(j, s.typ[i], s.cnt[i]))
}

// objective is Σ w·u(value) of a state.
func (e *engine) objective(s *state) float64 {
	o := 0.0
	for i := range e.jobs {
		o += e.jobUtil(s, i)
	}
	return o
}

// values lists each job's value in s.
func (e *engine) values(s *state) []float64 {
	v := make([]float64, len(e.jobs))
	for i := range e.jobs {
		v[i] = e.value(&e.jobs[i], s.typ[i], s.cnt[i])
	}
	return v
}

// maxOn is the most devices job j may hold on type t.
func (e *engine) maxOn(j *gjob, t int) int {
	return min(j.max, e.x.cap[t])
}

// move is a candidate change of one job to (t, c).
type move struct {
	gain  float64 // utility gain per added device (for a start, per device)
	job   int
	t, c  int
	stamp int
}

// bestGrow returns job i's best move by utility gain per added device,
// within the lookahead window, among moves that need at most the free
// devices (capacity-aware) or ignoring capacity (free = false).
func (e *engine) bestGrow(s *state, i int, capAware bool, sameTypeOnly bool) (move, bool) {
	j := &e.jobs[i]
	if j.pinned {
		return move{}, false
	}
	cur := e.jobUtil(s, i)
	best := move{job: i, gain: 0}
	found := false
	try := func(t, c, added int) {
		if added <= 0 || (capAware && !e.fits(s, i, t, c)) {
			return
		}
		g := (j.w*e.util(e.value(j, t, c)) - cur) / float64(added)
		if g > best.gain+1e-15 || (found && g > best.gain-1e-15 && c < best.c && t == best.t) {
			best = move{gain: g, job: i, t: t, c: c}
			found = true
		}
	}
	if s.cnt[i] > 0 {
		t, c := s.typ[i], s.cnt[i]
		if !j.rigid {
			hi := min(c+e.look[t], e.maxOn(j, t))
			for c2 := c + 1; c2 <= hi; c2++ {
				try(t, c2, c2-c)
			}
		}
		if sameTypeOnly {
			return best, found
		}
		for _, t2 := range j.allowed {
			if t2 == t {
				continue
			}
			lo := j.min
			hi := min(lo+e.look[t2]-1, e.maxOn(j, t2))
			if j.rigid {
				hi = min(lo, e.maxOn(j, t2))
			}
			for c2 := max(lo, c); c2 <= hi || (c2 == max(lo, c) && c2 <= e.maxOn(j, t2)); c2++ {
				try(t2, c2, c2) // switching types: all its devices are new ones
				if c2 >= hi {
					break
				}
			}
		}
		return best, found
	}
	for _, t := range j.allowed {
		lo := j.min
		hi := min(lo+e.look[t]-1, e.maxOn(j, t))
		if j.rigid {
			hi = min(lo, e.maxOn(j, t))
		}
		for c := lo; c <= hi; c++ {
			try(t, c, c)
		}
	}
	return best, found
}

// moveHeap is a max-heap of moves by gain, ties by job order.
type moveHeap []move

func (h moveHeap) Len() int { return len(h) }
func (h moveHeap) Less(a, b int) bool {
	if h[a].gain != h[b].gain {
		return h[a].gain > h[b].gain
	}
	return h[a].job < h[b].job
}
func (h moveHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *moveHeap) Push(x any)   { *h = append(*h, x.(move)) }
func (h *moveHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	*h = old[:len(old)-1]
	return m
}

// fill is the marginal-gain greedy: it repeatedly applies the feasible
// move with the largest utility gain per device until no move gains.
// Jobs only grow on their type; jobs without devices may start on any
// allowed type.
func (e *engine) fill(ctx context.Context, s *state) error {
	stamp := make([]int, len(e.jobs))
	h := make(moveHeap, 0, len(e.jobs))
	for i := range e.jobs {
		if m, ok := e.bestGrow(s, i, true, true); ok {
			h = append(h, m)
		}
	}
	heap.Init(&h)
	steps := 0
	for h.Len() > 0 {
		if steps++; steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m := heap.Pop(&h).(move)
		if m.stamp != stamp[m.job] {
			continue
		}
		if !e.fits(s, m.job, m.t, m.c) {
			stamp[m.job]++
			if m2, ok := e.bestGrow(s, m.job, true, true); ok {
				m2.stamp = stamp[m.job]
				heap.Push(&h, m2)
			}
			continue
		}
		e.set(s, m.job, m.t, m.c)
		stamp[m.job]++
		if m2, ok := e.bestGrow(s, m.job, true, true); ok {
			m2.stamp = stamp[m.job]
			heap.Push(&h, m2)
		}
	}
	return e.err
}
