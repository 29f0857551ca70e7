package topoplace

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// Placer is a topology-aware placement.Placer. The zero Strategy is
// LeastLoss. A gang of several types reaches it as the scheduler splits
// it, one part per type (placement.GangPart). It ignores
// PlaceInput.AllowInterference (it never co-locates jobs on a device, and
// does not keep distributed jobs apart on nodes). Placer is a value safe
// for concurrent use when its functions are.
type Placer struct {
	// Topology is the tree the cluster's nodes sit in (required). Nodes
	// it does not hold hang from the root, outside every domain.
	Topology *topology.Topology
	// Strategy is how domains and devices are chosen.
	Strategy Strategy
	// Constraint returns a job's constraint; nil = none for every job.
	Constraint func(job string) Constraint
	// Keep is, per level name, the fraction of its one-node throughput a
	// gang keeps when the innermost domain holding all its nodes is at
	// that level (0 < keep <= 1); key "" is for a gang no domain holds. A
	// level not listed keeps what the next inner level keeps ("" what the
	// outermost does). nil: every tier outward loses a little more, so
	// LeastLoss places as far inside as the gang fits. Only LeastLoss
	// reads it.
	Keep map[string]float64
	// Preempt, when set, lets a gang whose required level no domain can
	// hold now evict jobs of lower priority (see Victims).
	Preempt *Preemption
}

// Preemption says whom a gang with a required level may evict.
type Preemption struct {
	// Priority returns a job's priority; a gang evicts only jobs of
	// strictly lower priority (required).
	Priority func(job string) int
	// DeviceSeconds is what evicting a job costs: the device-seconds of
	// work it loses. nil = the number of devices it holds.
	DeviceSeconds func(job string) float64
}

var (
	_ placement.Placer    = Placer{}
	_ placement.StateUser = Placer{}
	_ scheduler.Validator = Placer{}
)

// UsesState implements placement.StateUser: Place works from the index
// and the current assignments.
func (Placer) UsesState() bool { return false }

// Validate checks the settings: a topology, a known strategy, Keep's
// levels and fractions, Preempt's Priority. Errors wrap ErrInvalid or
// topology.ErrUnknownLevel.
func (p Placer) Validate() error {
	if p.Topology == nil {
		return fmt.Errorf("%w: Placer.Topology is nil", ErrInvalid)
	}
	if p.Strategy < 0 || int(p.Strategy) >= len(strategyNames) {
		return fmt.Errorf("%w: Placer.Strategy %d", ErrInvalid, int(p.Strategy))
	}
	if p.Preempt != nil && p.Preempt.Priority == nil {
		return fmt.Errorf("%w: Placer.Preempt.Priority is nil", ErrInvalid)
	}
	_, err := keepTable(p.Topology.Levels(), p.Keep)
	return err
}

