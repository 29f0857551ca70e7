package scheduler

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

// Round is the validated view of one scheduling round that the Scheduler
// hands its Policy: the Input, the cluster's index, each job with its
// effective bounds and current allocation, and Place, which tries targets
// with the Scheduler's Placer. Built-in and user policies get the same
// view, so a policy that wraps another and forwards its targets gets the
// same plan.
//
// A Round lives for one Schedule call and is used by one goroutine; it is
// never modified by its accessors, and what they return must not be
// modified.
type Round struct {
	in      *Input
	cluster *placement.Index
	types   []accel.TypeKey
	cap     []int // usable devices per type
	perNode []int // most usable devices of a type on one node
	total   int
	jobs    []jobInfo // in Input.Jobs order
	byID    map[string]int
	current []placement.Assignment // the validated Input.Current of live jobs, in job order

	placer            placement.Placer
	allowInterference bool
	takesOffers       bool
	state             *placement.State // the usage in effect, built on the first Place
	// placed remembers the result of every target set placed or offered
	// this round, so that Schedule realises the policy's final targets
	// without placing (or checking an offer) again.
	placed []placedSet
	// quota is the round's quota tree and entitlements (nil without
	// Input.Queues).
	quota *quota.Entitlements
	// carried holds what policies carry over between the rounds of one
	// Scheduler (Carry; nil: nothing is kept).
	carried map[any]any
	// gangsNow: some job holds devices of several types.
	gangsNow bool
}

// RoundJob is one job of a Round: its Job and what validation derived
// from it.
type RoundJob struct {
	// Job is the job as the Input gives it.
	Job *Job
	// Types are the device types it may use, sorted: Job.Types, or every
	// type of the cluster.
	Types []accel.TypeKey
	// Min and Max are its effective device-count bounds: Requested (or
	// MinReplicas, or 1) for both when rigid; MinReplicas (at least 1) and
	// MaxReplicas (0 = every usable device of the cluster) otherwise.
	Min, Max int
	// Current are the devices it holds when the round starts (nil when
	// none), all of CurrentType, on CurrentNodes nodes.
	Current      []string
	CurrentType  accel.TypeKey
	CurrentNodes int
	// Pinned: it runs and is non-preemptible (or its Tier pins it), so
	// it keeps Current.
	Pinned bool
	// Guarantee is the fewest devices its Tier lets it keep this round
	// (0 = none): Current's count for a running premium job, the standard
	// share for a running standard one. The framework raises a target
	// below it.
	Guarantee int
	// CurrentShares, for a running W-job (Job.Workers > 0), are its
	// current devices per type with the workers they host; when they
	// span several types, CurrentType is the type with the most devices.
	CurrentShares []placement.Share
	// Mixes: the job is a W-job whose Speedup implements
	// goodput.GangSpeedup, so its target may hold several types (Shares).
	Mixes bool
	// Age is Input.Now − Job.Submitted (0 when negative).
	Age time.Duration
	// Weight is Job.Weight, 0 read as 1.
	Weight float64
}

// jobInfo is a RoundJob with type positions (in Round.types) for the
// package's own loops.
type jobInfo struct {
	RoundJob
	allowed  []int // positions of Types
	curType  int   // position of CurrentType, −1 when not running
	curCount int
	// curNums are the numbers (placement.DeviceRef.Num) of Current, in
	// its order; curUsable reports that every one of them is usable.
	curNums   []int32
	curUsable bool
	// curSpeedup is the Speedup of the current allocation once speedup
	// has evaluated it (curKnown): the policy and decide both ask for it.
	curSpeedup float64
	curKnown   bool
	rigid      bool
	// mixedNow: the job holds devices of several types (a W-job).
	mixedNow bool
}

// isCurrent reports whether (type t, nodes, count) is the job's current
// allocation.
func (j *jobInfo) isCurrent(t, nodes, count int) bool {
	return !j.mixedNow && t == j.curType && nodes == j.CurrentNodes && count == j.curCount
}

// fits reports whether count is within the job's bounds.
func (j *jobInfo) fits(count int) bool { return count >= j.Min && count <= j.Max }

