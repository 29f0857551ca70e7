package pollux

import (
	"math"
	"slices"
)

// polishJobs is the most jobs for which the search ends with a polish on
// replayed placements (its cost grows with the square of the jobs).
const polishJobs = 48

// polishEvals bounds the replays of one polish on a cluster of at most
// polishBins bins (node × type); a replay costs O(bins), so larger
// clusters get a proportionally smaller budget (see polishBudget).
const (
	polishEvals = 3000
	polishBins  = 64
)

// polishBudget is the replay budget of one polish on a cluster of bins
// bins: polishEvals up to polishBins bins, then scaled down so that a
// polish costs about the same whatever the cluster's size (at least 100
// replays).
func polishBudget(bins int) int {
	if bins <= polishBins {
		return polishEvals
	}
	return max(100, polishEvals*polishBins/bins)
}

// replay lays out a (type, count) per job the way a placement round does:
// pinned and unchanged jobs keep their devices, jobs shrink in place, grow
// next to their devices (largest target first), then new and moved jobs
// are packed, largest first. A target that does not fit leaves a running
// job where it was and a new job waiting. With vacate, a job that shrinks
// across several nodes instead leaves its fullest nodes, keeps its
// devices on the others and tops up on free fragments: it pays the
// restart either way, and whole nodes come free for other gangs.
func (e *Search) replay(typ, cnt []int, vacate bool) *state {
	return e.replayInto(e.emptyState(), typ, cnt, vacate)
}

// replayInto is replay on s, which it first resets to the empty state
// (reusing s's storage).
func (e *Search) replayInto(s *state, typ, cnt []int, vacate bool) *state {
	e.emptyBase().copyTo(s)
	for i := range e.jobs {
		j := &e.jobs[i]
		switch {
		case j.pinned:
			e.assign(s, i, j.CurrentType, len(j.Current), e.cur[i])
		case cnt[i] > 0 && e.curOK[i] && typ[i] == j.t0:
			e.assign(s, i, j.t0, j.c0, e.cur[i])
		}
	}
	for i := range e.jobs {
		if !e.jobs[i].pinned && s.cnt[i] > cnt[i] {
			if !vacate || cnt[i] == 0 || !e.vacate(s, i, cnt[i]) {
				e.apply(s, i, typ[i], cnt[i])
			}
		}
	}
	var grow, fresh []int
	for i := range e.jobs {
		switch {
		case e.jobs[i].pinned || cnt[i] == 0:
		case s.cnt[i] > 0 && cnt[i] > s.cnt[i]:
			grow = append(grow, i)
		case s.cnt[i] == 0:
			fresh = append(fresh, i)
		}
	}
	bySize := func(a, b int) int {
		if cnt[a] != cnt[b] {
			return cnt[b] - cnt[a]
		}
		return a - b
	}
	slices.SortStableFunc(grow, bySize)
	slices.SortStableFunc(fresh, bySize)
	for _, i := range grow {
		e.apply(s, i, typ[i], cnt[i])
	}
	for _, i := range fresh {
		e.apply(s, i, typ[i], cnt[i])
	}
	for i := range e.jobs {
		// A job left outside its bounds by a failed grow stops.
		if j := &e.jobs[i]; !j.pinned && s.cnt[i] > 0 && (s.cnt[i] < j.min || s.cnt[i] > j.max) {
			e.release(s, i)
		}
	}
	e.trimCaps(s) // a job put back on its current devices may overrun its group's cap
	return s
}

