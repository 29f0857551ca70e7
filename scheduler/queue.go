package scheduler

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// Queue is a node of the quota tree that tenants share the cluster by, as
// in Kueue (ClusterQueues in cohorts) and KAI-Scheduler (hierarchical
// queues). A queue without children is a leaf: jobs name it in Job.Queue
// (jobs may sit in leaves only, so that a cohort's capacity is exactly
// what its members are guaranteed and borrow). A queue with children is a
// cohort: its members lend each other what they do not use, and the
// cohort as a whole borrows from its own siblings. Roots (Parent "") are
// the members of one implicit top cohort, the cluster itself.
//
// Per accelerator type, each round, a queue is entitled to (the package
// documentation, "Queues and quotas", has the exact rule): its guaranteed
// quota (Nominal, or its demand when that is smaller), then a weighted
// share of what its siblings leave over, up to its BorrowingLimit beyond
// Nominal; what it does not use of its Nominal is lent to its siblings,
// up to its LendingLimit.
type Queue struct {
	// Name identifies the queue; unique and non-empty.
	Name string `json:"name"`
	// Parent is the cohort (another Queue's Name) this queue belongs to;
	// "" = a root. Cohorts nest as deep as users need; cycles are an
	// error.
	Parent string `json:"parent,omitempty"`
	// Weight is the queue's share, among its siblings, of the capacity
	// left over once every sibling has its guarantee; 0 = 1, negative,
	// NaN or ±Inf is an error.
	Weight float64 `json:"weight,omitempty"`
	// Quotas are per accelerator type, at most one per type. A type not
	// listed has Nominal 0 and no limits for a leaf; for a cohort it has
	// the sum of its children's Nominal quotas of that type (a cohort
	// that lists a type must list at least that sum). A type the cluster
	// lacks is allowed and ignored.
	Quotas []Quota `json:"quotas,omitempty"`
}

// Quota is one queue's quota of one accelerator type.
type Quota struct {
	// Type is the accelerator type the quota counts devices of.
	Type accel.TypeKey `json:"type"`
	// Nominal is the number of devices of Type guaranteed to the queue
	// while it has demand for them (≥ 0).
	Nominal int `json:"nominal"`
	// BorrowingLimit is the most devices beyond Nominal the queue may
	// borrow from its cohort; nil = no limit, 0 = never borrow.
	BorrowingLimit *int `json:"borrowing_limit,omitempty"`
	// LendingLimit is the most of its unused Nominal that other queues
	// may borrow; nil = all of it. Nominal − LendingLimit stays reserved
	// for the queue even when it has no demand.
	LendingLimit *int `json:"lending_limit,omitempty"`
}

// QueueUsage is one queue's standing for one accelerator type after the
// round (Plan.Queues). Cohorts report the sums over their leaves, except
// Guaranteed, which is the cohort's own (effective) Nominal.
type QueueUsage struct {
	// Queue and Type say which queue and which device type.
	Queue string        `json:"queue"`
	Type  accel.TypeKey `json:"type"`
	// Guaranteed is the queue's effective Nominal quota of Type.
	Guaranteed int `json:"guaranteed"`
	// Entitled is the most devices of Type the round let the queue's jobs
	// hold together (its entitlement: guarantee, borrowing, fair share).
	Entitled int `json:"entitled"`
	// Used is how many devices of Type its jobs hold after the round.
	Used int `json:"used"`
	// Borrowed is Used beyond Guaranteed: max(Used − Guaranteed, 0).
	Borrowed int `json:"borrowed"`
	// Lent is the part of its unused Nominal (within its LendingLimit)
	// that other queues hold after the round: min(lendable unused, what
	// the rest of its cohort borrows).
	Lent int `json:"lent"`
	// Pending is the demand (devices) not served: its demand for Type
	// (see "Queues and quotas" in the package documentation) less Used,
	// at least 0.
	Pending int `json:"pending"`
}

// queueTree is the validated quota tree of a round.
type queueTree struct {
	qs       []Queue        // as given
	byName   map[string]int // name → position in qs
	parent   []int          // −1 for roots
	children [][]int        // sorted by name
	roots    []int          // sorted by name
	leaf     []bool
	weight   []float64 // 0 read as 1
	// byName order of all queues, for reporting.
	order []int
	// jobQ: per round job (Input.Jobs order), its leaf's position.
	jobQ []int
}