// NewRound validates in and returns the view of it that a Scheduler built
// by New(Config{}) hands its policy: for calling a policy on its own (in
// tests, or to inspect its targets). Place then uses placement.RoundPlacer.
func NewRound(in Input) (*Round, error) {
	c, err := indexCluster(nil, &in.Cluster)
	if err != nil {
		return nil, err
	}
	return newRound(&in, c, placement.RoundPlacer{}, false, true)
}

// Input returns the round's input.
func (r *Round) Input() *Input { return r.in }

// Cluster returns the index of the round's cluster: types, usable
// capacities, device lookups.
func (r *Round) Cluster() *placement.Index { return r.cluster }

// Jobs returns the round's jobs in Input.Jobs order.
func (r *Round) Jobs() []RoundJob {
	out := make([]RoundJob, len(r.jobs))
	for i := range r.jobs {
		out[i] = r.jobs[i].RoundJob
	}
	return out
}

// Job returns the job with the given ID.
func (r *Round) Job(id string) (RoundJob, bool) {
	i, ok := r.byID[id]
	if !ok {
		return RoundJob{}, false
	}
	return r.jobs[i].RoundJob, true
}

// Speedup returns job id's Speedup on count devices of type t spread over
// nodes nodes, checked (ErrBadSpeedup); 0 for count ≤ 0.
func (r *Round) Speedup(id string, t accel.TypeKey, nodes, count int) (float64, error) {
	i, ok := r.byID[id]
	if !ok {
		return 0, fmt.Errorf("%w: unknown job %q", ErrInvalid, id)
	}
	ti, ok := r.cluster.TypeIndex(t)
	if !ok {
		return 0, fmt.Errorf("%w: type %q is not in the cluster", ErrUnknownType, t)
	}
	return r.speedup(&r.jobs[i], ti, nodes, count)
}

// AllowInterference reports whether distributed (multi-node) jobs may
// share nodes this round (Config.AllowInterference); policies that model
// placement read it, as the Placer does.
func (r *Round) AllowInterference() bool { return r.allowInterference }

// Place realises targets with the Scheduler's Placer, from the
// assignments in effect, and returns the result; running non-preemptible
// jobs are pinned to their devices first, and targets are checked as
// Schedule checks the policy's (ErrPolicy). A policy may place several
// candidate target sets and return the one it likes best: Schedule then
// uses the result Place gave for it instead of placing it again.
func (r *Round) Place(ctx context.Context, targets []Target) (placement.PlaceResult, error) {
	tg, err := r.checkTargets(targets)
	if err != nil {
		return placement.PlaceResult{}, err
	}
	ps, err := r.place(ctx, tg)
	if err != nil {
		return placement.PlaceResult{}, err
	}
	return ps.res, nil
}

// Carry returns the value a policy keeps under key between the rounds of
// one Scheduler: what an earlier round stored there, or fresh(), stored
// for the rounds to come. Values are kept only when the policy's
// Allocate succeeds, and a round that runs while another holds them
// starts afresh, so they must not change the plan (caches of pure
// evaluations: the Pollux policy keeps its speedup memo there). Keys
// follow context.Context's rule: an unexported type of the policy's
// package. Carry returns nil when the Round keeps nothing (NewRound, the
// zero Scheduler).
func (r *Round) Carry(key any, fresh func() any) any {
	if r.carried == nil {
		return nil
	}
	v, ok := r.carried[key]
	if !ok {
		v = fresh()
		r.carried[key] = v
	}
	return v
}

// TakesOffers reports whether the Scheduler accepts placements that the
// policy computed itself (Offer): true when it was built without a
// Placer of the host's choosing.
//
// It is false in a round where a job holds devices of several types (a
// W-job's gang): such gangs are placed per type by the Placer.
func (r *Round) TakesOffers() bool { return r.takesOffers && !r.gangsNow }

