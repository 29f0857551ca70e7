package scheduler

import (
	"cmp"
	"fmt"
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
// Per accelerator type, each round, a queue is entitled to (see
// Input.Queues for the exact rule): its guaranteed quota (Nominal, or its
// demand when that is smaller), then a weighted share of what its
// siblings leave over, up to its BorrowingLimit beyond Nominal; what it
// does not use of its Nominal is lent to its siblings, up to its
// LendingLimit.
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
	// (see Input.Queues) less Used, at least 0.
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
				sum += t.nominal(c, qt.Type)
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
		sum += t.nominal(c, tk)
	}
	return sum
}

// roundQuota is the quota state of one round: the tree and, per queue and
// type (position in Round.types), the demand and entitlement.
type roundQuota struct {
	tree *queueTree
}

// newQuota computes the round's entitlements.
func (r *Round) newQuota(t *queueTree) *roundQuota {
	return &roundQuota{tree: t}
}