// validateQueues checks the quota tree and the jobs' queues; nil when
// there are no queues.
func validateQueues(qs []Queue, jobs []Job) (*queueTree, error) {
	if len(qs) == 0 {
		for i := range jobs {
			if jobs[i].Queue != "" {
				return nil, fmt.Errorf("%w: job %q: queue %q, but Input.Queues is empty", ErrInvalid, jobs[i].ID, jobs[i].Queue)
			}
		}
		return nil, nil
	}
	t := &queueTree{qs: qs, byName: make(map[string]int, len(qs)), parent: make([]int, len(qs)),
		children: make([][]int, len(qs)), leaf: make([]bool, len(qs)), weight: make([]float64, len(qs))}
	for i := range qs {
		q := &qs[i]
		if q.Name == "" {
			return nil, fmt.Errorf("%w: queues[%d]: empty name", ErrInvalid, i)
		}
		if _, dup := t.byName[q.Name]; dup {
			return nil, fmt.Errorf("%w: queue %q: duplicate name", ErrInvalid, q.Name)
		}
		t.byName[q.Name] = i
		if w := q.Weight; math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, fmt.Errorf("%w: queue %q: weight %v", ErrInvalid, q.Name, w)
		}
		t.weight[i] = q.Weight
		if t.weight[i] == 0 {
			t.weight[i] = 1
		}
		for k, qt := range q.Quotas {
			switch {
			case qt.Type == "":
				return nil, fmt.Errorf("%w: queue %q: quotas[%d]: empty type", ErrInvalid, q.Name, k)
			case qt.Nominal < 0:
				return nil, fmt.Errorf("%w: queue %q: %s: negative nominal quota %d", ErrInvalid, q.Name, qt.Type, qt.Nominal)
			case qt.BorrowingLimit != nil && *qt.BorrowingLimit < 0:
				return nil, fmt.Errorf("%w: queue %q: %s: negative borrowing limit %d", ErrInvalid, q.Name, qt.Type, *qt.BorrowingLimit)
			case qt.LendingLimit != nil && *qt.LendingLimit < 0:
				return nil, fmt.Errorf("%w: queue %q: %s: negative lending limit %d", ErrInvalid, q.Name, qt.Type, *qt.LendingLimit)
			}
			for _, o := range q.Quotas[:k] {
				if o.Type == qt.Type {
					return nil, fmt.Errorf("%w: queue %q: two quotas for type %s", ErrInvalid, q.Name, qt.Type)
				}
			}
		}
	}
	for i := range qs {
		t.parent[i] = -1
		if p := qs[i].Parent; p != "" {
			pi, ok := t.byName[p]
			if !ok {
				return nil, fmt.Errorf("%w: queue %q: unknown parent %q", ErrInvalid, qs[i].Name, p)
			}
			t.parent[i] = pi
			t.children[pi] = append(t.children[pi], i)
		} else {
			t.roots = append(t.roots, i)
		}
	}
	// Cycles: every queue must reach a root within len(qs) steps.
	for i := range qs {
		p, steps := i, 0
		for p >= 0 {
			if steps > len(qs) {
				return nil, fmt.Errorf("%w: queue %q: its parents form a cycle", ErrInvalid, qs[i].Name)
			}
			p = t.parent[p]
			steps++
		}
	}
	byName := func(a, b int) int { return cmp.Compare(qs[a].Name, qs[b].Name) }
	for i := range qs {
		slices.SortFunc(t.children[i], byName)
		t.leaf[i] = len(t.children[i]) == 0
	}
	slices.SortFunc(t.roots, byName)
	t.order = make([]int, len(qs))
	for i := range t.order {
		t.order[i] = i
	}
	slices.SortFunc(t.order, byName)
	// A cohort that lists a type must cover its children's nominal sum.
	for _, i := range t.order {
		if t.leaf[i] {
			continue
		}
		for _, qt := range qs[i].Quotas {
			sum := 0
			for _, c := range t.children[i] {
				sum = satAdd(sum, t.nominal(c, qt.Type))
			}
			if sum > qt.Nominal {
				return nil, fmt.Errorf("%w: queue %q: %s: its children's nominal quotas sum to %d, more than its own %d", ErrInvalid, qs[i].Name, qt.Type, sum, qt.Nominal)
			}
		}
	}
	t.jobQ = make([]int, len(jobs))
	for k := range jobs {
		j := &jobs[k]
		if j.Queue == "" {
			return nil, fmt.Errorf("%w: job %q: no queue (Input.Queues is set, so every job names a leaf queue)", ErrInvalid, j.ID)
		}
		qi, ok := t.byName[j.Queue]
		if !ok {
			return nil, fmt.Errorf("%w: job %q: unknown queue %q", ErrInvalid, j.ID, j.Queue)
		}
		if !t.leaf[qi] {
			return nil, fmt.Errorf("%w: job %q: queue %q is a cohort (it has child queues); jobs sit in leaf queues", ErrInvalid, j.ID, j.Queue)
		}
		t.jobQ[k] = qi
	}
	return t, nil
}

