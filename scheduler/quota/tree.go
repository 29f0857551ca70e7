package quota

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// ErrInvalid reports a malformed quota tree: an empty or duplicate name,
// an unknown parent, a cycle, a bad weight or quota, a cohort whose quota
// is below its children's. It is wrapped with the queue at fault.
var ErrInvalid = errors.New("invalid quota tree")

// Queue is a node of the quota tree that tenants share a cluster by, as
// in Kueue (ClusterQueues in cohorts) and KAI-Scheduler (hierarchical
// queues). A queue without children is a leaf: jobs name it (jobs may sit
// in leaves only, so that a cohort's capacity is exactly what its members
// are guaranteed and borrow). A queue with children is a cohort: its
// members lend each other what they do not use, and the cohort as a
// whole borrows from its own siblings. Roots (Parent "") are the members
// of one implicit top cohort, the cluster itself.
//
// Per accelerator type, each round, a queue is entitled to (the package
// documentation has the exact rule): its guaranteed quota (Nominal, or
// its demand when that is smaller), then a weighted share of what its
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

// Tree is a validated quota tree. Queues are numbered by their position
// in the slice NewTree was given. A Tree is immutable: safe for
// concurrent use.
type Tree struct {
	qs       []Queue
	byName   map[string]int // name → position in qs
	parent   []int          // −1 for roots
	children [][]int        // sorted by name
	roots    []int          // sorted by name
	leaf     []bool
	weight   []float64 // 0 read as 1
	order    []int     // every queue, by name
}

// NewTree validates qs and builds its tree. It fails with ErrInvalid,
// naming the queue, for anything Queue and Quota do not allow.
func NewTree(qs []Queue) (*Tree, error) {
	t := &Tree{qs: qs, byName: make(map[string]int, len(qs)), parent: make([]int, len(qs)),
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
	return t, nil
}

// Len returns the number of queues.
func (t *Tree) Len() int { return len(t.qs) }

// Name returns the name of queue i.
func (t *Tree) Name(i int) string { return t.qs[i].Name }

// Find returns the position of the queue named name, whether it is a
// leaf, and whether there is one.
func (t *Tree) Find(name string) (i int, leaf, ok bool) {
	i, ok = t.byName[name]
	return i, ok && t.leaf[i], ok
}

// quota returns queue i's quota for type tk, and whether it lists one.
func (t *Tree) quota(i int, tk accel.TypeKey) (Quota, bool) {
	for _, qt := range t.qs[i].Quotas {
		if qt.Type == tk {
			return qt, true
		}
	}
	return Quota{Type: tk}, false
}

// nominal returns queue i's effective nominal quota of tk: its own when
// listed; for a cohort that does not list tk, its children's sum.
func (t *Tree) nominal(i int, tk accel.TypeKey) int {
	if qt, ok := t.quota(i, tk); ok || t.leaf[i] {
		return qt.Nominal
	}
	sum := 0
	for _, c := range t.children[i] {
		sum = satAdd(sum, t.nominal(c, tk))
	}
	return sum
}

// satAdd is a + b for non-negative a and b, saturating at math.MaxInt
// (quotas may be set very large to mean "no limit").
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
