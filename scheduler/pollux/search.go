package pollux

import (
	"context"
	"math"
	"slices"
)

// shrink is a donor's cheapest way to give back devices of its type.
type shrink struct {
	loss  float64 // utility loss per freed device
	job   int
	t, c  int // allocation after shrinking (c 0 = preempted; t another type = moved there)
	stamp int
}

// before orders donors cheapest first, ties by job order.
func (a shrink) before(b shrink) bool {
	if a.loss != b.loss {
		return a.loss < b.loss
	}
	return a.job < b.job
}

// shrinkHeap holds donors, cheapest first.
type shrinkHeap = heapOf[shrink]

// bestShrink returns job i's cheapest shrink step per freed device: down
// within the look-ahead window (not below its minimum) or to zero.
func (e *Search) bestShrink(s *state, i int) (shrink, bool) {
	j := &e.jobs[i]
	c := s.cnt[i]
	if j.pinned || c <= 0 {
		return shrink{}, false
	}
	t := s.typ[i]
	cur := e.jobUtil(s, i)
	best := shrink{job: i, loss: math.Inf(1)}
	try := func(t2, c2 int) {
		n := 0
		if c2 > 0 {
			var ok bool
			if n, ok = e.probe(s, i, t2, c2); !ok {
				return
			}
		}
		freed := c - c2
		if t2 != t {
			freed = c
		}
		l := (cur - j.w*e.util(e.value(j, t2, n, c2))) / float64(freed)
		if l < best.loss {
			best.loss, best.t, best.c = l, t2, c2
		}
	}
	if !j.rigid {
		for c2 := c - 1; c2 >= max(j.min, c-e.look[t]); c2-- {
			try(t, c2)
		}
	}
	try(t, 0)
	// Or move to another allowed type where it fits, freeing all of t.
	for _, t2 := range j.allowed {
		if t2 == t {
			continue
		}
		lo, hi := j.min, min(max(j.min, c), e.maxOn(j, t2))
		if j.rigid {
			hi = min(j.min, e.maxOn(j, t2))
		}
		// Its minimum there, or as many as it has here.
		if lo <= s.free[t2] && lo <= hi {
			try(t2, lo)
		}
		if hi > lo && hi <= s.free[t2] {
			try(t2, hi)
		}
	}
	return best, true
}

// bestOnType is job i's best move onto type t by utility gain per device
// it must obtain there, ignoring capacity (node counts estimated by
// consolidated packing). ok is false when nothing gains.
//
// The answer depends only on the job's own allocation (type, count, node
// count) and, onto another type, on the free devices of t up to what the
// job may hold there; without group caps (which read every group's use)
// it is memoised on exactly that, for every state of the round: the
// exchange passes ask it for every job and type, and most jobs do not
// change between passes.
func (e *Search) bestOnType(s *state, i, t int) (move, bool) {
	if e.caps != nil {
		return e.bestOnTypeEval(s, i, t)
	}
	j := &e.jobs[i]
	if e.onType == nil {
		e.onTypeAt = make([]int, len(e.jobs)+1)
		for i := range e.jobs {
			e.onTypeAt[i+1] = e.onTypeAt[i] + len(e.jobs[i].allowed)
		}
		e.onType = make([]onTypeMemo, e.onTypeAt[len(e.jobs)])
	}
	key := onTypeKey{typ: s.typ[i], cnt: s.cnt[i], nodes: len(s.place[i]), set: true}
	if t != s.typ[i] && !j.rigid {
		// candidates tries every free device of t only beyond its window.
		_, hi := e.startWindow(j, t)
		if f := min(s.free[t], e.maxOn(j, t)); f > max(hi, s.cnt[i]) {
			key.free = f
		}
	}
	o := &e.onType[e.onTypeAt[i]+slices.Index(j.allowed, t)]
	if o.key == key {
		return o.m, o.ok
	}
	m, ok := e.bestOnTypeEval(s, i, t)
	*o = onTypeMemo{key, m, ok}
	return m, ok
}

// onTypeKey is what bestOnType's answer depends on (set: the memo entry
// holds one).
type onTypeKey struct {
	typ, cnt, nodes, free int
	set                   bool
}

// onTypeMemo is one memoised bestOnType answer.
type onTypeMemo struct {
	key onTypeKey
	m   move
	ok  bool
}

