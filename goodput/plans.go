package goodput

import (
	"sync"
	"sync/atomic"
)

// maxMemoReplicas bounds the memo table; larger replica counts are
// computed on every call (still without allocating).
const maxMemoReplicas = 1024

// memoChunk is how many node counts one block of a memo row holds: a row
// allocates only the blocks of the node counts asked for, and the usual
// lookup (a job on one to a few nodes) reads one block.
const memoChunk = 8

// planMemo memoises Model.Optimize for one model, by replica count, then
// node count. Lookups of memoised plans neither lock nor allocate; misses
// compute the plan under mu.
type planMemo struct {
	mu   sync.Mutex
	rows atomic.Pointer[memoTable]
}

// memoTable is the published row table of a planMemo, indexed by replica
// count. A table is never resized in place: a larger one replaces it,
// with the same rows.
type memoTable struct {
	rows []atomic.Pointer[memoRow]
}

// memoRow is the memo of one replica count: blocks of memoChunk node
// counts, allocated on first use.
type memoRow struct {
	blocks []atomic.Pointer[[memoChunk]memoEntry]
}

type memoEntry struct {
	ready atomic.Bool
	plan  BatchPlan
}

// plan returns m.Optimize(nodes, replicas), memoised (1 ≤ nodes ≤
// replicas); m must be the model the memo is for.
func (p *planMemo) plan(m *Model, nodes, replicas int) BatchPlan {
	if replicas > maxMemoReplicas {
		return m.Optimize(nodes, replicas)
	}
	if t := p.rows.Load(); t != nil && replicas < len(t.rows) {
		if r := t.rows[replicas].Load(); r != nil {
			if b := r.blocks[nodes/memoChunk].Load(); b != nil {
				if en := &b[nodes%memoChunk]; en.ready.Load() {
					return en.plan
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.rows.Load()
	if t == nil || replicas >= len(t.rows) {
		n := max(replicas+1, 2*len(tableRows(t)))
		g := &memoTable{rows: make([]atomic.Pointer[memoRow], min(n, maxMemoReplicas+1))}
		for i := range tableRows(t) {
			g.rows[i].Store(t.rows[i].Load())
		}
		p.rows.Store(g)
		t = g
	}
	r := t.rows[replicas].Load()
	if r == nil {
		r = &memoRow{blocks: make([]atomic.Pointer[[memoChunk]memoEntry], replicas/memoChunk+1)}
		t.rows[replicas].Store(r)
	}
	b := r.blocks[nodes/memoChunk].Load()
	if b == nil {
		b = new([memoChunk]memoEntry)
		r.blocks[nodes/memoChunk].Store(b)
	}
	en := &b[nodes%memoChunk]
	if !en.ready.Load() {
		en.plan = m.Optimize(nodes, replicas)
		en.ready.Store(true)
	}
	return en.plan
}

// tableRows is t's rows, nil for a nil table.
func tableRows(t *memoTable) []atomic.Pointer[memoRow] {
	if t == nil {
		return nil
	}
	return t.rows
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
// It keeps the plans of the models used most recently: those of between
// models and twice models models in all. A PlanCache is safe for
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
		return new(planMemo)
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
		p = new(planMemo)
	}
	pc.cur[m] = p
	return p
}
