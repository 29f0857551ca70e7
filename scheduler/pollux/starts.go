package pollux

import (
	"context"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
)

// searchStarts runs the greedy fill and the exchange search on every
// start, most of a round's time. The starts are independent: each search
// reads only its own state, the read-only problem and memos of pure
// functions. So with Problem.Parallel and more than one processor, two
// searchers take the next start until none is left: e and a worker copy
// of it with its own scratch and memos on another goroutine. The results
// are those of searching one start after the other, and so is the error.
// Afterwards the worker's evaluations join e's memos.
func (e *Search) searchStarts(ctx context.Context, states []*state, maxPasses int) error {
	// errs[k]: the first bad speedup seen on start k, else what its
	// search returned. The first in start order is the error a search of
	// one start after the other returns.
	errs := make([]error, len(states))
	var next atomic.Int32
	take := func(w *Search) {
		for k := int(next.Add(1)) - 1; k < len(states); k = int(next.Add(1)) - 1 {
			seen := w.err != nil
			err := w.fill(ctx, states[k])
			if err == nil {
				err = w.improve(ctx, states[k], maxPasses)
			}
			if !seen && w.err != nil {
				err = w.err
			}
			if errs[k] = err; err != nil {
				return // the later starts do not matter
			}
		}
	}
	if e.prob.Parallel && len(states) > 1 && runtime.GOMAXPROCS(0) > 1 {
		w := e.worker()
		done := make(chan struct{})
		var panicked any // a panic of the worker (a Speedup's): raised again on the caller's goroutine
		go func() {
			defer close(done)
			defer func() { panicked = recover() }()
			take(w)
		}()
		func() {
			defer func() { <-done }() // the worker ends with the search, even when take panics
			take(e)
		}()
		if panicked != nil {
			panic(panicked)
		}
		e.absorb(w)
	} else {
		take(e)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// worker returns a copy of e for searching starts on another goroutine:
// it shares e's read-only parts (problem, cluster layout, the current
// allocation, the empty state) and has its own scratch and jobs, whose
// speedup memos start as copies of those e keeps for the next search
// (Problem.Memo), empty otherwise. Its problem has no Memo, so that a bad
// speedup does not empty the shared one (absorb does).
func (e *Search) worker() *Search {
	p := *e.prob
	p.Memo = nil
	w := &Search{prob: &p, types: e.types, cap: e.cap, perNode: e.perNode, total: e.total, byID: e.byID,
		p: e.p, geo: e.geo, interference: e.interference, look: e.look, lay: e.lay, fast: e.fast,
		cur: e.cur, curOK: e.curOK, empty: e.empty, wideSlots: e.wideSlots,
		noPolishBound: e.noPolishBound, fullReplace: e.fullReplace, caps: e.caps, floors: e.floors}
	w.jobs = slices.Clone(e.jobs)
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.memo == nil {
			j.cache, j.near, j.other = make([][]float64, len(e.types)), nil, nil
			continue
		}
		// Evaluations kept from earlier searches: the worker reuses them too.
		j.cache, j.near, j.other, j.memo = cloneMemo(j.cache), cloneMemo(j.near), maps.Clone(j.other), nil
	}
	return w
}

// cloneMemo copies per-type memos.
func cloneMemo(m [][]float64) [][]float64 {
	if m == nil {
		return nil
	}
	c := make([][]float64, len(m))
	for t, v := range m {
		c[t] = slices.Clone(v)
	}
	return c
}

// absorb takes what worker w learnt into e once w is done: the speedups
// it evaluated for the jobs whose memos are kept for the next search
// (Problem.Memo), its first bad speedup when e has none, and the test
// counter.
func (e *Search) absorb(w *Search) {
	for i := range e.jobs {
		j, wj := &e.jobs[i], &w.jobs[i]
		if j.memo == nil {
			continue // e's memos end with this search
		}
		for t, v := range wj.cache {
			j.cache[t] = mergeMemo(j.cache[t], v)
		}
		if wj.near != nil {
			j.makeNear(len(e.types))
			for t, v := range wj.near {
				j.near[t] = mergeMemo(j.near[t], v)
			}
		}
		if len(wj.other) > 0 {
			j.makeOther()
			maps.Copy(j.other, wj.other)
		}
	}
	if e.err == nil && w.err != nil {
		e.err = w.err
		if e.prob.Memo != nil {
			e.prob.Memo.reset()
		}
	}
	e.shortcuts += w.shortcuts
}

// mergeMemo returns dst, grown to src's length when shorter, with src's
// known entries where dst has none (both memo the same pure function).
func mergeMemo(dst, src []float64) []float64 {
	if len(src) > len(dst) {
		dst = growMemo(dst, len(src)-1)
	}
	for c, v := range src {
		if !math.IsNaN(v) && math.IsNaN(dst[c]) {
			dst[c] = v
		}
	}
	return dst
}
