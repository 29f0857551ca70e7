package pollux

import (
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/goodsched/goodsched/accel"
)

// Memo carries speedup evaluations from one Search to the next, so that
// a host that schedules round after round evaluates each job's speedup
// on an allocation once while the job's Speedup stays the same. A job's
// evaluations are reused when it has the same ID and an equal non-nil
// Job.Reuse, and the cluster has the same device types with the same
// per-node counts. A Memo keeps the evaluations of the last search's
// jobs only; it must not be used by two searches at once, and it is
// emptied when a search sees a bad speedup. The zero value is an empty
// Memo.
type Memo struct {
	types   []accel.TypeKey
	perNode []int
	jobs    map[string]*jobMemo
}

// jobMemo is one job's evaluations in a Memo.
type jobMemo struct {
	reuse  any
	speeds *speeds
}

// attach gives the search's jobs the evaluations m holds for them and
// makes m hold this search's jobs (and only those) from now on. It
// returns, per job, its entry in m when that has no evaluations yet (the
// job is new to m): makeSpeeds gives it the job's.
func (m *Memo) attach(e *Search) []*jobMemo {
	old := m.jobs
	if !slices.Equal(m.types, e.types) || !slices.Equal(m.perNode, e.perNode) {
		old = nil
	}
	m.types, m.perNode = slices.Clone(e.types), slices.Clone(e.perNode)
	m.jobs = make(map[string]*jobMemo, len(e.jobs))
	fresh := make([]*jobMemo, len(e.jobs))
	for i := range e.jobs {
		j := &e.jobs[i]
		if j.Reuse == nil {
			continue
		}
		jm := old[j.ID]
		if jm == nil || jm.reuse != j.Reuse {
			jm = &jobMemo{reuse: j.Reuse}
			fresh[i] = jm
		} else {
			jm.speeds = jm.speeds.resized(j.max)
			j.setSpeeds(jm.speeds)
		}
		m.jobs[j.ID] = jm
	}
	return fresh
}

// makeSpeeds gives every job without evaluations an empty memo, all of
// them cut from three allocations, and fresh[i] (when set) job i's.
func (e *Search) makeSpeeds(fresh []*jobMemo) {
	nt := len(e.types)
	n, slots := 0, 0
	for i := range e.jobs {
		if e.jobs[i].speeds == nil {
			n++
			slots += nt * memoStride(e.jobs[i].max)
		}
	}
	sps, packed, rows := make([]speeds, n), make([]atomic.Uint64, slots), make([]row, 2*nt*n)
	for i := range e.jobs {
		j := &e.jobs[i]
		if j.speeds != nil {
			continue
		}
		sp := &sps[0]
		sp.stride = memoStride(j.max)
		sp.packed, packed = packed[:nt*sp.stride:nt*sp.stride], packed[nt*sp.stride:]
		sp.over, sp.near, rows = rows[:nt:nt], rows[nt:2*nt:2*nt], rows[2*nt:]
		j.setSpeeds(sp)
		sps = sps[1:]
		if fresh != nil && fresh[i] != nil {
			fresh[i].speeds = sp
		}
	}
}

// reset empties m.
func (m *Memo) reset() { *m = Memo{} }

// memoCounts bounds the counts a job's speeds keeps in its fixed part:
// larger counts go to rows that grow.
const memoCounts = 64

// speeds memoises one job's raw speedups, Job.Speedup(t, n, c). On the
// packed node count n: by type and count, counts below stride in a fixed
// array (packed), larger ones in a row per type (over, from stride on);
// on a few nodes more, a row per type (near: nearNodes entries per
// count); any other (t, n, c) in a map. The searchers of one round share
// it (Problem.Parallel): entries are read and written atomically (^bits
// of the value, 0 = unknown), and as every entry holds the value of the
// same pure function, which searcher writes it does not matter.
type speeds struct {
	stride int
	packed []atomic.Uint64
	over   []row
	near   []row
	mu     sync.Mutex // guards other
	other  map[[3]int]float64
}

// memoStride is how many counts, 0 included, the fixed part of the memo
// of a job of at most maxCount devices holds per type.
func memoStride(maxCount int) int { return min(maxCount, memoCounts) + 1 }

