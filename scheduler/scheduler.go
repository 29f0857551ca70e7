package scheduler

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

// Config configures a Scheduler. The zero value is valid: the Pollux
// policy with its defaults, realised by placement.RoundPlacer, avoiding
// interference.
type Config struct {
	// Policy decides each round's (type, count) per job; nil = Pollux{}.
	Policy Policy
	// Placer realises the policy's targets on concrete devices;
	// nil = placement.RoundPlacer{}, and then the policy may also offer
	// placements of its own (Round.Offer).
	Placer placement.Placer
	// AllowInterference lifts the rule that a node hosts at most one
	// distributed (multi-node) job. The one setting for it: the policy
	// reads it (Round.AllowInterference) and so does the Placer
	// (placement.PlaceInput.AllowInterference).
	AllowInterference bool
}

// Scheduler runs one scheduling round per Schedule call: it validates the
// Input, builds the Round, asks its Policy for targets, keeps running
// non-preemptible jobs on their devices, realises the targets through its
// Placer and returns a Plan with one Decision per job.
//
// A Scheduler holds no decision state between rounds (the host passes the
// assignments in effect as Input.Current); it only remembers the index of
// the last cluster it validated, so that an unchanged cluster is not
// validated and indexed again, and what its policy carries over between
// rounds (Round.Carry: the Pollux policy keeps the speedups it evaluated
// for jobs whose Speedup is a *goodput.Curve, immutable, so that a job
// that keeps its ID and curve is not evaluated again on the same
// allocation; the plan is the same either way). It is
// safe for concurrent use as long as its Policy and Placer are.
type Scheduler struct {
	policy            Policy
	placer            placement.Placer
	allowInterference bool
	// takesOffers: no Placer was configured, so a policy may offer its
	// own placement when that places better than the Placer.
	takesOffers bool
	clusters    *placement.IndexCache
	carried     *carrySlot
}

// New returns a Scheduler for cfg. It fails with ErrInvalid for a nil
// pointer in Config.Policy or Config.Placer (a typed nil is not "unset")
// and for a policy or placer whose Validate method fails (negative
// MaxPasses, Population or Threshold, ...).
func New(cfg Config) (*Scheduler, error) {
	for i, v := range []any{cfg.Policy, cfg.Placer} {
		name := [...]string{"Policy", "Placer"}[i]
		if isNilPointer(v) {
			return nil, fmt.Errorf("%w: Config.%s is a nil %T; leave it nil for the default", ErrInvalid, name, v)
		}
		if v, ok := v.(Validator); ok {
			if err := v.Validate(); err != nil {
				if !errors.Is(err, ErrInvalid) { // a placement.RoundPlacer's, say
					err = fmt.Errorf("%w: %w", ErrInvalid, err)
				}
				return nil, fmt.Errorf("Config.%s: %w", name, err)
			}
		}
	}
	s := &Scheduler{policy: cfg.Policy, placer: cfg.Placer, allowInterference: cfg.AllowInterference, clusters: &placement.IndexCache{}, carried: &carrySlot{}}
	if s.policy == nil {
		s.policy = Pollux{}
	}
	if s.placer == nil {
		s.placer, s.takesOffers = placement.RoundPlacer{}, true
	}
	return s, nil
}