// quota returns queue i's quota for type tk, and whether it lists one.
func (t *queueTree) quota(i int, tk accel.TypeKey) (Quota, bool) {
	for _, qt := range t.qs[i].Quotas {
		if qt.Type == tk {
			return qt, true
		}
	}
	return Quota{Type: tk}, false
}

// nominal returns queue i's effective nominal quota of tk: its own when
// listed; for a cohort that does not list tk, its children's sum.
func (t *queueTree) nominal(i int, tk accel.TypeKey) int {
	if qt, ok := t.quota(i, tk); ok || t.leaf[i] {
		return qt.Nominal
	}
	sum := 0
	for _, c := range t.children[i] {
		sum = satAdd(sum, t.nominal(c, tk))
	}
	return sum
}

// roundQuota is the quota state of one round. Per queue and type (index
// q*nt + t, t a position in Round.types): effective nominal, demand,
// pinned devices, claim (demand within the queue's limits, with its
// reserve), entitlement, and devices held when the round starts.
type roundQuota struct {
	tree    *queueTree
	nt      int
	nominal []int
	demand  []int
	pinned  []int
	claim   []int
	ent     []int
	cur     []int
	// njobs counts the jobs with demand for the type (a cohort's: its
	// leaves').
	njobs []int
	// floor is what a queue gets before any guarantee: its pinned
	// devices and its reserve (Nominal − LendingLimit), a cohort's
	// children's floors summed.
	floor []int
	// want is the leaves' demand as the jobs state it (reported as
	// Pending); demand may be lowered by relax.
	want []int
}

// newQuota computes the round's entitlements (see "Queues and quotas" in doc.go).
func (r *Round) newQuota(t *queueTree) *roundQuota {
	nt, nq := len(r.types), len(t.qs)
	q := &roundQuota{tree: t, nt: nt, nominal: make([]int, nq*nt), demand: make([]int, nq*nt), pinned: make([]int, nq*nt),
		claim: make([]int, nq*nt), ent: make([]int, nq*nt), cur: make([]int, nq*nt), floor: make([]int, nq*nt), njobs: make([]int, nq*nt)}
	for i := range nq {
		for tt, tk := range r.types {
			q.nominal[i*nt+tt] = t.nominal(i, tk)
		}
	}
	for k := range r.jobs {
		j := &r.jobs[k]
		l := t.jobQ[k] * nt
		if j.curCount > 0 {
			q.cur[l+j.curType] += j.curCount
		}
		if j.Pinned {
			q.pinned[l+j.curType] += j.curCount
			q.demand[l+j.curType] = min(q.demand[l+j.curType]+j.curCount, r.cap[j.curType])
			q.njobs[l+j.curType]++
			continue
		}
		for _, tt := range j.allowed {
			if j.Min > r.cap[tt] {
				continue // it cannot run there
			}
			q.demand[l+tt] = min(q.demand[l+tt]+min(j.Max, r.cap[tt]), r.cap[tt])
			q.njobs[l+tt]++
		}
	}
	q.compute(r)
	q.want = slices.Clone(q.demand) // the cohorts' too, now summed
	return q
}