// Offer records res as the placement of targets, computed by the policy
// itself: when the policy returns these targets, Schedule uses res. Offer
// checks res as Schedule checks a Placer's result, and fails with
// ErrPolicy when the Round does not take offers or res does not realise
// targets.
func (r *Round) Offer(targets []Target, res placement.PlaceResult) error {
	if !r.TakesOffers() {
		return fmt.Errorf("%w: this round takes no offered placements (the Scheduler has a Placer of its own, or a job holds devices of several types)", ErrPolicy)
	}
	tg, err := r.checkTargets(targets)
	if err != nil {
		return err
	}
	assigned, unplaced, err := r.checkPlacement(res, tg)
	if err != nil {
		return fmt.Errorf("%w: offered placement: %w", ErrPolicy, err)
	}
	r.remember(placedSet{targets: r.toPlace(tg), res: res, checked: true, assigned: assigned, unplaced: unplaced})
	return nil
}

// placedSet is a target set placed or offered this round.
type placedSet struct {
	targets []placement.Target // as toPlace gives them
	res     placement.PlaceResult
	// checked: res was checked (an offer), with this result of
	// checkPlacement.
	checked  bool
	assigned [][]string
	unplaced []*placement.Reason
}

// remember records ps, replacing the entry of the same targets.
func (r *Round) remember(ps placedSet) {
	for k := range r.placed {
		if slices.Equal(r.placed[k].targets, ps.targets) {
			r.placed[k] = ps
			return
		}
	}
	r.placed = append(r.placed, ps)
}