// Schedule computes the plan for one round. It returns an error, naming
// the job or field, for invalid input (ErrInvalid, ErrUnknownType,
// ErrBadSpeedup), for a policy or placer that misbehaves (ErrPolicy,
// ErrPlacement) and when ctx is done. A job that cannot be served is never
// dropped: it gets a Queue (or Stop) decision with a reason.
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
		d.clusters = nil
		s = d
	}
	c, err := indexCluster(s.clusters, &in.Cluster)
	if err != nil {
		return Plan{}, err
	}
	r, err := newRound(&in, c, s.placer, s.allowInterference, s.takesOffers)
	if err != nil {
		return Plan{}, err
	}
	r.carried = s.carried.take()
	tg, err := r.allocate(ctx, s.policy)
	if err != nil {
		return Plan{}, err
	}
	s.carried.put(r.carried)
	ps, err := r.place(ctx, tg)
	if err != nil {
		return Plan{}, err
	}
	assigned, unplaced := ps.assigned, ps.unplaced
	if !ps.checked {
		if assigned, unplaced, err = r.checkPlacement(ps.res, tg); err != nil {
			return Plan{}, err
		}
	}
	for i := range r.jobs {
		// A job that kept devices its new target could not replace must
		// still be within its bounds; otherwise it stops.
		if j := &r.jobs[i]; unplaced[i] != nil && len(assigned[i]) > 0 && !j.Pinned && !j.fits(len(assigned[i])) {
			assigned[i] = nil
		}
	}
	plan := Plan{Decisions: make([]Decision, 0, len(r.jobs))}
	for _, i := range r.byIDOrder() {
		plan.Decisions = append(plan.Decisions, r.decide(i, tg[i], assigned[i], unplaced[i]))
	}
	plan.Queues = r.queueReport(assigned)
	for i := range r.jobs {
		plan.Tiers = tiers.Add(plan.Tiers, r.jobs[i].Job.Tier, r.jobs[i].curCount, len(assigned[i]), r.jobs[i].Guarantee)
	}
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

// checkTargets returns one target per job (index-aligned with r.jobs),
// zero-count for jobs the policy left out, with running non-preemptible
// jobs pinned to their current allocation.
func (r *Round) checkTargets(targets []Target) ([]Target, error) {
	tg := make([]Target, len(r.jobs))
	set := make([]bool, len(r.jobs))
	for k, t := range targets {
		// Policies mostly return their targets in job order: try position
		// k before the map.
		i, ok := k, k < len(r.jobs) && r.jobs[k].Job.ID == t.Job
		if !ok {
			i, ok = r.byID[t.Job]
		}
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
		if t.Count > 0 && len(t.Shares) > 0 {
			if err := r.checkShares(&r.jobs[i], &t); err != nil {
				return nil, err
			}
		} else if t.Count > 0 {
			j := &r.jobs[i]
			ti, ok := r.cluster.TypeIndex(t.Type)
			switch {
			case !ok:
				return nil, fmt.Errorf("%w: job %q: type %q is not in the cluster", ErrPolicy, t.Job, t.Type)
			case j.Pinned:
			case !slices.Contains(j.allowed, ti):
				return nil, fmt.Errorf("%w: job %q: type %q is not allowed for the job", ErrPolicy, t.Job, t.Type)
			case t.Count > r.cap[ti]:
				return nil, fmt.Errorf("%w: job %q: %d %s devices, the cluster has %d", ErrPolicy, t.Job, t.Count, t.Type, r.cap[ti])
			case !j.fits(t.Count):
				return nil, fmt.Errorf("%w: job %q: %d devices outside its bounds [%d, %d]", ErrPolicy, t.Job, t.Count, j.Min, j.Max)
			}
		}
		tg[i] = t
	}
	for i := range r.jobs {
		tg[i].Job = r.jobs[i].Job.ID
		if tg[i].Count == 0 && !set[i] && tg[i].Reason == ReasonUnchanged {
			tg[i].Reason = ReasonNoCapacity
		}
		if j := &r.jobs[i]; j.Pinned {
			tg[i].Type, tg[i].Count, tg[i].MaxNodes, tg[i].Reason = j.CurrentType, j.curCount, 0, ReasonPinned
			if !j.Job.NonPreemptible {
				tg[i].Reason = ReasonTier
			}
			tg[i].Shares = nil
			if j.mixedNow {
				tg[i].Shares = j.CurrentShares
			}
		}
	}
	for i := range r.jobs {
		// A running standard job's target below its guarantee is raised
		// to it, on its type (the tiers that pin are handled above).
		if j := &r.jobs[i]; !j.Pinned && tg[i].Count < j.Guarantee {
			tg[i] = Target{Job: j.Job.ID, Type: j.CurrentType, Count: j.Guarantee, Reason: ReasonTier, Note: "its tier keeps " + strconv.Itoa(j.Guarantee) + " devices"}
		}
	}
	return tg, nil
}