// vacate shrinks running job i to c devices on its type by keeping its
// smallest bins (as many whole bins as fit in c) and packing the rest on
// free fragments. It reports false, leaving s unchanged, when the job
// spans one bin, when it would keep every bin or none, or when the rest
// does not fit.
func (e *Search) vacate(s *state, i, c int) bool {
	t, old := s.typ[i], s.place[i]
	if len(old) < 2 {
		return false
	}
	p := slices.Clone(old)
	slices.SortStableFunc(p, func(a, b slot) int { return a.k - b.k })
	var keep []slot
	n := 0
	for _, sl := range p {
		if n+sl.k > c {
			break
		}
		keep = append(keep, sl)
		n += sl.k
	}
	if n == 0 || len(keep) == len(p) {
		return false
	}
	e.release(s, i)
	if n < c {
		extra := e.pack(s, t, c-n, keep)
		if extra == nil {
			e.assign(s, i, t, len(old), old)
			return false
		}
		keep = append(keep, extra...)
	}
	e.assign(s, i, t, c, keep)
	return true
}

// polish is a first-improvement local search over the jobs' (type, count)
// judged on replayed placements, so that node counts are the ones a
// placement round gives: it moves 1 to look-ahead devices between two
// jobs of a type (a job may start or leave for it), and changes single
// jobs' counts or types. It returns the best replayed state (or s when
// nothing beats it).
func (e *Search) polish(s *state) *state {
	typ, cnt := slices.Clone(s.typ), slices.Clone(s.cnt)
	best := e.replay(typ, cnt, false)
	bestObj := e.objective(best)
	// Scratch states for the replays of one try; one that wins becomes
	// best and is replaced. Most tries lose, so most replays allocate
	// nothing beyond their gangs' slots.
	scratch := [2]*state{e.emptyState(), e.emptyState()}
	budget := polishBudget(len(e.lay.binCap))
	// With caps, a replay may trim jobs below their targets, which the
	// bound does not cover: every try is replayed.
	var bound *polishBound
	if e.caps == nil && !e.noPolishBound {
		bound = e.newPolishBound(best, typ, cnt)
	}
	evals := 0
	try := func() bool {
		evals++
		// A try whose bound cannot beat the best is rejected unreplayed:
		// the same decision a replay would reach, at a fraction of its
		// cost (most tries lose). It still counts against the budget, so
		// that the search is the one it would be without the bound.
		if bound != nil && bound.rejects(typ, cnt, bestObj) {
			return false
		}
		// Both ways of shrinking multi-node jobs (when one does); the
		// first wins ties.
		modes := [2]bool{false, true}
		n := 1
		for i := range e.jobs {
			if j := &e.jobs[i]; !j.pinned && e.curOK[i] && len(e.cur[i]) > 1 && typ[i] == j.t0 && cnt[i] > 0 && cnt[i] < j.c0 {
				n = 2
				break
			}
		}
		w := -1
		o := math.Inf(-1)
		for k, v := range modes[:n] {
			ri := e.replayInto(scratch[k], typ, cnt, v)
			if oi := e.objective(ri); oi > o {
				w, o = k, oi
			}
		}
		if o > bestObj+1e-12*(1+math.Abs(bestObj)) {
			// The old best is not reused: candidates may still be
			// enumerating from it.
			best, scratch[w], bestObj = scratch[w], e.emptyState(), o
			copy(typ, best.typ)
			copy(cnt, best.cnt)
			if bound != nil {
				bound.rebase(typ, cnt)
			}
			return true
		}
		return false
	}
	for sweep := 0; sweep < 3 && evals < budget; sweep++ {
		improved := false
		for a := range e.jobs {
			ja := &e.jobs[a]
			if ja.pinned {
				continue
			}
			// Single-job changes: other counts on its type, other types.
			ta, ca := typ[a], cnt[a]
			e.candidates(best, a, false, false, -1, func(t, c int) {
				if evals >= budget {
					return
				}
				typ[a], cnt[a] = t, c
				if try() {
					improved = true
					ta, ca = typ[a], cnt[a]
				} else {
					typ[a], cnt[a] = ta, ca
				}
			})
			// Pair moves: a gives k devices of its type to b.
			if cnt[a] == 0 {
				continue
			}
			t := typ[a]
			for b := range e.jobs {
				jb := &e.jobs[b]
				if b == a || jb.pinned || !slices.Contains(jb.allowed, t) || evals >= budget {
					continue
				}
				for k := 1; k <= e.look[t] && evals < budget; k++ {
					ta, ca, tb, cb := typ[a], cnt[a], typ[b], cnt[b]
					na := ca - k
					if na < ja.min || ja.rigid {
						na = 0
					}
					nb := k
					if tb == t {
						nb = cb + k
					}
					if nb < jb.min || nb > e.maxOn(jb, t) || (jb.rigid && nb != jb.min) || na == ca {
						continue
					}
					typ[a], cnt[a], typ[b], cnt[b] = t, na, t, nb
					if na == 0 {
						typ[a] = -1
					}
					if try() {
						improved = true
						break
					}
					typ[a], cnt[a], typ[b], cnt[b] = ta, ca, tb, cb
				}
			}
		}
		// Restore moves: a job goes back to what it runs now (no restart),
		// taking devices from changed jobs first, then from the largest.
		for b := range e.jobs {
			jb := &e.jobs[b]
			if jb.pinned || !e.curOK[b] || (typ[b] == jb.t0 && cnt[b] == jb.c0) || evals >= budget {
				continue
			}
			t := jb.t0
			save := [2][]int{slices.Clone(typ), slices.Clone(cnt)}
			need := jb.c0
			if typ[b] == t {
				need -= cnt[b]
			}
			var donors []int
			for a := range e.jobs {
				if a != b && !e.jobs[a].pinned && typ[a] == t && cnt[a] > 0 {
					donors = append(donors, a)
				}
			}
			same := func(a int) bool { return typ[a] == e.jobs[a].t0 && cnt[a] == e.jobs[a].c0 }
			slices.SortStableFunc(donors, func(x, y int) int {
				if same(x) != same(y) {
					if same(x) {
						return 1
					}
					return -1
				}
				return (cnt[y] - e.jobs[y].min) - (cnt[x] - e.jobs[x].min)
			})
			free := e.cap[t]
			for a := range e.jobs {
				if typ[a] == t {
					free -= cnt[a]
				}
			}
			need -= max(free, 0)
			for _, a := range donors {
				if need <= 0 {
					break
				}
				give := min(need, cnt[a]-e.jobs[a].min)
				if e.jobs[a].rigid {
					give = 0
				}
				if give <= 0 {
					continue
				}
				cnt[a] -= give
				need -= give
			}
			if need > 0 {
				copy(typ, save[0])
				copy(cnt, save[1])
				continue
			}
			typ[b], cnt[b] = t, jb.c0
			if try() {
				improved = true
			} else {
				copy(typ, save[0])
				copy(cnt, save[1])
			}
		}
		if !improved {
			break
		}
	}
	return best
}

