package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
)

// Config configures a Scheduler. The zero value is valid: the Goodput
// policy with its defaults, realised by RoundPlacer.
type Config struct {
	// Policy decides each round's (type, count) per job; nil = Goodput{}.
	Policy Policy
	// Placer realises the policy's targets on concrete devices;
	// nil = RoundPlacer{} (the placement package's round), which avoids
	// interference unless the policy is a Goodput with AllowInterference.
	Placer Placer
}

// Scheduler runs one scheduling round per Schedule call: it validates the
// Input, asks its Policy for targets, keeps running non-preemptible jobs
// on their devices, realises the targets through its Placer and returns a
// Plan with one Decision per job.
//
// A Scheduler holds no decision state between rounds (the host passes the
// assignments in effect as Input.Current); it only remembers the last
// cluster it validated, so that an unchanged cluster is not validated and
// indexed again. It is safe for concurrent use as long as its Policy and
// Placer are.
type Scheduler struct {
	policy Policy
	placer Placer
	// ownLayout: no Placer was configured, so a policy may realise its
	// own node layout when that places better than the Placer.
	ownLayout bool
	// clusters remembers the last cluster's validation and index: hosts
	// pass the same cluster round after round.
	clusters *clusterCache
}

// New returns a Scheduler for cfg. It fails with ErrInvalid for a nil
// pointer in Config.Policy or Config.Placer (a typed nil is not "unset")
// and for a built-in policy with invalid settings (negative MaxPasses,
// Population or Threshold, ...).
func New(cfg Config) (*Scheduler, error) {
	if isNilPointer(cfg.Policy) {
		return nil, fmt.Errorf("%w: Config.Policy is a nil %T; leave it nil for the default", ErrInvalid, cfg.Policy)
	}
	if isNilPointer(cfg.Placer) {
		return nil, fmt.Errorf("%w: Config.Placer is a nil %T; leave it nil for the default", ErrInvalid, cfg.Placer)
	}
	if v, ok := cfg.Policy.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, fmt.Errorf("Config.Policy: %w", err)
		}
	}
	s := &Scheduler{policy: cfg.Policy, placer: cfg.Placer, clusters: &clusterCache{}}
	if s.policy == nil {
		s.policy = Goodput{}
	}
	if s.placer == nil {
		rp := RoundPlacer{}
		switch g := s.policy.(type) {
		case Goodput:
			rp.Placer.AllowInterference = g.AllowInterference
		case *Goodput:
			rp.Placer.AllowInterference = g != nil && g.AllowInterference
		}
		s.placer = rp
		s.ownLayout = true
	}
	if rp, ok := s.placer.(RoundPlacer); ok && rp.cache == nil {
		rp.cache = s.clusters // one index per cluster for validation and placement
		s.placer = rp
	}
	return s, nil
}