// toPlace returns the targets a Placer must realise: the checked targets
// tg with zero counts left out (nil when none), as placement reads them.
func (r *Round) toPlace(tg []Target) []placement.Target {
	n := 0
	for _, t := range tg {
		if t.Count > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	pt := make([]placement.Target, 0, n)
	for _, t := range tg {
		if t.Count > 0 {
			pt = append(pt, placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes})
		}
	}
	return pt
}

// checkPlacement validates a placement result against the checked
// targets: per job the devices it gets and, when its target was not met,
// why.
func (r *Round) checkPlacement(res placement.PlaceResult, tg []Target) ([][]string, []*placement.Reason, error) {
	assigned := make([][]string, len(r.jobs))
	unplaced := make([]*placement.Reason, len(r.jobs))
	done := make([]bool, len(r.jobs))
	placed := 0
	for _, a := range res.Assignments {
		placed += len(a.Devices)
	}
	// user[n] is 1 + the position in r.jobs of the job placed on device
	// number n (0 = none so far).
	user := make([]int32, r.cluster.Devices())
	// claim gives device number n (ID id) to job i, failing on a clash.
	claim := func(n int32, id string, i int) error {
		if o := user[n]; o != 0 {
			return fmt.Errorf("%w: device %q placed for jobs %q and %q", ErrPlacement, id, r.jobs[o-1].Job.ID, r.jobs[i].Job.ID)
		}
		user[n] = int32(i + 1)
		return nil
	}
	copies := make([]string, 0, placed) // the assigned devices, end to end
	var refs []placement.DeviceRef      // scratch: one assignment's devices
	kept := make(map[string]bool)
	for _, u := range res.Unplaced {
		kept[u.Target.Job] = true
	}
	for _, a := range res.Assignments {
		i, ok := r.byID[a.Job]
		if !ok || tg[i].Count == 0 || done[i] {
			return nil, nil, fmt.Errorf("%w: unexpected assignment for job %q", ErrPlacement, a.Job)
		}
		done[i] = true
		j := &r.jobs[i]
		want, typ := tg[i].Count, tg[i].Type
		if kept[a.Job] {
			// An unplaced job may keep what it held.
			if !placement.SameDevices(a.Devices, j.Current) {
				return nil, nil, fmt.Errorf("%w: job %q: unplaced but given devices other than its own", ErrPlacement, a.Job)
			}
			want, typ = len(a.Devices), j.CurrentType
		}
		if len(a.Devices) != want {
			return nil, nil, fmt.Errorf("%w: job %q: %d devices placed, %d targeted", ErrPlacement, a.Job, len(a.Devices), want)
		}
		mixed := len(tg[i].Shares) > 1 || j.mixedNow
		if mixed && !kept[a.Job] && !r.gangTypesOK(tg[i], a.Devices) {
			return nil, nil, fmt.Errorf("%w: job %q: devices placed are not the types its target shares", ErrPlacement, a.Job)
		}
		if (typ == j.CurrentType || mixed) && (j.curUsable || kept[a.Job]) && slices.Equal(a.Devices, j.Current) {
			// Its own devices, checked when the round began: of its type,
			// usable (or kept as they are); only a clash is left to find.
			for k, n := range j.curNums {
				if err := claim(n, a.Devices[k], i); err != nil {
					return nil, nil, err
				}
			}
		} else {
			var known bool
			refs, known = r.cluster.AppendRefs(refs[:0], a.Devices)
			for p, d := range refs {
				id := a.Devices[p]
				if !mixed && r.types[d.Type] != typ {
					return nil, nil, fmt.Errorf("%w: job %q: device %q is not a %s device of the cluster", ErrPlacement, a.Job, id, typ)
				}
				if !d.Usable && !kept[a.Job] {
					return nil, nil, fmt.Errorf("%w: job %q: device %q is unhealthy or not offered", ErrPlacement, a.Job, id)
				}
				if err := claim(int32(d.Num), id, i); err != nil {
					return nil, nil, err
				}
			}
			if !known {
				return nil, nil, fmt.Errorf("%w: job %q: device %q is not a %s device of the cluster", ErrPlacement, a.Job, a.Devices[len(refs)], typ)
			}
		}
		assigned[i] = appendCopy(&copies, a.Devices)
	}
	for _, u := range res.Unplaced {
		if i, ok := r.byID[u.Target.Job]; ok {
			unplaced[i] = &u.Reason
			done[i] = true
		}
	}
	for i := range r.jobs {
		if tg[i].Count > 0 && !done[i] {
			unplaced[i] = &placement.Reason{Text: "placer returned no assignment"}
		}
	}
	return assigned, unplaced, nil
}