// compute derives the claims and entitlements from the leaves' demand,
// floors (pinned) and current devices.
func (q *roundQuota) compute(r *Round) {
	t, nt := q.tree, q.nt
	// Bottom-up: cohorts' demand, floors and claims.
	var up func(i int)
	up = func(i int) {
		for _, c := range t.children[i] {
			up(c)
		}
		for tt, tk := range r.types {
			x := i*nt + tt
			eff := q.demand[x]
			if !t.leaf[i] {
				d, p, cl, cu, fl, nj := 0, 0, 0, 0, 0, 0
				for _, c := range t.children[i] {
					d += q.demand[c*nt+tt]
					p += q.pinned[c*nt+tt]
					cl += q.claim[c*nt+tt]
					cu += q.cur[c*nt+tt]
					fl += q.floor[c*nt+tt]
					nj += q.njobs[c*nt+tt]
				}
				q.njobs[x] = nj
				q.demand[x], q.pinned[x], q.cur[x], q.floor[x] = min(d, r.cap[tt]), p, cu, fl
				eff = min(cl, r.cap[tt])
			} else {
				q.floor[x] = q.pinned[x]
			}
			qt, _ := t.quota(i, tk)
			if qt.BorrowingLimit != nil {
				eff = min(eff, satAdd(q.nominal[x], *qt.BorrowingLimit))
			}
			if qt.LendingLimit != nil {
				q.floor[x] = max(q.floor[x], min(q.nominal[x]-*qt.LendingLimit, r.cap[tt]))
			}
			q.claim[x] = max(eff, q.floor[x])
		}
	}
	for _, i := range t.roots {
		up(i)
	}
	// Top-down: each cohort's devices shared among its children.
	var down func(pool int, kids []int, tt int)
	down = func(pool int, kids []int, tt int) {
		n := len(kids)
		a, g, floor, res, claim, w := make([]int, n), make([]int, n), make([]int, n), make([]int, n), make([]int, n), make([]float64, n)
		sumG, sumP := 0, 0
		for k, c := range kids {
			x := c*nt + tt
			floor[k], claim[k], w[k] = q.pinned[x], q.claim[x], t.weight[c]
			res[k] = q.floor[x]
			g[k] = max(min(q.nominal[x], q.claim[x]), res[k])
			sumG += g[k]
			sumP += floor[k]
		}
		if sumG <= pool {
			copy(a, g)
		} else {
			// Short of the guarantees: the reserves first, then the
			// guarantees, each by weighted max-min above the floors.
			copy(a, floor)
			fillByWeight(a, floor, res, w, pool-sumP)
			used := 0
			for _, v := range a {
				used += v
			}
			fillByWeight(a, floor, g, w, pool-used)
			copy(g, a)
		}
		used := 0
		for _, v := range a {
			used += v
		}
		// The rest by weight × jobs with demand: one share per job, as in
		// one shared pool, scaled by the queues' weights.
		for k, c := range kids {
			w[k] = t.weight[c] * float64(max(q.njobs[c*nt+tt], 1))
		}
		fillByWeight(a, g, claim, w, pool-used)
		for k, c := range kids {
			q.ent[c*nt+tt] = a[k]
			if !t.leaf[c] {
				down(a[k], t.children[c], tt)
			}
		}
	}
	for tt := range r.types {
		down(r.cap[tt], t.roots, tt)
	}
}

