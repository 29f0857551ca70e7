package pollux

import (
	"context"
	"runtime"
	"sync/atomic"
)

// searchStarts runs the greedy fill and the exchange search on every
// start, most of a round's time. The starts are independent: each search
// reads only its own state, the read-only problem and memos of pure
// functions. So with Problem.Parallel and more than one processor, two
// searchers take the next start until none is left: e and a worker copy
// of it with its own scratch on another goroutine, sharing the jobs and
// their speedup memos. The results are those of searching one start
// after the other, and so is the error.
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
// it shares e's read-only parts (problem, jobs, cluster layout, the
// current allocation, the empty state) and the jobs' speedup memos, which
// are safe for concurrent use, and has its own scratch. Its problem has
// no Memo, so that a bad speedup does not empty the Memo while e searches
// (absorb does).
func (e *Search) worker() *Search {
	p := *e.prob
	p.Memo = nil
	return &Search{prob: &p, types: e.types, cap: e.cap, perNode: e.perNode, total: e.total, byID: e.byID,
		p: e.p, geo: e.geo, interference: e.interference, jobs: e.jobs, look: e.look, lay: e.lay, fast: e.fast,
		cur: e.cur, curOK: e.curOK, empty: e.empty, wideSlots: e.wideSlots, plainGrow: e.plainGrow,
		noPolishBound: e.noPolishBound, fullReplace: e.fullReplace, eagerTakeOut: e.eagerTakeOut, caps: e.caps, floors: e.floors}
}

// absorb takes what worker w learnt into e once w is done: its first bad
// speedup when e has none (emptying the Memo), and the test counter. The
// speedups it evaluated are in the memos they share.
func (e *Search) absorb(w *Search) {
	if e.err == nil && w.err != nil {
		e.err = w.err
		if e.prob.Memo != nil {
			e.prob.Memo.reset()
		}
	}
	e.shortcuts += w.shortcuts
	e.keptIn += w.keptIn
}