// unplacedReasons maps the placement package's codes onto Reasons.
var unplacedReasons = map[placement.ReasonCode]Reason{
	placement.ReasonCapacity:     ReasonNoCapacity,
	placement.ReasonFragmented:   ReasonFragmented,
	placement.ReasonTopology:     ReasonTopology,
	placement.ReasonInterference: ReasonInterference,
	placement.ReasonFiltered:     ReasonFiltered,
	placement.ReasonUnhealthy:    ReasonUnhealthy,
}

// decide builds the decision for job i.
func (r *Round) decide(i int, t Target, devs []string, unplaced *placement.Reason) Decision {
	j := &r.jobs[i]
	d := Decision{Job: j.Job.ID, From: j.curCount, Reason: t.Reason}
	if j.mixedNow {
		d.SpeedupBefore, _ = r.gangSpeedup(j, j.CurrentShares, j.CurrentNodes)
	} else if j.curCount > 0 {
		d.FromType = j.CurrentType
		d.SpeedupBefore, _ = r.speedup(j, j.curType, j.CurrentNodes, j.curCount)
	}
	if len(devs) > 0 {
		d.Type, d.To, d.Nodes, d.SpeedupAfter = j.CurrentType, j.curCount, j.CurrentNodes, d.SpeedupBefore
		if !slices.Equal(devs, j.Current) {
			dev, _ := r.cluster.Ref(devs[0])
			d.Type, d.To, d.Nodes = r.types[dev.Type], len(devs), r.cluster.NodesOf(devs)
			d.SpeedupAfter, _ = r.speedup(j, dev.Type, d.Nodes, d.To)
		}
		d.Assignment = placement.Assignment{Job: j.Job.ID, Devices: devs}
		if j.Job.Workers > 0 {
			shares := t.Shares // the workers go as they say, or as the job holds them
			if placement.SameDevices(devs, j.Current) && len(j.CurrentShares) > 0 {
				shares = j.CurrentShares
			}
			d.Assignment.Workers = r.cluster.Workers(devs, j.Job.Workers, shares)
			if sh := r.cluster.Shares(devs, d.Assignment.Workers); len(sh) > 1 {
				d.Type, d.Shares = "", sh
				d.SpeedupAfter, _ = r.gangSpeedup(j, sh, d.Nodes)
			}
		}
		if bp, ok := j.Job.Speedup.(goodput.BatchPlanner); ok {
			d.Batch = bp.BatchPlan(string(d.Type), d.Nodes, d.To)
		}
	} else {
		d.Assignment = placement.Assignment{Job: j.Job.ID}
	}
	note := t.Note
	if unplaced != nil {
		code, ok := unplacedReasons[unplaced.Code]
		if !ok {
			code = ReasonUnplaceable
		}
		why := unplaced.Text
		if why == "" {
			why = unplaced.Code.String()
		}
		if unplaced.Code != placement.ReasonNone {
			why += " (" + unplaced.Code.String() + ")"
		}
		d.Reason = code
		note = "cannot place " + strconv.Itoa(t.Count) + "×" + string(t.Type) + ": " + why
	}
	// The message is built with strconv rather than fmt: this runs once
	// per job and round.
	var buf [96]byte
	msg := buf[:0]
	from := func(b []byte) []byte {
		if j.mixedNow {
			return appendShares(b, j.CurrentShares)
		}
		return appendCount(b, d.From, d.FromType)
	}
	to := func(b []byte) []byte {
		if d.Shares != nil {
			return appendShares(b, d.Shares)
		}
		return appendCount(b, d.To, d.Type)
	}
	d.Action = placement.ActionOf(j.Current, devs)
	switch d.Action {
	case placement.Stop:
		msg = from(append(msg, "preempted from "...))
	case placement.Queue:
		msg = append(msg, "queued"...)
	case placement.Start:
		msg = to(append(msg, "started on "...))
		msg = append(strconv.AppendInt(append(msg, " ("...), int64(d.Nodes), 10), " node"...)
		msg = append(append(msg, plural(d.Nodes)...), ')')
	case placement.Keep:
		msg = to(append(msg, "kept "...))
	case placement.Grow:
		msg = strconv.AppendInt(append(strconv.AppendInt(append(msg, "grew "...), int64(d.From), 10), "→"...), int64(d.To), 10)
	case placement.Shrink:
		msg = strconv.AppendInt(append(strconv.AppendInt(append(msg, "shrank "...), int64(d.From), 10), "→"...), int64(d.To), 10)
	default:
		msg = to(append(from(append(msg, "moved "...)), "→"...))
	}
	if d.Action == placement.Keep && d.Reason == ReasonObjective {
		d.Reason = ReasonUnchanged
	}
	if note == "" {
		d.Message = string(msg)
		return d
	}
	// A long policy note would outgrow buf (and be copied twice): size
	// the message once.
	var b strings.Builder
	b.Grow(len(msg) + 2 + len(note))
	b.Write(msg)
	b.WriteString(": ")
	b.WriteString(note)
	d.Message = b.String()
	return d
}