// Schedule computes the plan for one round. It returns an error, naming
// the job or field, for invalid input (ErrInvalid, ErrUnknownType,
// ErrBadSpeedup), for a policy or placer that misbehaves (ErrPolicy,
// ErrPlacement) and when ctx is done. A job that cannot be served is never
// dropped: it gets a Queue (or Preempt) decision with a reason.
//
// The zero Scheduler schedules like New(Config{}) but caches nothing
// between rounds; a nil *Scheduler fails with ErrInvalid.
func (s *Scheduler) Schedule(ctx context.Context, in Input) (Plan, error) {
	if s == nil {
		return Plan{}, fmt.Errorf("%w: nil *Scheduler; build one with New", ErrInvalid)
	}
	if s.clusters == nil {
		// The zero value: the defaults, on a copy (s may be shared).
		d, err := New(Config{})
		if err != nil {
			return Plan{}, err
		}
		s = d
	}
	c, err := s.clusters.index(&in.Cluster)
	if err != nil {
		return Plan{}, err
	}
	x, err := analyzeIndexed(&in, c)
	if err != nil {
		return Plan{}, err
	}
	var targets []Target
	var placed *PlaceResult
	if a, ok := s.policy.(analyzed); ok {
		targets, placed, err = a.allocate(ctx, x, s.placer, s.ownLayout) // skips a second validation
	} else {
		targets, err = s.policy.Allocate(ctx, in)
	}
	if err != nil {
		return Plan{}, err
	}
	if err := ctx.Err(); err != nil {
		return Plan{}, err
	}
	tg, err := x.checkTargets(targets)
	if err != nil {
		return Plan{}, err
	}
	var res PlaceResult
	if placed != nil {
		res = *placed // the policy already realised these targets with s.placer
	} else if res, err = s.placer.Place(ctx, in.Cluster, x.currentAssignments(), x.toPlace(tg)); err != nil {
		return Plan{}, placeError(err)
	}
	assigned, unplaced, err := x.checkPlacement(res, tg)
	if err != nil {
		return Plan{}, err
	}
	for i := range x.jobs {
		// A job that kept devices its new target could not replace must
		// still be within its bounds; otherwise it stops.
		if j := &x.jobs[i]; unplaced[i] != "" && len(assigned[i]) > 0 && !j.pinned && !j.fits(len(assigned[i])) {
			assigned[i] = nil
		}
	}
	plan := Plan{Decisions: make([]Decision, 0, len(x.jobs))}
	for i := range x.jobs {
		plan.Decisions = append(plan.Decisions, x.decide(i, tg[i], assigned[i], unplaced[i]))
	}
	slices.SortFunc(plan.Decisions, func(a, b Decision) int { return cmp.Compare(a.Job, b.Job) })
	return plan, nil
}

// placeError wraps a Placer's error as ErrPlacement, except the context's
// own errors (cancelled, deadline exceeded), which are no placement fault
// and are returned so that errors.Is(err, context.DeadlineExceeded) holds.
func placeError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("placement: %w", err)
	}
	return fmt.Errorf("%w: %w", ErrPlacement, err)
}