// newSpeeds returns an empty memo for a job of at most maxCount devices
// on nt device types.
func newSpeeds(nt, maxCount int) *speeds {
	stride := memoStride(maxCount)
	return &speeds{stride: stride, packed: make([]atomic.Uint64, nt*stride), over: make([]row, nt), near: make([]row, nt)}
}

// resized returns sp for a job of at most maxCount devices: sp itself
// when its fixed part is sized for that, else a copy.
func (sp *speeds) resized(maxCount int) *speeds {
	if memoStride(maxCount) == sp.stride {
		return sp
	}
	nt := len(sp.near)
	c := newSpeeds(nt, maxCount)
	for t := range nt {
		for k := range sp.stride {
			if b := sp.packed[t*sp.stride+k].Load(); b != 0 {
				c.putPacked(t, k, b)
			}
		}
		if p := sp.over[t].p.Load(); p != nil {
			for x := range *p {
				if b := (*p)[x].Load(); b != 0 {
					c.putPacked(t, sp.stride+x, b)
				}
			}
		}
		c.near[t].p.Store(sp.near[t].p.Load())
	}
	c.other = maps.Clone(sp.other)
	return c
}

// memoised returns job j's raw speedup on (t, n, c), d nodes more than
// the packed count, if its memo holds it (memoAt gives n and d).
func (j *gjob) memoised(t, n, d, c int) (float64, bool) {
	sp := j.speeds
	if d < 0 || d > nearNodes {
		return sp.getOther([3]int{t, n, c})
	}
	var b uint64
	switch {
	case d == 0 && c < sp.stride:
		b = j.packed[t*sp.stride+c].Load()
	case d == 0:
		b = sp.over[t].get(c - sp.stride)
	default: // a few nodes more than packed: a job grown across bins
		b = sp.near[t].get(nearNodes*c + d - 1)
	}
	return known(b)
}

// put records raw speedup v on (t, n, c), d nodes more than the packed
// count.
func (sp *speeds) put(t, n, d, c int, v float64) {
	switch b := encode(v); {
	case d < 0 || d > nearNodes:
		sp.putOther([3]int{t, n, c}, v)
	case d > 0:
		sp.near[t].put(nearNodes*c+d-1, b)
	default:
		sp.putPacked(t, c, b)
	}
}

// putPacked records entry b for count k on the packed node count of
// type t.
func (sp *speeds) putPacked(t, k int, b uint64) {
	if k < sp.stride {
		sp.packed[t*sp.stride+k].Store(b)
	} else {
		sp.over[t].put(k-sp.stride, b)
	}
}

// row is a memo row that grows by copying it and swapping the copy in.
// Readers load it without locking; writers take mu, so that no entry is
// written to a row while it is being copied (such an entry would be lost,
// and evaluated again by the next search that shares the memo).
type row struct {
	p  atomic.Pointer[[]atomic.Uint64]
	mu sync.Mutex
}

// get returns entry x (0 = unknown).
func (r *row) get(x int) uint64 {
	if p := r.p.Load(); p != nil && x < len(*p) {
		return (*p)[x].Load()
	}
	return 0
}

// put records entry x, growing the row to hold it.
func (r *row) put(x int, b uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.p.Load()
	if p != nil && x < len(*p) {
		(*p)[x].Store(b)
		return
	}
	n := 0
	if p != nil {
		n = len(*p)
	}
	grown := make([]atomic.Uint64, max(2*n, x+1, 16))
	for k := range n {
		grown[k].Store((*p)[k].Load())
	}
	grown[x].Store(b)
	r.p.Store(&grown)
}

// known decodes an entry: its value, and false for 0 (unknown).
func known(b uint64) (float64, bool) { return math.Float64frombits(^b), b != 0 }

// encode is known's inverse.
func encode(v float64) uint64 { return ^math.Float64bits(v) }

// getOther and putOther read and write the map.
func (sp *speeds) getOther(k [3]int) (float64, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	v, ok := sp.other[k]
	return v, ok
}

func (sp *speeds) putOther(k [3]int, v float64) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.other == nil {
		sp.other = make(map[[3]int]float64)
	}
	sp.other[k] = v
}
