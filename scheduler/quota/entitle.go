package quota

import (
	"container/heap"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// Claim is what the arithmetic reads of one job: its leaf queue, the
// types it may use, its bounds and what it holds.
type Claim struct {
	// Queue is the position of the job's leaf queue in the Tree.
	Queue int
	// Types are the positions (in the types given to Entitle) of the
	// device types the job may use.
	Types []int
	// Min and Max are the job's device-count bounds; Rigid says it runs
	// on exactly Min, so Trim never shrinks it.
	Min, Max int
	Rigid    bool
	// CurrentType (a position, −1 when none) and CurrentCount are what
	// the job holds when the round starts.
	CurrentType, CurrentCount int
	// Pinned: the job runs and is non-preemptible; it counts on its
	// current type only and is never trimmed.
	Pinned bool
}

// Grant is the devices a job gets (or holds): Count of the type at
// position Type (−1 when Count is 0).
type Grant struct {
	Type, Count int
}

// Entitlements are one round's per queue and type entitlements: the most
// devices of the type each queue's jobs may hold together. Entries are
// indexed by queue position × number of types + type position. They are
// immutable once built (Relax and Subset return new values): safe for
// concurrent reads.
type Entitlements struct {
	tree     *Tree
	types    []accel.TypeKey
	capacity []int // usable devices per type
	nt       int
	jobQ     []int   // per claim, its leaf
	claims   []Claim // as Entitle was given them
	nominal  []int
	demand   []int
	pinned   []int
	claim    []int // demand within the queue's limits, with its reserve
	ent      []int
	cur      []int // devices held when the round starts
	// njobs counts the jobs with demand for the type (a cohort's: its
	// leaves').
	njobs []int
	// floor is what a queue gets before any guarantee: its pinned
	// devices and its reserve (Nominal − LendingLimit), a cohort's
	// children's floors summed.
	floor []int
	// want is the leaves' demand as the jobs state it (reported as
	// Pending); demand may be lowered by Relax.
	want []int
}

// Entitle computes the entitlements of a round: the cluster has
// capacity[t] usable devices of types[t], and claims are its jobs. Every
// claim's Queue must be a leaf of t and its type positions within types.
// The rule is the package documentation's.
func (t *Tree) Entitle(types []accel.TypeKey, capacity []int, claims []Claim) *Entitlements {
	nt, nq := len(types), len(t.qs)
	q := &Entitlements{tree: t, types: types, capacity: capacity, nt: nt, claims: claims, jobQ: make([]int, len(claims)),
		nominal: make([]int, nq*nt), demand: make([]int, nq*nt), pinned: make([]int, nq*nt),
		claim: make([]int, nq*nt), ent: make([]int, nq*nt), cur: make([]int, nq*nt), floor: make([]int, nq*nt), njobs: make([]int, nq*nt)}
	for i := range nq {
		for tt, tk := range types {
			q.nominal[i*nt+tt] = t.nominal(i, tk)
		}
	}
	for k := range claims {
		j := &claims[k]
		q.jobQ[k] = j.Queue
		l := j.Queue * nt
		if j.CurrentCount > 0 {
			q.cur[l+j.CurrentType] += j.CurrentCount
		}
		if j.Pinned {
			q.pinned[l+j.CurrentType] += j.CurrentCount
			q.demand[l+j.CurrentType] = min(q.demand[l+j.CurrentType]+j.CurrentCount, capacity[j.CurrentType])
			q.njobs[l+j.CurrentType]++
			continue
		}
		for _, tt := range j.Types {
			if j.Min > capacity[tt] {
				continue // it cannot run there
			}
			q.demand[l+tt] = min(q.demand[l+tt]+min(j.Max, capacity[tt]), capacity[tt])
			q.njobs[l+tt]++
		}
	}
	q.compute()
	q.want = slices.Clone(q.demand) // the cohorts' too, now summed
	return q
}

// Tree returns the tree the entitlements are of.
func (q *Entitlements) Tree() *Tree { return q.tree }

// Types returns the device types, in the order type positions refer to.
func (q *Entitlements) Types() []accel.TypeKey { return q.types }

// LeafOf returns the position of job k's leaf queue (k a claim's
// position).
func (q *Entitlements) LeafOf(k int) int { return q.jobQ[k] }

// Entitled returns queue i's entitlement of the type at position t.
func (q *Entitlements) Entitled(i, t int) int { return q.ent[i*q.nt+t] }

// Nominal returns queue i's effective nominal quota of the type at
// position t.
func (q *Entitlements) Nominal(i, t int) int { return q.nominal[i*q.nt+t] }

// Caps returns, per queue and type position, the entitlement: the most
// devices the queue's jobs may hold together (a search's caps). The rows
// must not be modified.
func (q *Entitlements) Caps() [][]int {
	caps := make([][]int, len(q.tree.qs))
	for g := range caps {
		caps[g] = q.ent[g*q.nt : (g+1)*q.nt : (g+1)*q.nt]
	}
	return caps
}

// Floors returns, per queue and type position, what no other queue's
// growth may take from the queue: min(Nominal, demand), within its
// entitlement.
func (q *Entitlements) Floors() [][]int {
	floors := make([][]int, len(q.tree.qs))
	for g := range floors {
		floors[g] = make([]int, q.nt)
		for t := range q.nt {
			x := g*q.nt + t
			floors[g][t] = min(q.nominal[x], q.claim[x], q.ent[x])
		}
	}
	return floors
}

// Subset returns the entitlements for the claims at positions jobs only,
// renumbered 0, 1, ... in that order: the same entitlements, for a round
// that leaves some jobs out.
func (q *Entitlements) Subset(jobs []int) *Entitlements {
	s := *q
	s.jobQ = make([]int, len(jobs))
	s.claims = make([]Claim, len(jobs))
	for k, i := range jobs {
		s.jobQ[k], s.claims[k] = q.jobQ[i], q.claims[i]
	}
	return &s
}

// compute derives the claims and entitlements from the leaves' demand,
// floors (pinned) and current devices.
func (q *Entitlements) compute() {
	t, nt := q.tree, q.nt
	// Bottom-up: cohorts' demand, floors and claims.
	var up func(i int)
	up = func(i int) {
		for _, c := range t.children[i] {
			up(c)
		}
		for tt, tk := range q.types {
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
				q.demand[x], q.pinned[x], q.cur[x], q.floor[x] = min(d, q.capacity[tt]), p, cu, fl
				eff = min(cl, q.capacity[tt])
			} else {
				q.floor[x] = q.pinned[x]
			}
			qt, _ := t.quota(i, tk)
			if qt.BorrowingLimit != nil {
				eff = min(eff, satAdd(q.nominal[x], *qt.BorrowingLimit))
			}
			if qt.LendingLimit != nil {
				q.floor[x] = max(q.floor[x], min(q.nominal[x]-*qt.LendingLimit, q.capacity[tt]))
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
	for tt := range q.types {
		down(q.capacity[tt], t.roots, tt)
	}
}

// Relax returns the entitlements of a second pass when grants (one per
// claim, what a policy's checked targets give) leave devices idle that a
// queue held back by its entitlement could use; nil when they do not.
// Every queue keeps at least what grants give it (its floor); a queue
// that did not use all of its entitlement and has no unmet demand
// releases the rest (its demand becomes what it uses), one with unmet
// demand keeps its guarantee; the idle devices no queue keeps go first to
// queues that shed devices they held, then by the same rules (guarantee,
// borrowing limit, reserves, weights) to the queues that used their whole
// entitlement.
func (q *Entitlements) Relax(grants []Grant) *Entitlements {
	t, nt := q.tree, q.nt
	use := make([]int, len(q.ent))
	idle := slices.Clone(q.capacity)
	for i, g := range grants {
		if g.Count > 0 {
			use[q.jobQ[i]*nt+g.Type] += g.Count
			idle[g.Type] -= g.Count
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
	q2 := &Entitlements{tree: t, types: q.types, capacity: q.capacity, nt: nt, jobQ: q.jobQ, claims: q.claims,
		nominal: q.nominal, want: q.want, cur: slices.Clone(q.cur),
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
	q2.compute()
	return q2
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