// isNilPointer reports whether v holds a nil pointer (a typed nil, which
// is not == nil as an interface).
func isNilPointer(v any) bool {
	if v == nil {
		return false
	}
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// analyzed is implemented by the package's policies, which can work on
// the Scheduler's already validated instance.
type analyzed interface {
	// allocate returns the targets and, when it realised them itself
	// (with pl, or with its own layout when ownLayout allows), the
	// placement, which must be of x.pinTargets(targets).
	allocate(ctx context.Context, x *instance, pl Placer, ownLayout bool) ([]Target, *PlaceResult, error)
}

// checkTargets returns one target per job (index-aligned with x.jobs),
// zero-count for jobs the policy left out, with running non-preemptible
// jobs pinned to their current allocation.
func (x *instance) checkTargets(targets []Target) ([]Target, error) {
	tg := make([]Target, len(x.jobs))
	set := make([]bool, len(x.jobs))
	for k, t := range targets {
		i, ok := x.byID[t.Job]
		if !ok {
			return nil, fmt.Errorf("%w: targets[%d]: unknown job %q", ErrPolicy, k, t.Job)
		}
		if set[i] {
			return nil, fmt.Errorf("%w: targets[%d]: job %q appears twice", ErrPolicy, k, t.Job)
		}
		set[i] = true
		if t.Count < 0 {
			return nil, fmt.Errorf("%w: job %q: negative count %d", ErrPolicy, t.Job, t.Count)
		}
		if t.Count > 0 {
			ti, ok := x.typeIdx[t.Type]
			if !ok {
				return nil, fmt.Errorf("%w: job %q: type %q is not in the cluster", ErrPolicy, t.Job, t.Type)
			}
			if !x.jobs[i].pinned && !slices.Contains(x.jobs[i].allowed, ti) {
				return nil, fmt.Errorf("%w: job %q: type %q is not allowed for the job", ErrPolicy, t.Job, t.Type)
			}
			if t.Count > x.cap[ti] {
				return nil, fmt.Errorf("%w: job %q: %d %s devices, the cluster has %d", ErrPolicy, t.Job, t.Count, t.Type, x.cap[ti])
			}
			if j := &x.jobs[i]; !j.pinned && !j.fits(t.Count) {
				return nil, fmt.Errorf("%w: job %q: %d devices outside its bounds [%d, %d]", ErrPolicy, t.Job, t.Count, j.min, j.max)
			}
		}
		tg[i] = t
	}
	for i := range x.jobs {
		tg[i].Job = x.jobs[i].job.ID
		if tg[i].Count == 0 && !set[i] && tg[i].Reason == ReasonUnchanged {
			tg[i].Reason = ReasonNoCapacity
		}
	}
	return x.pinTargets(tg), nil
}

// pinTargets returns targets with running non-preemptible jobs set to
// their current allocation (a copy when it changes anything).
func (x *instance) pinTargets(tg []Target) []Target {
	out := tg
	copied := false
	for k, t := range tg {
		i, ok := x.byID[t.Job]
		if !ok || !x.jobs[i].pinned {
			continue
		}
		j := &x.jobs[i]
		if t.Count == j.curCount && t.Type == x.types[j.curType] && t.MaxNodes == 0 && t.Reason == ReasonPinned {
			continue
		}
		if !copied {
			out, copied = slices.Clone(tg), true
		}
		out[k].Type, out[k].Count, out[k].MaxNodes, out[k].Reason = x.types[j.curType], j.curCount, 0, ReasonPinned
	}
	return out
}

// currentAssignments returns the assignments in effect (Input.Current as
// validated), in job order: what a Placer starts from.
func (x *instance) currentAssignments() []placement.Assignment {
	var current []placement.Assignment
	for i := range x.jobs {
		if j := &x.jobs[i]; j.curCount > 0 {
			current = append(current, placement.Assignment{Job: j.job.ID, Devices: j.curDevs})
		}
	}
	return current
}

// toPlace returns the targets a Placer must realise: tg with running
// non-preemptible jobs pinned, zero counts left out (nil when none).
func (x *instance) toPlace(tg []Target) []Target {
	var pt []Target
	for _, t := range x.pinTargets(tg) {
		if t.Count > 0 {
			pt = append(pt, t)
		}
	}
	return pt
}

// checkPlacement validates a Placer's result against the targets.
func (x *instance) checkPlacement(res PlaceResult, tg []Target) ([][]string, []string, error) {
	assigned := make([][]string, len(x.jobs))
	unplaced := make([]string, len(x.jobs))
	done := make([]bool, len(x.jobs))
	placed := 0
	for _, a := range res.Assignments {
		placed += len(a.Devices)
	}
	used := make(map[string]string, placed)
	healthy := x.healthy
	kept := make(map[string]bool)
	for _, u := range res.Unplaced {
		kept[u.Job] = true
	}
	for _, a := range res.Assignments {
		i, ok := x.byID[a.Job]
		if !ok || tg[i].Count == 0 || done[i] {
			return nil, nil, fmt.Errorf("%w: unexpected assignment for job %q", ErrPlacement, a.Job)
		}
		done[i] = true
		want, typ := tg[i].Count, tg[i].Type
		if kept[a.Job] {
			// An unplaced job may keep what it held.
			if !sameDevices(a.Devices, x.jobs[i].curDevs) {
				return nil, nil, fmt.Errorf("%w: job %q: unplaced but given devices other than its own", ErrPlacement, a.Job)
			}
			want, typ = len(a.Devices), x.types[x.jobs[i].curType]
		}
		if len(a.Devices) != want {
			return nil, nil, fmt.Errorf("%w: job %q: %d devices placed, %d targeted", ErrPlacement, a.Job, len(a.Devices), want)
		}
		for _, id := range a.Devices {
			t, ok := x.devType[id]
			if !ok || x.types[t] != typ {
				return nil, nil, fmt.Errorf("%w: job %q: device %q is not a %s device of the cluster", ErrPlacement, a.Job, id, typ)
			}
			if !healthy[id] && !kept[a.Job] {
				return nil, nil, fmt.Errorf("%w: job %q: device %q is unhealthy", ErrPlacement, a.Job, id)
			}
			if o, dup := used[id]; dup {
				return nil, nil, fmt.Errorf("%w: device %q placed for jobs %q and %q", ErrPlacement, id, o, a.Job)
			}
			used[id] = a.Job
		}
		assigned[i] = slices.Clone(a.Devices)
	}
	for _, u := range res.Unplaced {
		if i, ok := x.byID[u.Job]; ok {
			unplaced[i] = u.Reason
			done[i] = true
		}
	}
	for i := range x.jobs {
		if tg[i].Count > 0 && !done[i] {
			unplaced[i] = "placer returned no assignment"
		}
	}
	return assigned, unplaced, nil
}

// decide builds the decision for job i.
func (x *instance) decide(i int, t Target, devs []string, unplaced string) Decision {
	j := &x.jobs[i]
	d := Decision{Job: j.job.ID, From: j.curCount, Reason: t.Reason}
	if j.curCount > 0 {
		d.FromType = x.types[j.curType]
		d.SpeedupBefore, _ = x.speedup(j, j.curType, j.curNodes, j.curCount)
	}
	if len(devs) > 0 {
		d.Type, d.To = x.types[x.devType[devs[0]]], len(devs)
		d.Assignment = placement.Assignment{Job: j.job.ID, Devices: devs}
		d.Nodes = x.gangNodes(j, devs)
		d.SpeedupAfter, _ = x.speedup(j, x.devType[devs[0]], d.Nodes, d.To)
		if bp, ok := j.job.Speedup.(goodput.BatchPlanner); ok {
			d.Batch = bp.BatchPlan(string(d.Type), d.Nodes, d.To)
		}
	} else {
		d.Assignment = placement.Assignment{Job: j.job.ID}
	}
	note := t.Note
	if unplaced != "" {
		d.Reason = ReasonUnplaceable
		note = "cannot place " + fmt.Sprint(t.Count) + "×" + string(t.Type) + ": " + unplaced
	}
	var head string
	switch {
	case d.To == 0 && d.From > 0:
		d.Action = Preempt
		head = fmt.Sprintf("preempted from %d×%s", d.From, d.FromType)
	case d.To == 0:
		d.Action = Queue
		head = "queued"
	case d.From == 0:
		d.Action = Start
		head = fmt.Sprintf("started on %d×%s (%d node%s)", d.To, d.Type, d.Nodes, plural(d.Nodes))
	case d.To > d.From:
		d.Action = Grow
		head = fmt.Sprintf("grew %d→%d", d.From, d.To)
	case d.To < d.From:
		d.Action = Shrink
		head = fmt.Sprintf("shrank %d→%d", d.From, d.To)
	case sameDevices(devs, j.curDevs):
		d.Action = Keep
		head = fmt.Sprintf("kept %d×%s", d.To, d.Type)
	default:
		d.Action = Move
		head = fmt.Sprintf("moved %d×%s→%d×%s", d.From, d.FromType, d.To, d.Type)
	}
	if d.Action == Keep && d.Reason == ReasonObjective {
		d.Reason = ReasonUnchanged
	}
	if note != "" {
		head += ": " + note
	}
	d.Message = head
	return d
}

// nodesOf returns the number of nodes devices devs span. A gang spans
// few nodes, so a short list beats a map.
func (x *instance) nodesOf(devs []string) int {
	var buf [16]string
	nodes := buf[:0]
	for _, id := range devs {
		if n := x.devNode[id]; !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	return len(nodes)
}

// gangNodes is nodesOf(devs) for job j, known without lookups when devs
// are the job's current devices in the same order.
func (x *instance) gangNodes(j *jobInfo, devs []string) int {
	if slices.Equal(devs, j.curDevs) {
		return j.curNodes
	}
	return x.nodesOf(devs)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sameDevices(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.Equal(a, b) {
		return true // the common case: devices kept in the same order
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