// relax returns the entitlements of a second pass when the checked
// targets tg leave devices idle that a queue held back by its
// entitlement could use; nil when they do not. Every queue keeps at least
// what tg gives it (its floor); a queue that did not use all of its
// entitlement and has no unmet demand releases the rest (its demand
// becomes what it uses), one with unmet demand keeps its guarantee; the
// idle devices no queue keeps go first to queues that shed devices they
// held, then by the same rules (guarantee, borrowing limit, reserves,
// weights) to the queues that used their whole entitlement.
func (q *roundQuota) relax(r *Round, tg []Target) *roundQuota {
	t, nt := q.tree, q.nt
	use := make([]int, len(q.ent))
	idle := slices.Clone(r.cap)
	for i := range tg {
		if tg[i].Count > 0 {
			ti, _ := r.cluster.TypeIndex(tg[i].Type)
			use[t.jobQ[i]*nt+ti] += tg[i].Count
			idle[ti] -= tg[i].Count
		}
	}
	need := false
	for l := range t.qs {
		for ti := range nt {
			x := l*nt + ti
			if t.leaf[l] && idle[ti] > 0 && use[x] >= q.ent[x] && q.demand[x] > use[x] {
				need = true
			}
		}
	}
	if !need {
		return nil
	}
	q2 := &roundQuota{tree: t, nt: nt, nominal: q.nominal, want: q.want, cur: slices.Clone(q.cur),
		demand: slices.Clone(q.demand), pinned: slices.Clone(q.pinned), claim: make([]int, len(q.ent)), ent: make([]int, len(q.ent)),
		floor: make([]int, len(q.ent)), njobs: q.njobs}
	// held: idle devices that stay with their queues: unused reserves, and
	// the guarantee still owed to a queue with unmet demand (its jobs
	// could use more than they got: it is not lent, so that the queue
	// has it the moment its policy gives it out).
	held := make([]int, nt)
	var hold func(i, ti int) (used, kept int)
	hold = func(i, ti int) (used, kept int) {
		x := i*nt + ti
		if t.leaf[i] {
			used = use[x]
			owed := max(min(q.nominal[x], q.claim[x])-used, 0)
			if used < q.ent[x] {
				if q.want[x] > used {
					kept = owed // keeps its demand: its guarantee is not lent
				} else {
					q2.demand[x] = min(q2.demand[x], used)
				}
			}
			q2.pinned[x] = max(q2.pinned[x], used)
			return used, max(kept, q.floor[x]-used)
		}
		for _, c := range t.children[i] {
			u, k := hold(c, ti)
			used += u
			kept += k
		}
		return used, max(kept, q.floor[x]-used)
	}
	for ti := range nt {
		for _, i := range t.roots {
			_, k := hold(i, ti)
			held[ti] += k
		}
	}
	// Queues that shed devices they held get them back first, as far as
	// the idle devices not held go (by weight): a reclaim that idle
	// devices can serve instead is undone, so that no job restarts for
	// nothing.
	var leaves []int
	for l := range t.qs {
		if t.leaf[l] {
			leaves = append(leaves, l)
		}
	}
	a, base, limit, w := make([]int, len(leaves)), make([]int, len(leaves)), make([]int, len(leaves)), make([]float64, len(leaves))
	for ti := range nt {
		for k, l := range leaves {
			x := l*nt + ti
			a[k], base[k], limit[k], w[k] = q2.pinned[x], q2.pinned[x], max(q2.pinned[x], min(q.cur[x], q.claim[x])), t.weight[l]
		}
		fillByWeight(a, base, limit, w, idle[ti]-held[ti])
		for k, l := range leaves {
			q2.pinned[l*nt+ti] = a[k]
		}
	}
	q2.compute(r)
	return q2
}

// allocate asks pol for targets and checks them; with queues it keeps
// them within the entitlements and, when that leaves devices idle that a
// queue at its entitlement could use, asks once more with the
// entitlements relaxed (roundQuota.relax).
func (r *Round) allocate(ctx context.Context, pol Policy) ([]Target, error) {
	for pass := 0; ; pass++ {
		targets, err := pol.Allocate(ctx, r)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tg, err := r.checkTargets(targets)
		if err != nil {
			return nil, err
		}
		if r.quota == nil {
			return tg, nil
		}
		if err := r.enforceQuota(tg); err != nil {
			return nil, err
		}
		if pass > 0 {
			return tg, nil
		}
		q2 := r.quota.relax(r, tg)
		if q2 == nil {
			return tg, nil
		}
		r.quota = q2
	}
}

