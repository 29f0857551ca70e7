package goodput

import (
	"sync"
	"sync/atomic"
)

// maxMemoReplicas bounds the memo table; larger replica counts are
// computed on every call (still without allocating).
const maxMemoReplicas = 1024

// memoChunk is how many node counts one block of a memo row holds: a
// row allocates only the blocks of the node counts asked for, and the
// usual lookup (a job on one to a few node counts per replica count)
// reads one block.
const memoChunk = 8

// planMemo memoises Model.Optimize for one model, by replica count, then
// node count. Lookups of memoised plans neither lock nor allocate; misses
// compute the plan under mu. A model whose plans stop depending on the
// node count from 2 nodes on (Params.nodeBound) keeps the plans on 1 and
// 2 nodes per replica count (pairs) and answers every larger node count
// with the one on 2; any other keeps blocks of node counts (rows).
type planMemo struct {
	mu    sync.Mutex
	rows  []atomic.Pointer[memoBlock] // by replica count: its first block
	pairs []atomic.Pointer[memoPair]  // by replica count: its plans on 1 and 2 nodes
}

// memoPair is the plans of one replica count on 1 and 2 nodes.
type memoPair [2]memoEntry

// newPlanMemo returns an empty memo for m.
func newPlanMemo(m *Model) *planMemo {
	n := min(m.MaxUsefulReplicas(), maxMemoReplicas) + 1
	if m.nodeBound() == len(memoPair{}) {
		return &planMemo{pairs: make([]atomic.Pointer[memoPair], n)}
	}
	return &planMemo{rows: make([]atomic.Pointer[memoBlock], n)}
}

// memoBlock holds the plans of memoChunk node counts from lo (a multiple
// of memoChunk plus 1) for one replica count; next is the row's next
// block (in the order they were made).
type memoBlock struct {
	lo   int
	next atomic.Pointer[memoBlock]
	e    [memoChunk]memoEntry
}

type memoEntry struct {
	ready atomic.Bool
	plan  BatchPlan
}

// plan returns m.Optimize(nodes, replicas), memoised (1 ≤ nodes ≤
// replicas); m must be the model the memo was made for.
func (p *planMemo) plan(m *Model, nodes, replicas int) BatchPlan {
	if p.pairs != nil {
		return p.pairPlan(m, min(nodes, len(memoPair{})), replicas)
	}
	if replicas >= len(p.rows) {
		return m.Optimize(nodes, replicas)
	}
	for b := p.rows[replicas].Load(); b != nil; b = b.next.Load() {
		if k := nodes - b.lo; k >= 0 && k < memoChunk {
			if en := &b.e[k]; en.ready.Load() {
				return en.plan
			}
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	lo := (nodes-1)/memoChunk*memoChunk + 1
	b, last := p.rows[replicas].Load(), (*memoBlock)(nil)
	for b != nil && b.lo != lo {
		b, last = b.next.Load(), b
	}
	if b == nil {
		b = &memoBlock{lo: lo}
		if last == nil {
			p.rows[replicas].Store(b)
		} else {
			last.next.Store(b)
		}
	}
	return b.e[nodes-lo].fill(m, nodes, replicas)
}

// pairPlan is plan for a memo of pairs (1 ≤ nodes ≤ 2).
func (p *planMemo) pairPlan(m *Model, nodes, replicas int) BatchPlan {
	if replicas >= len(p.pairs) {
		return m.Optimize(nodes, replicas)
	}
	if pr := p.pairs[replicas].Load(); pr != nil {
		if en := &pr[nodes-1]; en.ready.Load() {
			return en.plan
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.pairs[replicas].Load()
	if pr == nil {
		pr = new(memoPair)
		p.pairs[replicas].Store(pr)
	}
	return pr[nodes-1].fill(m, nodes, replicas)
}

// fill returns the entry's plan, m.Optimize(nodes, replicas), computing
// it first if it is not ready (under planMemo.mu).
func (en *memoEntry) fill(m *Model, nodes, replicas int) BatchPlan {
	if !en.ready.Load() {
		en.plan = m.Optimize(nodes, replicas)
		en.ready.Store(true)
	}
	return en.plan
}

// DefaultPlanCacheModels is NewPlanCache's default bound.
const DefaultPlanCacheModels = 4096

// PlanCache lets curves built from equal models share their memoised
// batch plans (Model.Optimize results), so that a host that builds many
// curves from recurring models (a simulator whose jobs of one application
// learn the same models, or a job whose exploration bound grows while its
// model stays the same) optimises each (model, nodes, replicas) once. Pass
// it in CurveOptions or EstimatorConfig. Models that compare equal give
// the same plans: validated models hold no NaN, and the sign of a zero
// coefficient does not change Optimize's result.
//
// It keeps the plans of the models used most recently: at least the last
// NewPlanCache's bound of them, at most twice as many. A PlanCache is safe for
// concurrent use; the zero value is not usable (nil is: no sharing).
type PlanCache struct {
	mu       sync.Mutex
	limit    int
	cur, old map[Model]*planMemo
}

// NewPlanCache returns an empty cache bounded by models (0 =
// DefaultPlanCacheModels).
func NewPlanCache(models int) *PlanCache {
	if models <= 0 {
		models = DefaultPlanCacheModels
	}
	return &PlanCache{limit: models, cur: make(map[Model]*planMemo)}
}

// memo returns the shared memo of m (a fresh one on a nil cache). Once
// the current generation holds limit models it becomes the old one, whose
// memos move back to the current generation when used again and are
// dropped with it otherwise.
func (pc *PlanCache) memo(m Model) *planMemo {
	if pc == nil {
		return newPlanMemo(&m)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if p, ok := pc.cur[m]; ok {
		return p
	}
	if len(pc.cur) >= pc.limit {
		pc.old, pc.cur = pc.cur, make(map[Model]*planMemo, pc.limit)
	}
	p, ok := pc.old[m]
	if ok {
		delete(pc.old, m)
	} else {
		p = newPlanMemo(&m)
	}
	pc.cur[m] = p
	return p
}
