package quota

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// EffectKind says what the quotas did to one job's grant (Enforce).
type EffectKind int

const (
	// Untouched: quotas changed nothing (a pinned job, or one whose
	// queue has room).
	Untouched EffectKind = iota
	// Reclaimed: the job lost devices it held while its queue was over
	// its entitlement; Note says who reclaimed them.
	Reclaimed
	// Trimmed: the job was shrunk or preempted to keep its queue within
	// its entitlement.
	Trimmed
	// HeldBack: the job gets nothing and the cluster has room for it on
	// some allowed type where its queue has none.
	HeldBack
	// Annotated: the job runs; Note says whether on its queue's nominal
	// quota or on borrowed devices (to be added to the policy's note).
	Annotated
)

// Effect is what the quotas did to one job, explained.
type Effect struct {
	Kind EffectKind
	Note string
}

// LossFunc returns what job k (a claim's position) loses when it shrinks
// from count to count − 1 devices of the type at position t; Enforce
// shrinks the jobs that lose least first.
type LossFunc func(k, t, count int) (float64, error)

// Enforce keeps grants (one per claim, changed in place) within their
// queues' entitlements and explains what it did: a queue over its
// entitlement on a type sheds devices, elastic jobs first (one device at
// a time from the job whose loss is least, not below its minimum), then
// whole jobs in evictFirst's order (it orders two claim positions, the
// first evicted first, and must order every distinct pair); pinned jobs
// are never touched. It returns one Effect per claim.
func (q *Entitlements) Enforce(grants []Grant, loss LossFunc, evictFirst func(a, b int) int) ([]Effect, error) {
	nt := q.nt
	leafOf := q.jobQ
	use := make([]int, len(q.ent))
	typ := make([]int, len(grants)) // the granted type, kept when evicted
	for i, g := range grants {
		typ[i] = -1
		if g.Count > 0 {
			typ[i] = g.Type
			use[leafOf[i]*nt+typ[i]] += g.Count
		}
	}
	over := make(map[int][]int) // queue×type over its entitlement → its jobs there
	for x, u := range use {
		if u > q.ent[x] {
			over[x] = nil
		}
	}
	trimmed := make([]bool, len(grants))
	if len(over) > 0 {
		for i := range grants {
			if typ[i] < 0 || q.claims[i].Pinned {
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
			// Shrink elastic jobs, least loss per device first.
			h := make(fillHeap, 0, len(js))
			for _, i := range js {
				if c := &q.claims[i]; !c.Rigid && grants[i].Count > c.Min {
					l, err := loss(i, typ[i], grants[i].Count)
					if err != nil {
						return nil, err
					}
					h = append(h, fillItem{key: l, k: i})
				}
			}
			heap.Init(&h)
			for excess > 0 && h.Len() > 0 {
				i := h[0].k
				grants[i].Count--
				trimmed[i] = true
				excess--
				if grants[i].Count > q.claims[i].Min {
					l, err := loss(i, typ[i], grants[i].Count)
					if err != nil {
						return nil, err
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
			// Then evict whole jobs.
			slices.SortFunc(js, evictFirst)
			for _, i := range js {
				if excess <= 0 {
					break
				}
				excess -= grants[i].Count
				grants[i] = Grant{Type: -1}
				trimmed[i] = true
			}
		}
	}
	return q.explain(grants, typ, trimmed), nil
}

// explain says, per claim, what Enforce did.
func (q *Entitlements) explain(grants []Grant, typ []int, trimmed []bool) []Effect {
	nt, leafOf := q.nt, q.jobQ
	total := make([]int, nt) // devices per type the grants use, and per queue (use)
	use := make([]int, len(q.ent))
	for i, g := range grants {
		if g.Count > 0 {
			total[typ[i]] += g.Count
			use[leafOf[i]*nt+typ[i]] += g.Count
		}
	}
	out := make([]Effect, len(grants))
	for i, g := range grants {
		j := &q.claims[i]
		if j.Pinned {
			continue
		}
		l := leafOf[i]
		name := q.tree.qs[l].Name
		if j.CurrentCount > 0 {
			x := l*nt + j.CurrentType
			lost := g.Count == 0 || g.Type != j.CurrentType || g.Count < j.CurrentCount
			if lost && q.cur[x] > q.ent[x] {
				out[i] = Effect{Reclaimed, q.reclaimNote(l, j.CurrentType)}
				continue
			}
		}
		if trimmed[i] {
			t := typ[i]
			out[i] = Effect{Trimmed, fmt.Sprintf("queue %s at its entitlement of %d %s (nominal %d)", name, q.ent[l*nt+t], q.types[t], q.nominal[l*nt+t])}
			continue
		}
		if g.Count == 0 {
			// Held back by the queue's entitlement on every allowed type?
			// (on some type the cluster has room but the queue has not,
			// and on none both have).
			capped, bind := false, -1
			for _, t := range j.Types {
				x := l*nt + t
				cluster, queue := total[t]+j.Min <= q.capacity[t], use[x]+j.Min <= q.ent[x]
				if cluster && queue {
					capped = false
					break
				}
				if cluster && !capped {
					capped, bind = true, t
				}
			}
			if capped {
				t := bind
				out[i] = Effect{HeldBack, fmt.Sprintf("queue %s at its entitlement (%d of %d %s in use, nominal %d)", name, use[l*nt+t], q.ent[l*nt+t], q.types[t], q.nominal[l*nt+t])}
			}
			continue
		}
		// Which quota the job runs on: its queue's nominal, or borrowed.
		x := l*nt + typ[i]
		tk := q.types[typ[i]]
		if b := use[x] - q.nominal[x]; b > 0 {
			out[i] = Effect{Annotated, fmt.Sprintf("queue %s borrows %d %s beyond its nominal %d", name, b, tk, q.nominal[x])}
		} else {
			out[i] = Effect{Annotated, fmt.Sprintf("within queue %s's nominal %d %s", name, q.nominal[x], tk)}
		}
	}
	return out
}

// reclaimNote says why queue l lost devices of type t: which queue
// reclaimed them (the one furthest below its entitlement, below its
// nominal first) and what l had borrowed.
func (q *Entitlements) reclaimNote(l, t int) string {
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
	tk := q.types[t]
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

// Usage is one queue's standing for one accelerator type after a round.
// Cohorts report the sums over their leaves, except Guaranteed, which is
// the cohort's own (effective) Nominal.
type Usage struct {
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
	// (see the package documentation) less Used, at least 0.
	Pending int `json:"pending"`
}

// Report returns every queue's standing per type, queues by name, for
// what each job holds after the round (held, one per claim).
func (q *Entitlements) Report(held []Grant) []Usage {
	t, nt := q.tree, q.nt
	used := make([]int, len(q.ent))
	for i, g := range held {
		if g.Count > 0 {
			used[q.jobQ[i]*nt+g.Type] += g.Count
		}
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
	out := make([]Usage, 0, len(t.qs)*nt)
	for _, i := range t.order {
		sibs := t.roots
		if p := t.parent[i]; p >= 0 {
			sibs = t.children[p]
		}
		for tt, tk := range q.types {
			x := i*nt + tt
			u := Usage{Queue: t.qs[i].Name, Type: tk, Guaranteed: q.nominal[x], Entitled: q.ent[x], Used: used[x],
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

// Room is what each queue may still take per type while a policy builds
// its targets. A nil *Room bounds nothing. It is used by one goroutine.
type Room struct {
	q    *Entitlements
	left []int
}

// Room returns the entitlements as room to fill (nil for nil q).
func (q *Entitlements) Room() *Room {
	if q == nil {
		return nil
	}
	return &Room{q: q, left: slices.Clone(q.ent)}
}

// Take records that job k (a claim's position) takes c devices of the
// type at position t.
func (r *Room) Take(k, t, c int) {
	if r != nil {
		r.left[r.q.jobQ[k]*r.q.nt+t] -= c
	}
}

// Has reports whether job k's queue may take c more devices of the type
// at position t.
func (r *Room) Has(k, t, c int) bool {
	return r == nil || r.left[r.q.jobQ[k]*r.q.nt+t] >= c
}

// Limit returns free (devices per type position) bounded by job k's
// queue's room; free itself on a nil Room.
func (r *Room) Limit(k int, free []int) []int {
	if r == nil {
		return free
	}
	out := slices.Clone(free)
	for t := range out {
		out[t] = min(out[t], max(r.left[r.q.jobQ[k]*r.q.nt+t], 0))
	}
	return out
}