// fillByWeight gives up to budget more units to a, one at a time, each to
// the k with a[k] < limit[k] whose (a[k] − base[k] + 1)/w[k] is least
// (ties to the lower k): progressive filling, the weighted max-min share
// of the budget above base.
func fillByWeight(a, base, limit []int, w []float64, budget int) {
	h := make(fillHeap, 0, len(a))
	for k := range a {
		if a[k] < limit[k] {
			h = append(h, fillItem{key: float64(a[k]-base[k]+1) / w[k], k: k})
		}
	}
	heap.Init(&h)
	for ; budget > 0 && h.Len() > 0; budget-- {
		k := h[0].k
		a[k]++
		if a[k] < limit[k] {
			h[0].key = float64(a[k]-base[k]+1) / w[k]
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
}

type fillItem struct {
	key float64
	k   int
}

type fillHeap []fillItem

func (h fillHeap) Len() int { return len(h) }
func (h fillHeap) Less(a, b int) bool {
	if h[a].key != h[b].key {
		return h[a].key < h[b].key
	}
	return h[a].k < h[b].k
}
func (h fillHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *fillHeap) Push(x any)   { *h = append(*h, x.(fillItem)) }
func (h *fillHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	*h = old[:len(old)-1]
	return m
}

// enforceQuota keeps the checked targets tg (index-aligned with r.jobs)
// within their queues' entitlements and explains what quotas did: a
// queue over its entitlement on a type sheds devices, elastic jobs first
// (one device at a time from the job that loses the least weighted
// speedup per device freed, not below its minimum), then whole jobs
// (lowest priority, newest, then greatest ID first); pinned jobs are
// never touched. Jobs that lose devices they held while their queue was
// over its entitlement are marked ReasonReclaimed; jobs held back by
// their queue's entitlement, ReasonQuota.
func (r *Round) enforceQuota(tg []Target) error {
	q := r.quota
	if q == nil {
		return nil
	}
	nt := q.nt
	leafOf := q.tree.jobQ
	use := make([]int, len(q.ent))
	typ := make([]int, len(tg))
	for i := range tg {
		typ[i] = -1
		if tg[i].Count > 0 {
			typ[i], _ = r.cluster.TypeIndex(tg[i].Type)
			use[leafOf[i]*nt+typ[i]] += tg[i].Count
		}
	}
	over := make(map[int][]int) // queue×type over its entitlement → its jobs there
	for x, u := range use {
		if u > q.ent[x] {
			over[x] = nil
		}
	}
	trimmed := make([]bool, len(tg))
	if len(over) > 0 {
		for i := range tg {
			if typ[i] < 0 || r.jobs[i].Pinned {
				continue
			}
			x := leafOf[i]*nt + typ[i]
			if js, ok := over[x]; ok {
				over[x] = append(js, i)
			}
		}
		for _, x := range slices.Sorted(maps.Keys(over)) {
			excess := use[x] - q.ent[x]
			js := over[x]
			// Shrink elastic jobs, least weighted speedup lost per device.
			h := make(fillHeap, 0, len(js))
			loss := func(i int) (float64, error) {
				j := &r.jobs[i]
				c := tg[i].Count
				s1, err := r.speedup(j, typ[i], r.packedNodes(typ[i], c), c)
				if err != nil {
					return 0, err
				}
				s0, err := r.speedup(j, typ[i], r.packedNodes(typ[i], c-1), c-1)
				return j.Weight * (s1 - s0), err
			}
			for _, i := range js {
				if !r.jobs[i].rigid && tg[i].Count > r.jobs[i].Min {
					l, err := loss(i)
					if err != nil {
						return err
					}
					h = append(h, fillItem{key: l, k: i})
				}
			}
			heap.Init(&h)
			for excess > 0 && h.Len() > 0 {
				i := h[0].k
				tg[i].Count--
				trimmed[i] = true
				excess--
				if tg[i].Count > r.jobs[i].Min {
					l, err := loss(i)
					if err != nil {
						return err
					}
					h[0].key = l
					heap.Fix(&h, 0)
				} else {
					heap.Pop(&h)
				}
			}
			if excess <= 0 {
				continue
			}
			// Then preempt: lowest priority, newest, greatest ID first.
			slices.SortFunc(js, func(a, b int) int {
				ja, jb := r.jobs[a].Job, r.jobs[b].Job
				return cmp.Or(cmp.Compare(ja.Priority, jb.Priority), jb.Submitted.Compare(ja.Submitted), cmp.Compare(jb.ID, ja.ID))
			})
			for _, i := range js {
				if excess <= 0 {
					break
				}
				excess -= tg[i].Count
				tg[i].Count, tg[i].Type = 0, ""
				trimmed[i] = true
			}
		}
	}
	// Explain.
	total := make([]int, nt) // devices per type the targets use, and per queue (use)
	clear(use)
	for i := range tg {
		if tg[i].Count > 0 {
			total[typ[i]] += tg[i].Count
			use[leafOf[i]*nt+typ[i]] += tg[i].Count
		}
	}
	for i := range tg {
		j := &r.jobs[i]
		if j.Pinned {
			continue
		}
		l := leafOf[i]
		name := q.tree.qs[l].Name
		if j.curCount > 0 {
			x := l*nt + j.curType
			lost := tg[i].Count == 0 || tg[i].Type != r.types[j.curType] || tg[i].Count < j.curCount
			if lost && q.cur[x] > q.ent[x] {
				tg[i].Reason = ReasonReclaimed
				tg[i].Note = r.reclaimNote(l, j.curType)
				continue
			}
		}
		if trimmed[i] {
			t := typ[i]
			tg[i].Reason = ReasonQuota
			tg[i].Note = fmt.Sprintf("queue %s at its entitlement of %d %s (nominal %d)", name, q.ent[l*nt+t], r.types[t], q.nominal[l*nt+t])
			continue
		}
		if tg[i].Count == 0 && tg[i].Reason != ReasonReclaimed {
			// Held back by the queue's entitlement on every allowed type?
			// (on some type the cluster has room but the queue has not,
			// and on none both have).
			capped, bind := false, -1
			for _, t := range j.allowed {
				x := l*nt + t
				cluster, queue := total[t]+j.Min <= r.cap[t], use[x]+j.Min <= q.ent[x]
				if cluster && queue {
					capped = false
					break
				}
				if cluster && !capped {
					capped, bind = true, t
				}
			}
			if capped {
				tg[i].Reason = ReasonQuota
				t := bind
				tg[i].Note = fmt.Sprintf("queue %s at its entitlement (%d of %d %s in use, nominal %d)", name, use[l*nt+t], q.ent[l*nt+t], r.types[t], q.nominal[l*nt+t])
			}
			continue
		}
		if tg[i].Count > 0 {
			// Which quota the job runs on: its queue's nominal, or borrowed.
			x := l*nt + typ[i]
			tk := r.types[typ[i]]
			if b := use[x] - q.nominal[x]; b > 0 {
				tg[i].Note = addNote(tg[i].Note, fmt.Sprintf("queue %s borrows %d %s beyond its nominal %d", name, b, tk, q.nominal[x]))
			} else {
				tg[i].Note = addNote(tg[i].Note, fmt.Sprintf("within queue %s's nominal %d %s", name, q.nominal[x], tk))
			}
		}
	}
	return nil
}

// addNote appends more to a target's note.
func addNote(note, more string) string {
	if note == "" {
		return more
	}
	return note + "; " + more
}

// reclaimNote says why queue l lost devices of type t: which queue
// reclaimed them (the one furthest below its entitlement, below its
// nominal first) and what l had borrowed.
func (r *Round) reclaimNote(l, t int) string {
	q := r.quota
	nt := q.nt
	by, byBelow, byGap := -1, false, 0
	for _, o := range q.tree.order {
		if o == l || !q.tree.leaf[o] {
			continue
		}
		x := o*nt + t
		gap := q.ent[x] - q.cur[x]
		if gap <= 0 {
			continue
		}
		below := q.cur[x] < min(q.nominal[x], q.claim[x])
		if by < 0 || (below && !byBelow) || (below == byBelow && gap > byGap) {
			by, byBelow, byGap = o, below, gap
		}
	}
	x := l*nt + t
	tk := r.types[t]
	what := fmt.Sprintf("queue %s held %d %s, borrowed beyond its nominal %d (entitled %d)", q.tree.qs[l].Name, q.cur[x], tk, q.nominal[x], q.ent[x])
	if q.cur[x] <= q.nominal[x] {
		what = fmt.Sprintf("queue %s held %d %s, more than its entitlement %d (nominal %d)", q.tree.qs[l].Name, q.cur[x], tk, q.ent[x], q.nominal[x])
	}
	switch {
	case by < 0:
		return "reclaimed: " + what
	case byBelow:
		return fmt.Sprintf("reclaimed by queue %s (below its nominal %d %s); %s", q.tree.qs[by].Name, q.nominal[by*nt+t], tk, what)
	}
	return fmt.Sprintf("reclaimed for queue %s's fair share; %s", q.tree.qs[by].Name, what)
}

// queueReport is Plan.Queues for the devices each job holds after the
// round (assigned, index-aligned with r.jobs).
func (r *Round) queueReport(assigned [][]string) []QueueUsage {
	q := r.quota
	if q == nil {
		return nil
	}
	t, nt := q.tree, q.nt
	used := make([]int, len(q.ent))
	for i, devs := range assigned {
		if len(devs) == 0 {
			continue
		}
		d, _ := r.cluster.Device(devs[0])
		ti, _ := r.cluster.TypeIndex(d.Type)
		used[t.jobQ[i]*nt+ti] += len(devs)
	}
	var sum func(i int)
	sum = func(i int) {
		for _, c := range t.children[i] {
			sum(c)
			for tt := range nt {
				used[i*nt+tt] += used[c*nt+tt]
			}
		}
	}
	for _, i := range t.roots {
		sum(i)
	}
	borrowed := func(i, tt int) int { return max(used[i*nt+tt]-q.nominal[i*nt+tt], 0) }
	out := make([]QueueUsage, 0, len(t.qs)*nt)
	for _, i := range t.order {
		sibs := t.roots
		if p := t.parent[i]; p >= 0 {
			sibs = t.children[p]
		}
		for tt, tk := range r.types {
			x := i*nt + tt
			u := QueueUsage{Queue: t.qs[i].Name, Type: tk, Guaranteed: q.nominal[x], Entitled: q.ent[x], Used: used[x],
				Borrowed: borrowed(i, tt), Pending: max(q.want[x]-used[x], 0)}
			lendable := max(q.nominal[x]-used[x], 0)
			if qt, _ := t.quota(i, tk); qt.LendingLimit != nil {
				lendable = min(lendable, *qt.LendingLimit)
			}
			others := 0
			for _, s := range sibs {
				if s != i {
					others += borrowed(s, tt)
				}
			}
			u.Lent = min(lendable, others)
			out = append(out, u)
		}
	}
	return out
}

// quotaRoom is what each queue may still take per type while a policy
// builds its targets (nil without queues: no bound).
type quotaRoom []int

// quotaRoom returns the queues' entitlements as room to fill.
func (r *Round) quotaRoom() quotaRoom {
	if r.quota == nil {
		return nil
	}
	return slices.Clone(r.quota.ent)
}

// pos is job j's entry for type t.
func (q quotaRoom) pos(r *Round, j *jobInfo, t int) int {
	return r.quota.tree.jobQ[r.byID[j.Job.ID]]*r.quota.nt + t
}

// take records that job j takes c devices of type t.
func (q quotaRoom) take(r *Round, j *jobInfo, t, c int) {
	if q != nil {
		q[q.pos(r, j, t)] -= c
	}
}

// has reports whether job j's queue may take c more devices of type t.
func (q quotaRoom) has(r *Round, j *jobInfo, t, c int) bool {
	return q == nil || q[q.pos(r, j, t)] >= c
}

// limit returns free bounded by job j's queue's room (free itself
// without queues).
func (q quotaRoom) limit(r *Round, j *jobInfo, free []int) []int {
	if q == nil {
		return free
	}
	out := slices.Clone(free)
	for t := range out {
		out[t] = min(out[t], max(q[q.pos(r, j, t)], 0))
	}
	return out
}

// satAdd is a + b for non-negative a and b, saturating at math.MaxInt
// (quotas may be set very large to mean "no limit").
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// Entitlement returns the most devices of type t the jobs of leaf queue
// queue may hold together this round (see "Queues and quotas" in the
// package documentation), and false when the round has no such leaf queue
// or type. Policies that fill the cluster themselves can stay within it;
// the Scheduler trims any target set that does not.
func (r *Round) Entitlement(queue string, t accel.TypeKey) (int, bool) {
	if r.quota == nil {
		return 0, false
	}
	i, ok := r.quota.tree.byName[queue]
	ti, known := r.cluster.TypeIndex(t)
	if !ok || !known || !r.quota.tree.leaf[i] {
		return 0, false
	}
	return r.quota.ent[i*r.quota.nt+ti], true
}
