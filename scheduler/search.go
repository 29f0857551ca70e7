package scheduler

import (
	"container/heap"
	"context"
	"math"
)

// shrink is a donor's cheapest way to give back devices of its type.
type shrink struct {
	loss  float64 // utility loss per freed device
	job   int
	c     int // count after shrinking (0 = preempted)
	stamp int
}

type shrinkHeap []shrink

func (h shrinkHeap) Len() int { return len(h) }
func (h shrinkHeap) Less(a, b int) bool {
	if h[a].loss != h[b].loss {
		return h[a].loss < h[b].loss
	}
	return h[a].job < h[b].job
}
func (h shrinkHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *shrinkHeap) Push(x any)   { *h = append(*h, x.(shrink)) }
func (h *shrinkHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	*h = old[:len(old)-1]
	return m
}

// bestShrink returns job i's cheapest shrink step per freed device: down
// within the look-ahead window (not below its minimum) or to zero.
func (e *engine) bestShrink(s *state, i int) (shrink, bool) {
	j := &e.jobs[i]
	c := s.cnt[i]
	if j.pinned || c <= 0 {
		return shrink{}, false
	}
	t := s.typ[i]
	cur := e.jobUtil(s, i)
	best := shrink{job: i, loss: math.Inf(1)}
	try := func(c2 int) {
		n := 0
		if c2 > 0 {
			n, _ = e.probe(s, i, t, c2)
		}
		l := (cur - j.w*e.util(e.value(j, t, n, c2))) / float64(c-c2)
		if l < best.loss {
			best.loss, best.c = l, c2
		}
	}
	if !j.rigid {
		for c2 := c - 1; c2 >= max(j.min, c-e.look[t]); c2-- {
			try(c2)
		}
	}
	try(0)
	return best, true
}

// bestOnType is job i's best move onto type t by utility gain per device
// it must obtain there, ignoring capacity (node counts estimated by
// consolidated packing). ok is false when nothing gains.
func (e *engine) bestOnType(s *state, i, t int) (move, bool) {
	j := &e.jobs[i]
	cur := e.jobUtil(s, i)
	best, found := move{job: i}, false
	e.candidates(s, i, false, t, func(t, c int) {
		added := c
		if s.typ[i] == t {
			added = c - s.cnt[i]
		}
		g := (j.w*e.util(e.value(j, t, e.x.packedNodes(t, c), c)) - cur) / float64(added)
		if g > 0 && (!found || g > best.gain) {
			best, found = move{gain: g, job: i, t: t, c: c}, true
		}
	})
	return best, found
}

// improve is the exchange local search: for every job and allowed type
// it tries to take the devices its best move there needs from the
// cheapest donors on that type (shrinking or preempting them), and keeps
// the exchange when the objective rises. A job moving to another type
// frees its old devices, which the greedy fill then hands out. Passes
// repeat until one changes nothing.
func (e *engine) improve(ctx context.Context, s *state, maxPasses int) error {
	nt := len(e.x.types)
	stamp := make([]int, len(e.jobs))
	for pass := 0; pass < maxPasses; pass++ {
		changed := false
		donors := make([]shrinkHeap, nt)
		for i := range e.jobs {
			if sh, ok := e.bestShrink(s, i); ok {
				donors[s.typ[i]] = append(donors[s.typ[i]], sh)
			}
		}
		for t := range donors {
			heap.Init(&donors[t])
		}
		push := func(i int) {
			stamp[i]++
			if sh, ok := e.bestShrink(s, i); ok {
				sh.stamp = stamp[i]
				heap.Push(&donors[s.typ[i]], sh)
			}
		}
		for r := range e.jobs {
			if r&255 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			for _, t := range e.jobs[r].allowed {
				m, ok := e.bestOnType(s, r, t)
				if !ok {
					continue
				}
				if e.tryTransfer(s, m, &donors[t], stamp, push) {
					changed = true
				}
			}
		}
		if err := e.fill(ctx, s); err != nil {
			return err
		}
		if !changed {
			break
		}
	}
	return e.err
}

// undo records a job's allocation before a tentative change.
type undo struct {
	job, t, c int
	place     []slot
}

// tryTransfer applies receiver move m, taking the devices it lacks from
// the cheapest donors in h, if that raises the objective; otherwise it
// leaves s as it was.
func (e *engine) tryTransfer(s *state, m move, h *shrinkHeap, stamp []int, push func(int)) bool {
	r, t := m.job, m.t
	jr := &e.jobs[r]
	before := e.jobUtil(s, r)
	tol := 1e-12 * (1 + math.Abs(before))
	if n, ok := e.probe(s, r, t, m.c); ok {
		if jr.w*e.util(e.value(jr, t, n, m.c))-before > tol {
			e.apply(s, r, t, m.c)
			push(r)
			return true
		}
		return false
	}
	// Cheap rejection: every donor device costs at least the top loss.
	for h.Len() > 0 {
		d := (*h)[0]
		if d.stamp == stamp[d.job] && s.typ[d.job] == t && s.cnt[d.job] > 0 {
			if d.job != r && d.loss >= m.gain {
				return false
			}
			break
		}
		heap.Pop(h)
	}
	gain := jr.w*e.util(e.value(jr, t, e.x.packedNodes(t, m.c), m.c)) - before
	var log []undo
	var skipped []shrink
	loss := 0.0
	done := false
	for h.Len() > 0 {
		d := heap.Pop(h).(shrink)
		if d.stamp != stamp[d.job] || s.typ[d.job] != t || s.cnt[d.job] == 0 {
			continue
		}
		if d.job == r {
			skipped = append(skipped, d)
			continue
		}
		if d.loss >= gain { // even one freed device costs more than the whole gain
			skipped = append(skipped, d)
			break
		}
		u0 := e.jobUtil(s, d.job)
		log = append(log, undo{d.job, s.typ[d.job], s.cnt[d.job], s.place[d.job]})
		e.apply(s, d.job, t, d.c)
		loss += u0 - e.jobUtil(s, d.job)
		push(d.job)
		if loss >= gain {
			break
		}
		if n, ok := e.probe(s, r, t, m.c); ok {
			g := jr.w*e.util(e.value(jr, t, n, m.c)) - before
			if g-loss > tol {
				e.apply(s, r, t, m.c)
				push(r)
				done = true
			}
			break
		}
	}
	for _, d := range skipped {
		heap.Push(h, d)
	}
	if done {
		return true
	}
	for k := len(log) - 1; k >= 0; k-- {
		u := log[k]
		e.release(s, u.job)
		e.assign(s, u.job, u.t, u.c, u.place)
		push(u.job)
	}
	return false
}