// appendShares appends "n×t+m×u" to b.
func appendShares(b []byte, sh []placement.Share) []byte {
	for k, x := range sh {
		if k > 0 {
			b = append(b, '+')
		}
		b = appendCount(b, x.Count, x.Type)
	}
	return b
}

// appendCount appends "n×t" to b.
func appendCount(b []byte, n int, t accel.TypeKey) []byte {
	return append(append(strconv.AppendInt(b, int64(n), 10), "×"...), t...)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// carrySlot keeps what policies carry over from one round to the next
// (Round.Carry). A round takes the values and gives them back when its
// policy has allocated without error; a round that runs meanwhile finds
// none and starts afresh.
type carrySlot struct {
	mu sync.Mutex
	m  map[any]any
}

// take returns the kept values, or an empty map when there are none; nil
// on the zero Scheduler (nothing is kept).
func (cs *carrySlot) take() map[any]any {
	if cs == nil {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	m := cs.m
	cs.m = nil
	if m == nil {
		m = make(map[any]any)
	}
	return m
}

// put keeps m for the next round.
func (cs *carrySlot) put(m map[any]any) {
	if cs == nil || m == nil {
		return
	}
	cs.mu.Lock()
	cs.m = m
	cs.mu.Unlock()
}

// indexCluster validates c and indexes it, through cache (nil: none).
func indexCluster(cache *placement.IndexCache, c *accel.Cluster) (*placement.Index, error) {
	x, err := cache.Index(c)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster: %w", ErrInvalid, err)
	}
	return x, nil
}