// bestOnTypeEval computes bestOnType.
func (e *Search) bestOnTypeEval(s *state, i, t int) (move, bool) {
	j := &e.jobs[i]
	cur := e.jobUtil(s, i)
	best, found := move{job: i}, false
	e.candidates(s, i, false, false, t, func(t, c int) {
		added := c
		if s.typ[i] == t {
			added = c - s.cnt[i]
		}
		g := (j.w*e.util(e.value(j, t, e.packedNodes(t, c), c)) - cur) / float64(added)
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
func (e *Search) improve(ctx context.Context, s *state, maxPasses int) error {
	nt := len(e.types)
	stamp := make([]int, len(e.jobs))
	donors := make([]shrinkHeap, nt)
	push := func(i int) {
		stamp[i]++
		if sh, ok := e.bestShrink(s, i); ok {
			sh.stamp = stamp[i]
			donors[s.typ[i]].push(sh)
		}
	}
	for pass := 0; pass < maxPasses; pass++ {
		changed := false
		for t := range donors {
			donors[t] = donors[t][:0]
		}
		for i := range e.jobs {
			if sh, ok := e.bestShrink(s, i); ok {
				sh.stamp = stamp[i]
				donors[s.typ[i]] = append(donors[s.typ[i]], sh)
			}
		}
		for t := range donors {
			donors[t].init()
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
		if !e.fast && e.switchPass(s) {
			changed = true
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
func (e *Search) tryTransfer(s *state, m move, h *shrinkHeap, stamp []int, push func(int)) bool {
	r, t := m.job, m.t
	jr := &e.jobs[r]
	before := e.jobUtil(s, r)
	tol := 1e-12 * (1 + math.Abs(before))
	oldT := s.typ[r]
	if n, ok := e.probe(s, r, t, m.c); ok {
		g := jr.w*e.util(e.value(jr, t, n, m.c)) - before
		if g > tol {
			e.apply(s, r, t, m.c)
			push(r)
			return true
		}
		if e.fast || oldT < 0 || oldT == t {
			return false
		}
		// Switching types frees devices of the old type: count what
		// handing them out gains.
		log := []undo{{r, s.typ[r], s.cnt[r], s.place[r]}}
		e.apply(s, r, t, m.c)
		if g+e.fillType(s, oldT, &log) > tol {
			for _, u := range log {
				push(u.job)
			}
			return true
		}
		e.undoAll(s, log)
		return false
	}
	// Cheap rejection: every donor device costs at least the top loss.
	for len(*h) > 0 {
		d := (*h)[0]
		if d.stamp == stamp[d.job] && s.typ[d.job] == t && s.cnt[d.job] > 0 {
			if d.job != r && d.loss >= m.gain {
				return false
			}
			break
		}
		h.pop()
	}
	gain := jr.w*e.util(e.value(jr, t, e.packedNodes(t, m.c), m.c)) - before
	log, skipped, taken := e.undoBuf[:0], e.skipBuf[:0], e.takeBuf[:0]
	defer func() { e.undoBuf, e.skipBuf, e.takeBuf = log[:0], skipped[:0], taken[:0] }()
	// The donors come out cheapest first. Most exchanges are rejected
	// after a few donors, and popping them only to push them back costs
	// more than the rest of the trial, so they are first visited in place
	// (d.walk); only a donor that may fail to move (onto another type,
	// where movesSurely cannot tell that it fits) is worth taking out of
	// h, as its failure pushes a new entry, and then every donor visited
	// so far leaves h, as if popped (d.out). Either way the donors come
	// in the same order and h ends holding the same entries: a donor left
	// in h keeps a valid entry exactly when a popped one would have been
	// pushed back.
	d := &e.donors
	d.walk.reset(*h)
	d.seen, d.out = d.seen[:0], false
	next := func() (shrink, bool) {
		if d.out {
			if len(*h) == 0 {
				return shrink{}, false
			}
			return h.pop(), true
		}
		at, ok := d.walk.next()
		if !ok {
			return shrink{}, false
		}
		d.seen = append(d.seen, (*h)[at])
		return (*h)[at], true
	}
	loss := 0.0
	done := false
	for {
		dn, ok := next()
		if !ok {
			break
		}
		if dn.stamp != stamp[dn.job] || s.typ[dn.job] != t || s.cnt[dn.job] == 0 {
			continue
		}
		if dn.job == r || !e.mayDonate(s, dn, r, t) {
			skipped = append(skipped, dn)
			continue
		}
		if dn.loss >= gain { // even one freed device costs more than the whole gain
			skipped = append(skipped, dn)
			break
		}
		if dn.t != t && !d.out {
			if e.eagerTakeOut || !e.movesSurely(s, dn.job, dn.t, dn.c) {
				d.takeOut(h)
			} else {
				e.keptIn++
			}
		}
		u0 := e.jobUtil(s, dn.job)
		old := undo{dn.job, s.typ[dn.job], s.cnt[dn.job], s.place[dn.job]}
		if !e.apply(s, dn.job, dn.t, dn.c) {
			push(dn.job)
			continue
		}
		log = append(log, old)
		taken = append(taken, dn)
		loss += u0 - e.jobUtil(s, dn.job)
		if n, ok := e.probe(s, r, t, m.c); ok {
			g := jr.w*e.util(e.value(jr, t, n, m.c)) - before
			if g-loss > tol {
				e.apply(s, r, t, m.c)
				log = append(log, undo{job: r})
				done = true
			} else if !e.fast {
				// The donors may have freed more than the receiver needs:
				// hand the surplus out and judge the exchange as a whole.
				log = append(log, undo{r, s.typ[r], s.cnt[r], s.place[r]})
				e.apply(s, r, t, m.c)
				extra := e.fillType(s, t, &log)
				if oldT >= 0 && oldT != t {
					extra += e.fillType(s, oldT, &log)
				}
				if g-loss+extra > tol {
					done = true
				}
			}
			break
		}
		if loss >= gain {
			break
		}
	}
	if d.out {
		for _, dn := range skipped {
			h.push(dn)
		}
	}
	if done {
		// The taken donors' entries, popped or left in h, go stale here.
		for _, u := range log {
			push(u.job)
		}
		return true
	}
	e.undoAll(s, log)
	if d.out {
		// The donors are as they were: their entries still hold.
		for _, dn := range taken {
			stamp[dn.job]++
			dn.stamp = stamp[dn.job]
			h.push(dn)
		}
	}
	return false
}

// movesSurely reports, leaving s as it is, that apply(s, i, t, c) moving
// running job i onto c devices of another type t cannot fail: the group
// caps allow it and pack finds room on t, which taking i off the bins of
// its own type does not change (a bin of t with c free devices, or c free
// devices on the bins of t a gang may spread over, as countNew counts
// them). False says only that it may fail.
func (e *Search) movesSurely(s *state, i, t, c int) bool {
	if s.cnt[i] <= 0 || s.typ[i] == t || c <= 0 || c > s.free[t] || !e.capOK(s, i, t, c) {
		return false
	}
	if dmax := e.lay.maxCap[t]; c <= dmax {
		for f := c; f <= dmax; f++ {
			if len(s.bucket[t][2*f]) > 0 || len(s.bucket[t][2*f+1]) > 0 {
				return true
			}
		}
	}
	_, ok := e.countNew(s, t, c, nil)
	return ok
}

// donorVisit is tryTransfer's scratch for visiting donors in place.
type donorVisit struct {
	walk heapWalk
	seen []shrink // the entries visited so far, in order
	out  bool     // seen was taken out of the heap: pop from now on
}

// takeOut removes the visited entries from h, as popping them would
// have: they are its smallest, so they come out first, but an entry
// tying with one of them (same job and loss, another stamp) may come out
// before it and is put back. An entry is named by job and stamp.
func (d *donorVisit) takeOut(h *shrinkHeap) {
	left := len(d.seen)
	var back []shrink
	for left > 0 {
		x := h.pop()
		if slices.ContainsFunc(d.seen, func(y shrink) bool { return y.job == x.job && y.stamp == x.stamp }) {
			left--
		} else {
			back = append(back, x)
		}
	}
	for _, x := range back {
		h.push(x)
	}
	d.out = true
}

// switchPass moves running jobs onto free devices of another type when
// the devices they leave, handed out to others, gain more than the move
// costs the job itself (a move the per-job gains of the exchange search
// cannot see). It reports whether anything moved.
func (e *Search) switchPass(s *state) bool {
	moved := false
	for r := range e.jobs {
		jr := &e.jobs[r]
		oldT := s.typ[r]
		if jr.pinned || oldT < 0 {
			continue
		}
		before := e.jobUtil(s, r)
		for _, t := range jr.allowed {
			if t == oldT || s.free[t] < jr.min {
				continue
			}
			// The job's best allocation on the free devices of t.
			bestC, bestU := 0, 0.0
			e.candidates(s, r, false, true, t, func(t2, c int) {
				if n, ok := e.probe(s, r, t2, c); ok {
					if u := jr.w * e.util(e.value(jr, t2, n, c)); bestC == 0 || u > bestU {
						bestC, bestU = c, u
					}
				}
			})
			if bestC == 0 {
				continue
			}
			log := []undo{{r, s.typ[r], s.cnt[r], s.place[r]}}
			e.apply(s, r, t, bestC)
			gain := bestU - before + e.fillType(s, oldT, &log)
			if gain > 1e-12*(1+math.Abs(before)) {
				moved = true
				break
			}
			e.undoAll(s, log)
		}
	}
	return moved
}

// undoAll restores the logged jobs, last change first.
func (e *Search) undoAll(s *state, log []undo) {
	for k := len(log) - 1; k >= 0; k-- {
		u := log[k]
		e.release(s, u.job)
		if u.c > 0 {
			e.assign(s, u.job, u.t, u.c, u.place)
		}
	}
}

// fillType hands the free devices of type t out greedily, best utility
// gain per device first, logging every change; it returns the total gain.
func (e *Search) fillType(s *state, t int, log *[]undo) float64 {
	total := 0.0
	for s.free[t] > 0 {
		best, found := move{}, false
		for i := range e.jobs {
			if s.cnt[i] > 0 && s.typ[i] != t {
				continue
			}
			cur := e.jobUtil(s, i)
			if e.growing(s, i) { // growing on t
				e.growBest(s, i, cur, &best, &found)
				continue
			}
			e.candidates(s, i, false, true, t, func(t2, c int) {
				if g, ok := e.gainOf(s, i, t2, c, cur); ok && g > 0 && (!found || g > best.gain) {
					best, found = move{gain: g, job: i, t: t2, c: c}, true
				}
			})
		}
		if !found {
			break
		}
		i := best.job
		u0 := e.jobUtil(s, i)
		*log = append(*log, undo{i, s.typ[i], s.cnt[i], s.place[i]})
		e.apply(s, i, best.t, best.c)
		total += e.jobUtil(s, i) - u0
	}
	return total
}