// Place implements placement.Placer. A target whose current devices meet
// it (count, type, usable, and its constraint) keeps them; the others are
// placed largest first. A target that cannot be placed is reported with
// a typed reason (ReasonTopology naming the required level) and keeps its
// current devices when they are still free, usable and within its
// required level. Errors: bad settings, a constraint naming an unknown
// level (wrapping topology.ErrUnknownLevel, naming the job), the
// context's. A kept job's assignment shares its Current entry's device
// slice (neither may be modified).
func (p Placer) Place(ctx context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return placement.PlaceResult{}, err
	}
	if err := p.Validate(); err != nil {
		return placement.PlaceResult{}, err
	}
	m := modelFor(in.Cluster, p.Topology)
	keep, _ := keepTable(m.levels, p.Keep)
	w := newWork(m)
	defer putWork(w)
	n := len(in.Targets)
	w.reqs = sized(w.reqs, n)
	reqs := w.reqs
	for i, t := range in.Targets {
		var c Constraint
		if p.Constraint != nil {
			c = p.Constraint(t.Job)
		}
		rc, err := c.resolve(m.levels)
		if err != nil {
			return placement.PlaceResult{}, fmt.Errorf("job %q: %w", t.Job, err)
		}
		ti, ok := m.types[string(t.Type)]
		if !ok {
			ti = -1
		}
		reqs[i] = request{t: ti, k: t.Count, c: rc}
	}
	// Stranding threshold per type: the smallest multi-node gang.
	strand := make([]int, len(m.types))
	for i := range reqs {
		if t := reqs[i].t; t >= 0 && reqs[i].k > m.maxPer[t] && (strand[t] == 0 || reqs[i].k < strand[t]) {
			strand[t] = reqs[i].k
		}
	}
	cur := currentOf(in.Current, in.Targets, &w.byPos)
	w.held, w.kept = sized(w.held, n), sized(w.kept, n)
	held, kept := w.held, w.kept
	for i, t := range in.Targets {
		if nums, ok := w.keepable(cur.of(i), &reqs[i], t.MaxNodes); ok {
			for _, g := range nums {
				w.take(g, i)
			}
			held[i], kept[i] = nums, true
		}
	}
	order := make([]int, 0, n)
	for i := range in.Targets {
		if !kept[i] {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(in.Targets[b].Count, in.Targets[a].Count), cmp.Compare(in.Targets[a].Job, in.Targets[b].Job))
	})
	w.reasons, w.preempted = sized(w.reasons, n), sized(w.preempted, n)
	reasons, preempted := w.reasons, w.preempted
	var retry []int
	tryPlace := func(i int, mayPreempt bool) {
		t, r := in.Targets[i], &reqs[i]
		if r.t < 0 {
			reasons[i] = &placement.Reason{Code: placement.ReasonCapacity, Text: fmt.Sprintf("no %s devices", t.Type)}
			return
		}
		r.strand = strand[r.t]
		devs, why := w.place(p.Strategy, keep, r, string(t.Type))
		if why != nil && (why.Code == placement.ReasonTopology || why.Code == placement.ReasonCapacity) && mayPreempt && p.Preempt != nil && r.c.required >= 0 {
			if victims, dom := w.preemptFor(i, r, in.Targets, held, p.Preempt); len(victims) > 0 {
				for _, v := range victims {
					for _, g := range held[v] {
						w.release(g)
					}
				}
				if devs, why = w.place(p.Strategy, keep, r, string(t.Type)); why == nil {
					for _, v := range victims {
						held[v], kept[v], preempted[v] = nil, false, true
						reasons[v] = &placement.Reason{Code: placement.ReasonCapacity,
							Text: fmt.Sprintf("preempted: job %q needs one %s domain (%s)", t.Job, w.levelName(r.c.required), m.name[dom])}
						retry = append(retry, v)
					}
				} else {
					for _, v := range victims { // restore: nothing took them
						for _, g := range held[v] {
							w.take(g, v)
						}
					}
				}
			}
		}
		if why == nil && t.MaxNodes > 0 && countNodes(m, devs) > t.MaxNodes {
			why = &placement.Reason{Code: placement.ReasonFragmented, Text: fmt.Sprintf("%d devices span %d nodes, more than %d", t.Count, countNodes(m, devs), t.MaxNodes)}
		}
		if why != nil {
			reasons[i] = why
			return
		}
		for _, g := range devs {
			w.take(g, i)
		}
		held[i], reasons[i], preempted[i] = devs, nil, false
	}
	for k, i := range order {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return placement.PlaceResult{}, err
			}
		}
		tryPlace(i, true)
	}
	for _, i := range retry {
		why := reasons[i]
		if tryPlace(i, false); reasons[i] != nil {
			reasons[i] = why // the preemption says more than the retry
		}
	}
	res := placement.PlaceResult{Assignments: make([]placement.Assignment, 0, n)}
	// A kept job's devices are its Current slice itself (read-only, as
	// every input): a round of thousands of running jobs copies none.
	keepIDs := func(devs []string) []string { return devs[:len(devs):len(devs)] }
	for i, t := range in.Targets {
		switch {
		case kept[i]:
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: keepIDs(cur.of(i))})
		case reasons[i] == nil:
			ids := make([]string, len(held[i]))
			for k, g := range held[i] {
				ids[k] = m.devID[g]
			}
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: ids})
		default:
			res.Unplaced = append(res.Unplaced, placement.Unplaced{
				Target: placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes}, Reason: *reasons[i]})
			// A job that cannot move keeps what it held, if it still can.
			if nums, ok := w.holdable(cur.of(i), &reqs[i]); ok && !preempted[i] {
				for _, g := range nums {
					w.take(g, i)
				}
				res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: keepIDs(cur.of(i))})
			}
		}
	}
	byJob := func(a, b placement.Assignment) int { return cmp.Compare(a.Job, b.Job) }
	if !slices.IsSortedFunc(res.Assignments, byJob) {
		slices.SortFunc(res.Assignments, byJob)
	}
	slices.SortFunc(res.Unplaced, func(a, b placement.Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	if len(res.Assignments) == 0 {
		res.Assignments = nil
	}
	return res, nil
}

// currents maps a target's position to the job's current devices.
type currents struct {
	byPos [][]string
}

func (c currents) of(i int) []string { return c.byPos[i] }

// currentOf pairs targets with current assignments: a merge when both are
// in job order (as the Scheduler passes them), else through a map.
func currentOf(cur []placement.Assignment, tg []placement.Target, buf *[][]string) currents {
	*buf = sized(*buf, len(tg))
	out := currents{byPos: *buf}
	sorted := slices.IsSortedFunc(cur, func(a, b placement.Assignment) int { return cmp.Compare(a.Job, b.Job) }) &&
		slices.IsSortedFunc(tg, func(a, b placement.Target) int { return cmp.Compare(a.Job, b.Job) })
	if sorted {
		j := 0
		for i, t := range tg {
			for j < len(cur) && cur[j].Job < t.Job {
				j++
			}
			if j < len(cur) && cur[j].Job == t.Job {
				out.byPos[i] = cur[j].Devices
			}
		}
		return out
	}
	m := make(map[string][]string, len(cur))
	for _, a := range cur {
		if _, dup := m[a.Job]; !dup {
			m[a.Job] = a.Devices
		}
	}
	for i, t := range tg {
		out.byPos[i] = m[t.Job]
	}
	return out
}

func countNodes(m *model, devs []int32) int {
	k := 0
	var last int32 = -1
	for _, g := range devs { // sorted by device number: nodes are runs
		if v := m.nodeOf[g]; v != last {
			k++
			last = v
		}
	}
	return k
}

// nums resolves device IDs to free, usable device numbers of one type.
func (w *work) nums(ids []string) ([]int32, int, bool) {
	if len(ids) == 0 {
		return nil, 0, false
	}
	start := len(w.arena)
	out := w.arena[start:start:cap(w.arena)]
	if cap(out) < len(ids) {
		w.arena = make([]int32, 0, max(4096, len(ids)))
		out = w.arena[:0:len(ids)]
		start = 0
	} else {
		out = out[:0:len(ids)]
	}
	defer func() { w.arena = w.arena[:start+len(out)] }()
	t := -1
	prev := int32(-2)
	for _, id := range ids {
		// A node's devices in index order are consecutive numbers: one
		// comparison instead of a map lookup.
		g, ok := prev+1, prev >= 0 && int(prev+1) < len(w.m.devID) && w.m.devID[prev+1] == id
		if !ok {
			g, ok = w.m.devNum[id]
		}
		if !ok || w.owner[g] != 0 || slices.Contains(out, g) {
			return nil, 0, false
		}
		prev = g
		if t >= 0 && int(w.m.typeOf[g]) != t {
			return nil, 0, false
		}
		t = int(w.m.typeOf[g])
		out = append(out, g)
	}
	return out, t, true
}

// keepable reports whether a job's current devices meet its target: its
// count, its type, usable and free, within MaxNodes and its constraint.
func (w *work) keepable(ids []string, r *request, maxNodes int) ([]int32, bool) {
	if len(ids) != r.k {
		return nil, false
	}
	out, t, ok := w.nums(ids)
	if !ok || t != r.t || w.violates(out, &r.c) {
		return nil, false
	}
	if maxNodes > 0 {
		s := slices.Clone(out)
		slices.Sort(s)
		if countNodes(w.m, s) > maxNodes {
			return nil, false
		}
	}
	return out, true
}

// holdable reports whether an unplaced job may keep its current devices:
// usable, free, and within its required level and slices.
func (w *work) holdable(ids []string, r *request) ([]int32, bool) {
	out, _, ok := w.nums(ids)
	if !ok || w.violates(out, &r.c) {
		return nil, false
	}
	return out, true
}

// violates reports whether devices break c's required level or slices.
func (w *work) violates(devs []int32, c *resolved) bool {
	m := w.m
	if c.required >= 0 {
		want := int32(-2)
		for _, g := range devs {
			a := m.ancestorAt(m.nodeOf[g], c.required)
			if a < 0 || want != -2 && a != want {
				return true
			}
			want = a
		}
	}
	for d, u := range c.slices {
		if u <= 1 {
			continue
		}
		per := map[int32]int{}
		for _, g := range devs {
			a := m.ancestorAt(m.nodeOf[g], d)
			if a < 0 {
				return true
			}
			per[a]++
		}
		for _, k := range per {
			if k%u != 0 {
				return true
			}
		}
	}
	return false
}