// place realises the checked targets tg (index-aligned with r.jobs),
// reusing the result of an earlier Place or Offer of the same targets.
// When gangs of several types are involved (a target with Shares, or a
// W-job that holds such a gang), every such job's current devices and
// target are split per type into parts with IDs of their own
// (placement.GangPart), the Placer places the parts as it places any
// gang, and each job's parts are joined again: a job one of whose parts
// cannot be placed keeps its current devices if the Placer left it every
// one of them, and otherwise does not run this round.
func (r *Round) place(ctx context.Context, tg []Target) (*placedSet, error) {
	pt := r.toPlace(tg)
	for k := range r.placed {
		if slices.Equal(r.placed[k].targets, pt) {
			return &r.placed[k], nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in := placement.PlaceInput{Cluster: r.cluster, Current: r.current, Targets: pt, AllowInterference: r.allowInterference, Speeds: r.in.Speeds}
	split := r.mixedGangs(tg)
	if split != nil {
		in.Current, in.Targets, in.Speeds = r.cluster.SplitGangs(r.current, func(job string) bool { return split[job] }), nil, nil
		for _, t := range pt {
			i := r.byID[t.Job]
			switch {
			case !split[t.Job]:
				in.Targets = append(in.Targets, t)
			case len(tg[i].Shares) > 1:
				for _, s := range tg[i].Shares {
					in.Targets = append(in.Targets, placement.Target{Job: placement.GangPart(t.Job, s.Type), Type: s.Type, Count: s.Count, MaxNodes: t.MaxNodes})
				}
			default:
				in.Targets = append(in.Targets, placement.Target{Job: placement.GangPart(t.Job, t.Type), Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes})
			}
		}
	}
	if su, ok := r.placer.(placement.StateUser); !ok || su.UsesState() {
		var err error
		switch {
		case split != nil: // the parts' usage, for this placement only
			in.State, err = r.cluster.NewState(in.Current)
		case r.state == nil: // the usage in effect, kept for the round
			r.state, err = r.cluster.NewState(in.Current)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if in.State == nil {
			in.State = r.state.Clone()
		}
	}
	res, err := r.placer.Place(ctx, in)
	if err != nil {
		return nil, placeError(err)
	}
	ps := placedSet{targets: pt, res: res}
	if split != nil {
		ps.res.Assignments, ps.res.Unplaced = placement.JoinGangs(res.Assignments, res.Unplaced, func(job string) []string {
			return r.jobs[r.byID[job]].Current
		})
		if ps.assigned, ps.unplaced, err = r.checkPlacement(ps.res, tg); err != nil {
			return nil, err
		}
		ps.checked = true
	}
	r.placed = append(r.placed, ps)
	return &r.placed[len(r.placed)-1], nil
}

// newRound validates in (whose cluster c indexes) and builds its view.
func newRound(in *Input, c *placement.Index, pl placement.Placer, allowInterference, takesOffers bool) (*Round, error) {
	if err := checkGrid(in); err != nil {
		return nil, err
	}
	r := &Round{in: in, cluster: c, types: c.Types(), placer: pl, allowInterference: allowInterference,
		takesOffers: takesOffers}
	nt := len(r.types)
	r.cap, r.perNode = make([]int, nt), make([]int, nt)
	for t, tk := range r.types {
		r.cap[t], r.perNode[t], _ = c.Usable(tk)
		r.total += r.cap[t]
	}
	r.byID = make(map[string]int, len(in.Jobs))
	r.jobs = make([]jobInfo, len(in.Jobs))
	every := make([]int, nt) // the allowed types of a job without Types, shared
	for t := range every {
		every[t] = t
	}
	for i := range in.Jobs {
		j := &in.Jobs[i]
		if err := checkJob(i, j); err != nil {
			return nil, err
		}
		if r.byID[j.ID] = i; len(r.byID) == i { // one map operation per job, not two
			return nil, fmt.Errorf("%w: job %q: duplicate ID", ErrInvalid, j.ID)
		}
		ji := jobInfo{RoundJob: RoundJob{Job: j, Weight: j.Weight}, curType: -1}
		if ji.Weight == 0 {
			ji.Weight = 1
		}
		if len(j.Types) == 0 {
			ji.allowed, ji.Types = every, slices.Clip(r.types) // clipped: an append copies
		} else {
			ji.allowed = make([]int, 0, len(j.Types))
			for _, tk := range j.Types {
				t, ok := c.TypeIndex(tk)
				if !ok {
					return nil, fmt.Errorf("%w: job %q asks for %q, which the cluster lacks", ErrUnknownType, j.ID, tk)
				}
				ji.allowed = append(ji.allowed, t)
			}
			slices.Sort(ji.allowed)
			ji.allowed = slices.Compact(ji.allowed)
			ji.Types = make([]accel.TypeKey, len(ji.allowed))
			for k, t := range ji.allowed {
				ji.Types[k] = r.types[t]
			}
		}
		if j.Kind == Rigid {
			ji.rigid = true
			ji.Min, ji.Max = j.requested(), j.requested()
		} else {
			ji.Min = max(j.MinReplicas, 1)
			ji.Max = j.MaxReplicas
			if ji.Max == 0 {
				ji.Max = max(r.total, ji.Min)
			}
		}
		if err := r.checkWorkers(&ji); err != nil {
			return nil, err
		}
		if d := in.Now.Sub(j.Submitted); d > 0 {
			ji.Age = d
		}
		if isNilPointer(j.Speedup) {
			return nil, fmt.Errorf("%w: job %q: Speedup is a nil %T", ErrInvalid, j.ID, j.Speedup)
		}
		if err := r.checkSpeedupTypes(j); err != nil {
			return nil, err
		}
		for _, t := range ji.allowed {
			if _, err := r.speedup(&ji, t, 1, 1); err != nil {
				return nil, err
			}
		}
		r.jobs[i] = ji
	}
	qt, leaves, err := checkQueues(in.Queues, in.Jobs)
	if err != nil {
		return nil, err
	}
	if err := r.checkCurrent(); err != nil {
		return nil, err
	}
	for i := range r.jobs {
		r.gangsNow = r.gangsNow || r.jobs[i].mixedNow
		if j := &r.jobs[i]; j.curCount > 0 {
			r.current = append(r.current, placement.Assignment{Job: j.Job.ID, Devices: j.Current})
		}
	}
	if qt != nil {
		r.quota = r.entitle(qt, leaves)
	}
	return r, nil
}

// checkJob validates one job's own fields.
func checkJob(i int, j *Job) error {
	switch {
	case j.ID == "":
		return fmt.Errorf("%w: jobs[%d]: empty ID", ErrInvalid, i)
	case j.MinReplicas < 0 || j.MaxReplicas < 0 || j.Requested < 0:
		return fmt.Errorf("%w: job %q: negative replica count", ErrInvalid, j.ID)
	case j.MaxReplicas > 0 && j.MinReplicas > j.MaxReplicas:
		return fmt.Errorf("%w: job %q: min replicas %d > max replicas %d", ErrInvalid, j.ID, j.MinReplicas, j.MaxReplicas)
	case math.IsNaN(j.Weight) || math.IsInf(j.Weight, 0) || j.Weight < 0:
		return fmt.Errorf("%w: job %q: weight %v", ErrInvalid, j.ID, j.Weight)
	case !j.Tier.Valid():
		return fmt.Errorf("%w: job %q: tier %d", tiers.ErrUnknown, j.ID, int(j.Tier))
	case j.Kind < Rigid || j.Kind > Adaptive:
		return fmt.Errorf("%w: job %q: unknown kind %d", ErrInvalid, j.ID, int(j.Kind))
	case j.Attained < 0 || j.Restarts < 0:
		return fmt.Errorf("%w: job %q: negative attained service or restarts", ErrInvalid, j.ID)
	case math.IsNaN(j.RemainingWork) || math.IsInf(j.RemainingWork, 0) || j.RemainingWork < 0:
		return fmt.Errorf("%w: job %q: remaining work %v", ErrInvalid, j.ID, j.RemainingWork)
	case !j.Deadline.IsZero() && j.Deadline.Before(j.Submitted):
		return fmt.Errorf("%w: job %q: Deadline %v is before Submitted %v", ErrInvalid, j.ID, j.Deadline, j.Submitted)
	}
	return nil
}

// checkCurrent validates Input.Current and records each live job's
// current allocation.
func (r *Round) checkCurrent() error {
	held := 0
	for _, a := range r.in.Current {
		held += len(a.Devices)
	}
	// holder[n] is 1 + the position in Current of the entry holding device
	// number n (0 = none so far).
	holder := make([]int32, r.cluster.Devices())
	var gone map[string]bool // finished jobs seen in Current
	// The live jobs' Current and curNums are copies, end to end in one
	// array each.
	copies := make([]string, 0, held)
	nums := make([]int32, 0, held)
	var refs []placement.DeviceRef // scratch: one entry's devices
	var nodes []int32              // scratch: their node numbers
	for k, a := range r.in.Current {
		// Every entry is checked, a finished job's too: its devices must
		// exist and not be held twice, though they are then released.
		var known bool
		refs, known = r.cluster.AppendRefs(refs[:0], a.Devices)
		typ, usable := -1, true
		n0 := len(nums)
		nodes = nodes[:0]
		wi, live := r.byID[a.Job]
		mixes := live && r.jobs[wi].Job.Workers > 0
		for p, d := range refs {
			id := a.Devices[p]
			if h := holder[d.Num]; h != 0 {
				return fmt.Errorf("%w: current[%d]: job %q: device %q is also held by job %q", ErrInvalid, k, a.Job, id, r.in.Current[h-1].Job)
			}
			holder[d.Num] = int32(k + 1)
			if typ >= 0 && d.Type != typ && !mixes {
				// Only a W-job's gang may span types (Job.Workers).
				return fmt.Errorf("%w: current[%d]: job %q holds %s and %s devices; an assignment uses one device type", ErrInvalid, k, a.Job, r.types[typ], r.types[d.Type])
			}
			typ, usable = d.Type, usable && d.Usable
			nums = append(nums, int32(d.Num))
			nodes = append(nodes, int32(d.Node))
		}
		if !known {
			return fmt.Errorf("%w: current[%d]: job %q: device %q is not in the cluster", ErrInvalid, k, a.Job, a.Devices[len(refs)])
		}
		i, ok := r.byID[a.Job]
		if !ok {
			// A finished job: its devices are released.
			if gone[a.Job] {
				return fmt.Errorf("%w: current[%d]: job %q has two assignments", ErrInvalid, k, a.Job)
			}
			if gone == nil {
				gone = make(map[string]bool)
			}
			gone[a.Job] = true
			nums = nums[:n0]
			continue
		}
		ji := &r.jobs[i]
		if ji.Current != nil {
			return fmt.Errorf("%w: current[%d]: job %q has two assignments", ErrInvalid, k, a.Job)
		}
		ji.Current = appendCopy(&copies, a.Devices)
		if len(a.Devices) == 0 {
			continue
		}
		ji.curNums, ji.curUsable = nums[n0:len(nums):len(nums)], usable
		ji.curType, ji.curCount, ji.CurrentNodes = typ, len(a.Devices), distinct(nodes)
		ji.CurrentType = r.types[typ]
		if err := r.checkCurrentWorkers(k, ji, &r.in.Current[k]); err != nil {
			return err
		}
		// Pinned: kept on exactly these devices whatever its Types,
		// bounds or the policy say (see Job.NonPreemptible).
		ji.Guarantee = tiers.Guarantee(ji.Job.Tier, ji.Min, ji.Job.requested(), ji.curCount)
		ji.Pinned = ji.Job.NonPreemptible || tiers.Pins(ji.Job.Tier, ji.curCount, ji.Guarantee, !ji.rigid && !ji.mixedNow)
	}
	return nil
}

// distinct returns how many distinct numbers ns holds, sorting it.
func distinct(ns []int32) int {
	slices.Sort(ns)
	return len(slices.Compact(ns))
}

// checkSpeedupTypes rejects a job whose Speedup (a goodput.Curve, or any
// other that lists its types) has a model under a key that names a
// cluster type in another spelling: measurements under "a100" never match
// the cluster's "a100-40gb" and would leave the job on a silent linear
// speedup. Keys of types the cluster lacks are allowed (a job's profiles
// may cover types elsewhere); malformed keys are not.
func (r *Round) checkSpeedupTypes(j *Job) error {
	ts, ok := j.Speedup.(goodput.TypeLister)
	if !ok {
		return nil
	}
	for _, typ := range ts.Types() {
		if typ == goodput.AnyType {
			continue
		}
		if _, ok := r.cluster.TypeIndex(accel.TypeKey(typ)); ok {
			continue
		}
		c, err := accel.CanonicalType(typ)
		if err != nil {
			return fmt.Errorf("%w: job %q: its Speedup has a model for %q: %w", ErrUnknownType, j.ID, typ, err)
		}
		for _, ct := range r.types {
			if cc, _ := accel.CanonicalType(string(ct)); cc == c {
				return fmt.Errorf("%w: job %q: its Speedup has a model for %q, which the cluster calls %q (both are %q); key measurements by the cluster's accel.TypeKey", ErrUnknownType, j.ID, typ, ct, c)
			}
		}
	}
	return nil
}

// requested returns the count a rigid job runs on.
func (j *Job) requested() int {
	switch {
	case j.Requested > 0:
		return j.Requested
	case j.MinReplicas > 0:
		return j.MinReplicas
	}
	return 1
}

// speedup evaluates job j's Speedup on (type t, nodes, count) and checks
// it, remembering the value of the current allocation.
func (r *Round) speedup(j *jobInfo, t, nodes, count int) (float64, error) {
	v, err := r.evalSpeedup(j, t, nodes, count)
	if err == nil && !j.curKnown && count > 0 && j.isCurrent(t, nodes, count) {
		j.curSpeedup, j.curKnown = v, true
	}
	return v, err
}

// evalSpeedup is speedup without remembering the current allocation's
// value (it reads it once remembered): goroutines may call it at once, as
// the goodput engine's starts do, while none calls speedup.
func (r *Round) evalSpeedup(j *jobInfo, t, nodes, count int) (float64, error) {
	if count <= 0 {
		return 0, nil
	}
	if j.Job.Speedup == nil {
		return float64(count), nil
	}
	if j.curKnown && j.isCurrent(t, nodes, count) {
		return j.curSpeedup, nil
	}
	v := j.Job.Speedup.Speedup(string(r.types[t]), nodes, count)
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%w: job %q: speedup(%s, %d nodes, %d replicas) = %v", ErrBadSpeedup, j.Job.ID, r.types[t], nodes, count, v)
	}
	return v, nil
}

// packedNodes is the consolidated node count of count devices of type t:
// ceil(count / devices per node), what a consolidating placement achieves.
func (r *Round) packedNodes(t, count int) int {
	if count <= 0 {
		return 0
	}
	d := max(r.perNode[t], 1)
	return (count + d - 1) / d
}

// byIDOrder returns the job positions sorted by job ID.
func (r *Round) byIDOrder() []int {
	// Sorted as (ID, position) pairs, side by side in memory: comparing
	// through the jobs themselves misses the cache at 50,000 jobs.
	type entry struct {
		id string
		i  int
	}
	ids := make([]entry, len(r.jobs))
	for i := range r.jobs {
		ids[i] = entry{r.jobs[i].Job.ID, i}
	}
	slices.SortFunc(ids, func(a, b entry) int { return strings.Compare(a.id, b.id) })
	order := make([]int, len(ids))
	for k, e := range ids {
		order[k] = e.i
	}
	return order
}

// appendCopy returns a copy of devs stored at the end of *buf (nil stays
// nil, as slices.Clone keeps it): one array holds the copies of many
// lists, and each copy's capacity ends with it, so appending to one never
// overwrites the next.
func appendCopy(buf *[]string, devs []string) []string {
	if devs == nil {
		return nil
	}
	n := len(*buf)
	*buf = append(*buf, devs...)
	return (*buf)[n:len(*buf):len(*buf)]
}

// Limit narrows one job of a restricted Round (Round.Restrict).
type Limit struct {
	// Job is the job's ID.
	Job string
	// Out leaves the job out of the restricted Round: a policy called
	// with it sees no such job, so the job gets nothing.
	Out bool
	// Max, when positive, lowers the job's maximum device count
	// (RoundJob.Max) to at most Max; it must be at least the job's Min.
	Max int
	// Type, when set, is the only device type the job may use; it must
	// be one of the job's Types.
	Type accel.TypeKey
}

// Restrict returns a view of r in which each limited job is narrowed:
// left out, capped, or held to one type. Everything else (the Input, the
// cluster, the other jobs, the queues' entitlements, the Placer) is r's;
// what is placed or offered on the view stays with the view (Schedule
// places the returned targets again with the same Placer, and an Offer
// made on the view is not used). A policy that wraps another restricts the Round and calls the
// inner policy with the view: carbon-awareness, a maintenance window or
// a tenant's cap then compose with any policy. It fails with ErrPolicy for
// an unknown job, a job limited twice, a Max below the job's Min or a
// Type the job may not use.
func (r *Round) Restrict(limits []Limit) (*Round, error) {
	lim := make([]*Limit, len(r.jobs))
	for k := range limits {
		l := &limits[k]
		i, ok := r.byID[l.Job]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: limits[%d]: unknown job %q", ErrPolicy, k, l.Job)
		case lim[i] != nil:
			return nil, fmt.Errorf("%w: limits[%d]: job %q limited twice", ErrPolicy, k, l.Job)
		case l.Out:
		case l.Max > 0 && l.Max < r.jobs[i].Min:
			return nil, fmt.Errorf("%w: limits[%d]: job %q: Max %d below its minimum %d", ErrPolicy, k, l.Job, l.Max, r.jobs[i].Min)
		case l.Type != "" && !slices.Contains(r.jobs[i].Types, l.Type):
			return nil, fmt.Errorf("%w: limits[%d]: job %q may not use type %q", ErrPolicy, k, l.Job, l.Type)
		}
		lim[i] = l
	}
	sub := *r
	sub.placed = nil // indexed by the view's jobs: never shared with r
	sub.jobs = make([]jobInfo, 0, len(r.jobs))
	sub.byID = make(map[string]int, len(r.jobs))
	kept := make([]int, 0, len(r.jobs)) // positions in r of the view's jobs
	for i, ji := range r.jobs {
		if l := lim[i]; l != nil {
			if l.Out {
				continue
			}
			if l.Max > 0 {
				ji.Max = min(ji.Max, l.Max)
			}
			if l.Type != "" {
				t, _ := r.cluster.TypeIndex(l.Type)
				ji.allowed, ji.Types = []int{t}, []accel.TypeKey{l.Type}
			}
		}
		kept = append(kept, i)
		sub.byID[ji.Job.ID] = len(sub.jobs)
		sub.jobs = append(sub.jobs, ji)
	}
	if r.quota != nil {
		// The same entitlements; only the jobs' positions change.
		sub.quota = r.quota.Subset(kept)
	}
	return &sub, nil
}