// polishBound bounds from above the objective a replay of targets
// (typ, cnt) can reach, job by job: a pinned job's term is fixed; a job
// without devices contributes u(0); any other job ends on its target at
// some node count between the packed one and one bin per device, or, when
// it runs on the target's type now and its resize fails, where it runs
// now, or with nothing; its term is at most the best of those (u is
// increasing). The bound of a try is kept as a difference from the
// targets the best replay came from, so that a try costs a look at the
// jobs it changed.
type polishBound struct {
	e        *Search
	pinned   []float64 // per job: a pinned job's term (any replay's)
	typ, cnt []int     // the base targets
	terms    []float64 // per job: its bound at the base targets
	sum, abs float64   // Σ terms and Σ |terms|
	// memo[i*types+t][c] is term(i, t, c) once computed (NaN before).
	memo [][]float64
}

func (e *Search) newPolishBound(best *state, typ, cnt []int) *polishBound {
	b := &polishBound{e: e, pinned: make([]float64, len(e.jobs)), memo: make([][]float64, len(e.jobs)*len(e.types)),
		typ: make([]int, len(typ)), cnt: make([]int, len(cnt)), terms: make([]float64, len(typ))}
	for i := range e.jobs {
		if e.jobs[i].pinned {
			b.pinned[i] = e.jobUtil(best, i)
		}
	}
	b.rebase(typ, cnt)
	return b
}

// rebase makes (typ, cnt) the base targets.
func (b *polishBound) rebase(typ, cnt []int) {
	copy(b.typ, typ)
	copy(b.cnt, cnt)
	b.sum, b.abs = 0, 0
	for i := range typ {
		b.terms[i] = b.term(i, typ[i], cnt[i])
		b.sum += b.terms[i]
		b.abs += math.Abs(b.terms[i])
	}
}

// term is the bound on job i's term of the objective when its target is
// c devices of type t.
func (b *polishBound) term(i, t, c int) float64 {
	e := b.e
	j := &e.jobs[i]
	switch {
	case j.pinned:
		return b.pinned[i]
	case c <= 0 || t < 0:
		return j.w * e.util(0)
	}
	m := b.memo[i*len(e.types)+t]
	if c >= len(m) {
		m = growMemo(m, c)
		b.memo[i*len(e.types)+t] = m
	}
	if v := m[c]; !math.IsNaN(v) {
		return v
	}
	best := 0.0
	lo := (c + e.lay.maxCap[t] - 1) / max(e.lay.maxCap[t], 1)
	for n := lo; n <= min(c, len(e.lay.binsOf[t])); n++ {
		best = max(best, e.value(j, t, n, c))
	}
	if e.curOK[i] && t == j.t0 {
		best = max(best, e.value(j, j.t0, len(e.cur[i]), j.c0))
	}
	v := j.w * e.util(best)
	m[c] = v
	return v
}

// rejects reports whether no replay of (typ, cnt) can beat bestObj by
// polish's margin: its bound, with a margin for the rounding of the sums,
// is at most the threshold.
func (b *polishBound) rejects(typ, cnt []int, bestObj float64) bool {
	ub, abs := b.sum, b.abs
	for i := range typ {
		if typ[i] != b.typ[i] || cnt[i] != b.cnt[i] {
			v := b.term(i, typ[i], cnt[i])
			ub += v - b.terms[i]
			abs += math.Abs(v)
		}
	}
	return ub+1e-9*(1+abs) <= bestObj+1e-12*(1+math.Abs(bestObj))
}

// copyTo makes d a copy of s, reusing d's storage. A job's slot list is
// never modified in place (moves build new ones), so d shares them; the
// wide jobs' aggregates are rebuilt on use.
func (s *state) copyTo(d *state) {
	d.wide = nil
	d.typ = append(d.typ[:0], s.typ...)
	d.cnt = append(d.cnt[:0], s.cnt...)
	d.place = append(d.place[:0], s.place...)
	d.free = append(d.free[:0], s.free...)
	d.bfree = append(d.bfree[:0], s.bfree...)
	d.bdist = append(d.bdist[:0], s.bdist...)
	d.pos = append(d.pos[:0], s.pos...)
	if s.gused != nil {
		d.gused = append(d.gused[:0], s.gused...)
	}
	if len(d.bucket) != len(s.bucket) {
		d.bucket = make([][][]int, len(s.bucket))
	}
	for t, bs := range s.bucket {
		if len(d.bucket[t]) != len(bs) {
			d.bucket[t] = make([][]int, len(bs))
		}
		for k, b := range bs {
			d.bucket[t][k] = append(d.bucket[t][k][:0], b...)
		}
	}
}

// growMemo returns memo, a per-count memo with NaN for unknown entries,
// grown to hold count c.
func growMemo(memo []float64, c int) []float64 {
	grown := make([]float64, max(2*len(memo), c+1, 16))
	copy(grown, memo)
	for i := len(memo); i < len(grown); i++ {
		grown[i] = math.NaN()
	}
	return grown
}
