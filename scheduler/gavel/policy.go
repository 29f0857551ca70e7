package gavel

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/internal/nodeset"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// ThroughputFunc returns a job's throughput (steps per second, or any unit
// that is the same for all types of one job) when it runs on count devices
// of type typ spread over nodes nodes; 0 means it cannot run there. It must
// not return NaN, an infinity or a negative value.
type ThroughputFunc func(job *scheduler.Job, typ accel.TypeKey, nodes, count int) float64

// SpeedupThroughput reads each job's goodput model: job.Speedup.Speedup
// (typ, nodes, count), or count when the job has no model (then every type
// looks alike for that job).
func SpeedupThroughput(job *scheduler.Job, typ accel.TypeKey, nodes, count int) float64 {
	if job.Speedup == nil {
		return float64(count)
	}
	return job.Speedup.Speedup(string(typ), nodes, count)
}

// Throughput returns a ThroughputFunc that looks jobs up in t by class
// (nil class = the job's ID) and device count; a missing entry is 0, so
// the job does not use that type.
func (t *Table) Throughput(class func(*scheduler.Job) string) ThroughputFunc {
	return func(job *scheduler.Job, typ accel.TypeKey, nodes, count int) float64 {
		c := job.ID
		if class != nil {
			c = class(job)
		}
		v, _ := t.Lookup(c, count, typ)
		return v
	}
}

// Config configures a Policy. The zero value is Gavel's heterogeneity-aware
// max-min fairness over the jobs' goodput models.
type Config struct {
	// Objective is the policy to optimise each round (nil =
	// MaxMinFairness{}). For MaxThroughputPerCost the per-type prices come
	// from CostPerHour and the SLOs from SLO below, not from its fields.
	Objective Objective
	// Throughput gives T[job][type] (nil = SpeedupThroughput).
	Throughput ThroughputFunc
	// Settings tunes each solve (zero = defaults).
	Settings Settings
	// ResetInterval is the least time between resets of the time-share
	// counters (0 = 32 minutes, Gavel's 1920 s). As in Gavel, a reset is
	// due once the set of jobs has changed (an arrival or a completion)
	// and happens at the first round at least ResetInterval after the
	// previous reset, whether or not the set changed again in that round.
	ResetInterval time.Duration
	// RoundLength is the round this policy is designed for, reported by
	// its RoundLength method (scheduler.RoundLength) to hosts that call it
	// on a clock (0 = 6 minutes, Gavel's time_per_iteration of 360 s). With
	// 6-minute rounds a job that is rotated out pays its restart once per
	// 6 minutes of its share, not once a minute.
	RoundLength time.Duration
	// StepsLeft estimates a job's remaining steps for MinMakespan,
	// FinishTimeFairness and SLOs, given its best throughput (nil =
	// job.RemainingWork × best, RemainingWork being seconds at that rate,
	// or an hour's worth when RemainingWork is 0, unknown).
	StepsLeft func(job *scheduler.Job, best float64) float64
	// StayBonus raises the priority of a running job on its current type
	// by this fraction (0 = none, Gavel's rule), trading exactness of the
	// realised shares for fewer restarts: with 0.25 a running job is
	// preempted only by jobs at least 25% further below their due share.
	StayBonus float64
	// CostPerHour prices one device of each type for MaxThroughputPerCost.
	CostPerHour map[accel.TypeKey]float64
	// SLO returns a job's deadline from now for MaxThroughputPerCost
	// (nil or 0 = none). SLOs that cannot all be met make Allocate fail
	// with an error wrapping ErrInfeasible.
	SLO func(job *scheduler.Job) time.Duration
}

// Policy is Gavel's round-based mechanism behind the scheduler.Policy
// interface. Each call to Allocate is one round:
//
//  1. It credits every job in Input.Current with the time since the
//     previous call's Input.Now, on the type of its devices.
//  2. When the set of jobs has changed and ResetInterval has passed, it
//     resets those counters (Gavel's allocation reset).
//  3. It builds the Problem (rigid jobs of Requested, MinReplicas or 1
//     devices; types with healthy devices) and solves the Objective for
//     the time shares X.
//  4. It ranks jobs by priority = the effective throughput X promises the
//     job over the throughput its received time shares gave it (Gavel's
//     share due over share received, measured in throughput so that
//     equally fast types are interchangeable; jobs new since the last
//     reset first), and gives whole gangs in that order, one type per job
//     per round: the job's current type when X gives it a share there and
//     it is at least as fast as the job's planned mean (no restart), else
//     its types by X[job][type] over the fraction of time received there. Gangs go on as few nodes as the type allows
//     (Target.MaxNodes); a running job that keeps its type is packed on
//     its current nodes first, so the placer can leave it where it is;
//     running non-preemptible jobs keep their devices unconditionally.
//
// A Policy keeps those counters between calls, so use one Policy per
// cluster and call it once per round with non-decreasing Input.Now. It is
// safe for concurrent use (calls are serialised); the same sequence of
// inputs gives the same targets.
type Policy struct {
	cfg Config
	mu  sync.Mutex
	st  roundState
}

// roundState is what a Policy keeps between rounds: the time-share counters.
type roundState struct {
	started   bool
	last      time.Time
	lastReset time.Time
	jobSet    []string       // the last round's job IDs, sorted
	counters  []*jobCounters // per jobSet entry
	// resetDue records that the job set changed since the last reset
	// (Gavel's need_to_update_allocation).
	resetDue bool
	// iso is Gavel's finish-time bookkeeping per job: cumulative isolated
	// time, and the steps left and isolated throughput of the last round.
	iso map[string]*isoCounters
	// inIDs are the last round's job IDs in input order and inByID their
	// indexes in ID order, reused while the jobs come in the same order.
	inIDs  []string
	inByID []int
	// types are the types of the cluster that ix indexes, as newRound
	// reads them, and free0 their usable devices per node: kept while the
	// cluster stays the same (the Scheduler passes the same index), so
	// that a round copies the counts instead of reading every device.
	ix    *placement.Index
	types []typeInfo
	tIdx  map[accel.TypeKey]int
	free0 [][]int
}

// isoCounters is one job's cumulative isolated time (finish-time fairness).
type isoCounters struct {
	elapsed   time.Duration
	stepsLeft float64
	rate      float64
}

// jobCounters is a job's time received per type and in all since the last reset.
type jobCounters struct {
	received []typeTime // in order of first use (a job uses few types)
	total    time.Duration
}

// typeTime is the time received on one type.
type typeTime struct {
	typ accel.TypeKey
	d   time.Duration
}

// on returns the time received on type t.
func (c *jobCounters) on(t accel.TypeKey) time.Duration {
	for _, r := range c.received {
		if r.typ == t {
			return r.d
		}
	}
	return 0
}

// add credits d on type t.
func (c *jobCounters) add(t accel.TypeKey, d time.Duration) {
	for k := range c.received {
		if c.received[k].typ == t {
			c.received[k].d += d
			return
		}
	}
	c.received = append(c.received, typeTime{t, d})
}

// byID returns the indexes of jobs in ID order (read-only: it is kept for
// the next round, which reuses it when its jobs come in the same order).
func (st *roundState) byID(jobs []scheduler.Job) []int {
	if len(jobs) == len(st.inIDs) && slices.EqualFunc(jobs, st.inIDs, func(j scheduler.Job, id string) bool { return j.ID == id }) {
		return st.inByID
	}
	ids := make([]string, len(jobs))
	order := make([]int, len(jobs))
	for i := range jobs {
		ids[i], order[i] = jobs[i].ID, i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	st.inIDs, st.inByID = ids, order
	return order
}

var (
	_ scheduler.Policy      = (*Policy)(nil)
	_ scheduler.RoundLength = (*Policy)(nil)
)

// NewPolicy returns a Policy for cfg. It fails with ErrInvalid on a bad
// configuration.
func NewPolicy(cfg Config) (*Policy, error) {
	if cfg.ResetInterval < 0 {
		return nil, fmt.Errorf("%w: ResetInterval = %v", ErrInvalid, cfg.ResetInterval)
	}
	if cfg.RoundLength < 0 {
		return nil, fmt.Errorf("%w: RoundLength = %v", ErrInvalid, cfg.RoundLength)
	}
	if cfg.RoundLength == 0 {
		cfg.RoundLength = 360 * time.Second
	}
	if !(cfg.StayBonus >= 0) || math.IsInf(cfg.StayBonus, 0) {
		return nil, fmt.Errorf("%w: StayBonus = %v", ErrInvalid, cfg.StayBonus)
	}
	if cfg.Objective == nil {
		cfg.Objective = MaxMinFairness{}
	}
	if cfg.ResetInterval == 0 {
		cfg.ResetInterval = 1920 * time.Second
	}
	if cfg.Throughput == nil {
		cfg.Throughput = SpeedupThroughput
	}
	if _, ok := cfg.Objective.(MaxThroughputPerCost); ok {
		for _, t := range slices.Sorted(maps.Keys(cfg.CostPerHour)) {
			if c := cfg.CostPerHour[t]; !(c > 0) || math.IsInf(c, 0) {
				return nil, fmt.Errorf("%w: CostPerHour[%s] = %v", ErrInvalid, t, c)
			}
		}
	}
	return &Policy{cfg: cfg}, nil
}

// RoundLength implements scheduler.RoundLength: Config.RoundLength (6
// minutes by default, Gavel's round).
func (p *Policy) RoundLength() time.Duration { return p.cfg.RoundLength }

// Reset forgets the time-share history, as if the policy were new.
func (p *Policy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st = roundState{}
}

// typeInfo is one accelerator type of the round's cluster.
type typeInfo struct {
	key     accel.TypeKey
	count   int
	perNode int            // most healthy devices on one node
	nodes   []string       // nodes with healthy devices of the type, sorted
	at      map[string]int // node name → index into nodes and free
	free    []int          // free healthy devices per node (change with take, then reindex after a copy)
	// byFree[f] holds the nodes with f free devices (f ≥ 1) and frees the
	// counts f that some node has, so that pack finds its nodes without
	// scanning the type (byFree[f] is made when first used).
	byFree []nodeset.Set
	frees  nodeset.Set
	use    []int // pack's scratch
}

// round is the state that one call to Allocate shares between its steps.
type round struct {
	p       *Policy
	in      scheduler.Input
	types   []typeInfo            // types with devices, in Cluster.Types order
	tIdx    map[accel.TypeKey]int // type → index into types
	ix      *placement.Index      // the round's cluster
	curType []accel.TypeKey       // per input job: the type it runs on now ("" = none)
	curDevs [][]string            // per input job: the devices it holds now
	jobs    []*jobCounters        // per input job: its time-share counters
	targets []scheduler.Target    // per input job
	scale   []int                 // gang size per input job
	rows    []int                 // input index of each problem row
	prob    Problem
	obj     Objective
	sol     Solution
	cands   []cand // (row, type) candidates, best first
	placed  []int  // per input job: 1 + type index, 0 = waiting
	pinned  []int  // placed of the pinned jobs, 0 for the others
	choice  []int  // per input job: 1 + index into cands, 0 = none
	byID    []int  // input job indexes by job ID
	idRank  []int  // per input job: its place in byID

	// curNodes[curAt[i]:curAt[i+1]] are input job i's current devices
	// per node (indexes into its type's nodes), resolved once for keep;
	// keepable[i] reports that they are all usable.
	curNodes []nodeNeed
	curAt    []int
	keepable []bool
}

// nodeNeed is a count of devices on one node of a type.
type nodeNeed struct{ node, count int }

// cand is one type that a problem row has a share on, with its priorities.
type cand struct {
	row, typ  int
	id        int // the job's place in ID order
	jobPrio   float64
	prio, due float64
	got       float64
	stays     bool
}

// Allocate implements scheduler.Policy. Errors wrap ErrInvalid (NaN or
// negative throughput, time going backwards) or come from the context;
// the Round has already validated the cluster and the jobs.
func (p *Policy) Allocate(ctx context.Context, sr *scheduler.Round) ([]scheduler.Target, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := *sr.Input()
	if err := p.check(in); err != nil {
		return nil, err
	}
	r := newRound(p, sr)
	r.jobs = p.credit(in, r.byID, r.curType)
	if err := r.buildProblem(); err != nil {
		return nil, err
	}
	if len(r.rows) == 0 {
		return r.targets, nil
	}
	if err := r.solve(ctx); err != nil {
		return nil, err
	}
	r.rank()
	r.realise()
	r.explain()
	return r.targets, nil
}

// check rejects time going backwards (the Round has validated the rest).
func (p *Policy) check(in scheduler.Input) error {
	if p.st.started && in.Now.Before(p.st.last) {
		return fmt.Errorf("%w: Now %v is before the previous round's %v", ErrInvalid, in.Now, p.st.last)
	}
	return nil
}

// newRound reads the types with usable devices, their usable devices per
// node (nodes by name; kept from the last round on the same cluster
// index) and what runs now from the scheduler's Round.
func newRound(p *Policy, sr *scheduler.Round) *round {
	ix := sr.Cluster()
	r := &round{p: p, in: *sr.Input(), ix: ix,
		curType: make([]accel.TypeKey, len(sr.Input().Jobs)), curDevs: make([][]string, len(sr.Input().Jobs))}
	if st := &p.st; st.ix != ix {
		st.ix, st.free0 = ix, nil
		st.types, st.tIdx = readTypes(ix)
		for j := range st.types {
			st.free0 = append(st.free0, slices.Clone(st.types[j].free))
		}
	}
	r.types, r.tIdx = p.st.types, p.st.tIdx
	for j := range r.types {
		copy(r.types[j].free, p.st.free0[j])
		r.types[j].reindex()
	}
	jobs := r.in.Jobs
	r.byID = p.st.byID(jobs)
	r.idRank = make([]int, len(jobs))
	for k, i := range r.byID {
		r.idRank[i] = k
	}
	r.curAt, r.keepable = make([]int, len(jobs)+1), make([]bool, len(jobs))
	for i, j := range sr.Jobs() { // in Input.Jobs order
		r.curAt[i] = len(r.curNodes)
		if len(j.Current) > 0 {
			r.curType[i], r.curDevs[i] = j.CurrentType, j.Current
			r.keepable[i] = r.resolve(i)
		}
	}
	r.curAt[len(jobs)] = len(r.curNodes)
	return r
}

// readTypes returns the types of ix with usable devices, in ix.Types
// order, with their usable devices per node (nodes by name), and their
// indexes.
func readTypes(ix *placement.Index) ([]typeInfo, map[accel.TypeKey]int) {
	var types []typeInfo
	tIdx := map[accel.TypeKey]int{}
	for _, t := range ix.Types() {
		if c, perNode, _ := ix.Usable(t); c > 0 {
			tIdx[t] = len(types)
			types = append(types, typeInfo{key: t, count: c, perNode: perNode, at: map[string]int{}})
		}
	}
	for n := range ix.Nodes() {
		name, devs := ix.Node(n)
		for _, d := range devs {
			if i, ok := tIdx[d.Type]; ok && d.Usable() {
				t := &types[i]
				if _, seen := t.at[name]; !seen {
					t.at[name] = len(t.nodes)
					t.nodes = append(t.nodes, name)
					t.free = append(t.free, 0)
				}
				t.free[t.at[name]]++
			}
		}
	}
	return types, tIdx
}

// resolve appends input job i's current devices per node to curNodes and
// reports whether they are all usable (all are of type curType[i]); it
// appends nothing when they are not.
func (r *round) resolve(i int) bool {
	j, ok := r.tIdx[r.curType[i]]
	if !ok {
		return false
	}
	t := &r.types[j]
	start := len(r.curNodes)
	for _, d := range r.curDevs[i] {
		dev, ok := r.ix.Device(d)
		if !ok || !dev.Usable() {
			r.curNodes = r.curNodes[:start]
			return false
		}
		k := t.at[dev.Node]
		at := slices.IndexFunc(r.curNodes[start:], func(n nodeNeed) bool { return n.node == k })
		if at < 0 {
			r.curNodes = append(r.curNodes, nodeNeed{node: k})
			at = len(r.curNodes) - 1 - start
		}
		r.curNodes[start+at].count++
	}
	return true
}

// buildProblem gives every job its gang size and a default target, and
// makes a Problem row (rigid gangs on the types with healthy devices) of
// each job that some allowed type can run.
func (r *round) buildProblem() error {
	in, types := r.in, r.types
	r.targets = make([]scheduler.Target, len(in.Jobs))
	r.prob = Problem{Devices: make([]int, len(types))}
	prob := &r.prob
	for j, t := range types {
		prob.Devices[j] = t.count
	}
	r.scale = make([]int, len(in.Jobs))
	n := len(in.Jobs)
	r.rows = make([]int, 0, n)
	prob.Throughput, prob.Scale, prob.Weight = make([][]float64, 0, n), make([]int, 0, n), make([]float64, 0, n)
	prob.StepsLeft, prob.Elapsed = make([]float64, 0, n), make([]time.Duration, 0, n)
	flat := make([]float64, n*len(types)) // the rows, end to end
	for i := range in.Jobs {
		job := &in.Jobs[i]
		r.targets[i] = scheduler.Target{Job: job.ID, Reason: scheduler.ReasonNoCapacity, Note: "no allowed type can hold the gang"}
		s := job.Requested
		if s <= 0 {
			s = max(job.MinReplicas, 1)
		}
		r.scale[i] = s
		row := flat[:len(types):len(types)]
		clear(row) // a row that was not kept may have left values here
		ok := false
		for j, t := range types {
			if (len(job.Types) > 0 && !slices.Contains(job.Types, t.key)) || s > t.count {
				continue
			}
			v := r.p.cfg.Throughput(job, t.key, nodesFor(s, t.perNode), s)
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("%w: throughput of job %q on %s = %v", ErrInvalid, job.ID, t.key, v)
			}
			row[j] = v
			ok = ok || v > 0
		}
		if !ok {
			continue
		}
		flat = flat[len(types):]
		r.rows = append(r.rows, i)
		prob.Throughput = append(prob.Throughput, row)
		prob.Scale = append(prob.Scale, s)
		w := job.Weight
		if !(w > 0) {
			w = 1
		}
		prob.Weight = append(prob.Weight, w)
		best := slices.Max(row)
		left := job.RemainingWork * best
		if left <= 0 {
			left = 3600 * best // unknown: an hour at its best rate
		}
		if r.p.cfg.StepsLeft != nil {
			left = r.p.cfg.StepsLeft(job, best)
		}
		prob.StepsLeft = append(prob.StepsLeft, max(left, 0))
		prob.Elapsed = append(prob.Elapsed, max(in.Now.Sub(job.Submitted), 0))
	}
	return nil
}

// solve solves the Objective (with the configured prices and SLOs for
// MaxThroughputPerCost) for the time shares X.
func (r *round) solve(ctx context.Context) error {
	obj := r.p.cfg.Objective
	if c, ok := obj.(MaxThroughputPerCost); ok {
		c.CostPerHour = make([]float64, len(r.types))
		for j, t := range r.types {
			c.CostPerHour[j] = r.p.cfg.CostPerHour[t.key]
			if c.CostPerHour[j] == 0 {
				return fmt.Errorf("%w: CostPerHour has no price for %s", ErrInvalid, t.key)
			}
		}
		c.SLO = nil
		if r.p.cfg.SLO != nil {
			c.SLO = make([]time.Duration, len(r.rows))
			for m, i := range r.rows {
				c.SLO[m] = max(r.p.cfg.SLO(&r.in.Jobs[i]), 0)
			}
		}
		obj = c
	}
	if f, ok := obj.(FinishTimeFairness); ok && f.IsolatedElapsed == nil && !f.EqualTimeShares {
		f.IsolatedElapsed = r.isolatedElapsed()
		obj = f
	}
	r.obj = obj
	var err error
	r.sol, err = Solve(ctx, r.prob, obj, &r.p.cfg.Settings)
	return err
}

// isolatedElapsed applies Gavel's finish-time bookkeeping: each job's
// cumulative isolated time grows by the steps it did since the last round
// over its isolated throughput then, from 0 at arrival. It records this
// round's steps left and isolated throughput for the next round.
func (r *round) isolatedElapsed() []time.Duration {
	st := &r.p.st
	if st.iso == nil {
		st.iso = map[string]*isoCounters{}
	}
	rates, err := r.prob.IsolatedThroughput()
	out := make([]time.Duration, len(r.rows))
	live := make(map[string]bool, len(r.rows))
	for m, i := range r.rows {
		id := r.in.Jobs[i].ID
		live[id] = true
		c := st.iso[id]
		if c == nil {
			c = &isoCounters{stepsLeft: r.prob.StepsLeft[m]}
			st.iso[id] = c
		}
		if done := c.stepsLeft - r.prob.StepsLeft[m]; done > 0 && c.rate > 0 {
			c.elapsed += time.Duration(done / c.rate * float64(time.Second))
		}
		c.stepsLeft = r.prob.StepsLeft[m]
		if err == nil {
			c.rate = rates[m]
		}
		out[m] = c.elapsed
	}
	for _, id := range slices.Sorted(maps.Keys(st.iso)) {
		if !live[id] {
			delete(st.iso, id)
		}
	}
	return out
}

// rank lists the candidates, one per row and type with a share, in the
// order the jobs try them.
//
// A job's priority is its effective throughput due under X over the
// throughput its received time shares give (Gavel's share due over share
// received, in throughput so that equally fast types are interchangeable);
// jobs new since the last reset come first. Each job tries its type of the
// current round first when it has a share there and the type is at least
// as fast as its planned mean (no restart), then its types by per-type
// priority X / time received.
func (r *round) rank() {
	types, prob := r.types, &r.prob
	n := 0
	for m := range r.rows {
		for _, x := range r.sol.X[m] {
			if x > 1e-9 {
				n++
			}
		}
	}
	r.cands = make([]cand, 0, n)
	gots := make([]float64, len(types)) // per type: the fraction of time received there
	for m, i := range r.rows {
		jc := r.jobs[i]
		clear(gots)
		if jc.total > 0 {
			for j, t := range types {
				gots[j] = float64(jc.on(t.key)) / float64(jc.total)
			}
		}
		var due, recv float64
		for j, x := range r.sol.X[m] {
			due += x * prob.Throughput[m][j]
			if jc.total > 0 {
				recv += gots[j] * prob.Throughput[m][j]
			}
		}
		jp := 1e9 * due
		if recv > 0 {
			jp = due / recv
		}
		// Staying first is allowed on a type at least as fast as the
		// time-weighted mean of the job's planned types: it then cannot fall
		// behind its due throughput by not moving.
		perTime := due / sum(r.sol.X[m])
		cur := r.curType[i]
		whole := len(r.curDevs[i]) == r.scale[i]
		for j, x := range r.sol.X[m] {
			if x <= 1e-9 {
				continue
			}
			got := gots[j]
			prio := x * 1e9
			if got > 0 {
				prio = x / got
			}
			c := cand{row: m, typ: j, id: r.idRank[i], jobPrio: jp, prio: prio, due: x, got: got,
				stays: cur == types[j].key && whole &&
					prob.Throughput[m][j] >= perTime*(1-1e-9)}
			if c.stays {
				c.jobPrio *= 1 + r.p.cfg.StayBonus
			}
			r.cands = append(r.cands, c)
		}
	}
	r.cands = sortCands(r.cands)
}

// candOrder is the order of candidates: job priority, then job ID, then
// stays, prio, due and type.
func candOrder(a, b *cand) int {
	if c := cmp.Compare(b.jobPrio, a.jobPrio); c != 0 {
		return c
	}
	if c := cmp.Compare(a.id, b.id); c != 0 {
		return c
	}
	if c := boolCmp(b.stays, a.stays); c != 0 {
		return c
	}
	if c := cmp.Compare(b.prio, a.prio); c != 0 {
		return c
	}
	if c := cmp.Compare(b.due, a.due); c != 0 {
		return c
	}
	return cmp.Compare(a.typ, b.typ)
}

// sortCands returns cands (grouped by row, as rank builds them) in
// candOrder. It orders each row's few candidates first, so that the big
// sort compares small keys (job priority, then job ID and rank in the
// row) instead of moving whole candidates through the full comparison:
// that sort was the bulk of rank at 50,000 jobs.
func sortCands(cands []cand) []cand {
	type key struct {
		jobPrio float64
		tie     uint64 // job ID rank << 32 | rank among the row's candidates
		at      int32
	}
	keys := make([]key, len(cands))
	for lo := 0; lo < len(cands); {
		hi := lo + 1
		for hi < len(cands) && cands[hi].row == cands[lo].row {
			hi++
		}
		row := cands[lo:hi]
		for i := 1; i < len(row); i++ {
			for j := i; j > 0 && candOrder(&row[j], &row[j-1]) < 0; j-- {
				row[j], row[j-1] = row[j-1], row[j]
			}
		}
		for k := range row {
			keys[lo+k] = key{row[k].jobPrio, uint64(row[k].id)<<32 | uint64(k), int32(lo + k)}
		}
		lo = hi
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(b.jobPrio, a.jobPrio); c != 0 {
			return c
		}
		return cmp.Compare(a.tie, b.tie)
	})
	// Permute in place, cycle by cycle: position k takes the candidate at
	// keys[k].at (set to −1 once done).
	for start := range keys {
		if keys[start].at < 0 {
			continue
		}
		first := cands[start]
		for k := start; ; {
			src := int(keys[k].at)
			keys[k].at = -1
			if src == start {
				cands[k] = first
				break
			}
			cands[k] = cands[src]
			k = src
		}
	}
	return cands
}

// realise turns the shares into whole gangs on nodes: it pins, chooses by
// priority (Gavel's greedy), packs, backfills, then replays the result the
// way the Packer places it.
func (r *round) realise() {
	initFree := make([][]int, len(r.types))
	for j := range r.types {
		initFree[j] = slices.Clone(r.types[j].free)
	}
	r.choose(r.pin())
	r.packChosen()
	r.backfill()
	for j := range r.types {
		copy(r.types[j].free, initFree[j])
		r.types[j].reindex()
	}
	r.replay()
}

// keep reserves input job i's current devices on type j, reporting false
// (reserving nothing) unless they are all healthy, of type j and free.
func (r *round) keep(i, j int) bool {
	t := &r.types[j]
	if !r.keepable[i] || r.curType[i] != t.key {
		return false
	}
	need := r.curNodes[r.curAt[i]:r.curAt[i+1]]
	for _, n := range need {
		if t.free[n.node] < n.count {
			return false
		}
	}
	for _, n := range need {
		t.take(n.node, n.count)
	}
	return true
}

// onCurrent reports whether input job i runs now on a whole gang of type j.
func (r *round) onCurrent(i, j int) bool {
	return r.curType[i] == r.types[j].key && len(r.curDevs[i]) == r.scale[i]
}

// pin keeps the running non-preemptible jobs on their devices and returns
// the devices left per type.
func (r *round) pin() []int {
	r.placed = make([]int, len(r.in.Jobs))
	remaining := make([]int, len(r.types))
	for j, t := range r.types {
		remaining[j] = t.count
	}
	for i := range r.in.Jobs {
		job := &r.in.Jobs[i]
		t, running := r.curType[i], len(r.curDevs[i]) > 0
		j, known := r.tIdx[t]
		if job.NonPreemptible && running && known && r.keep(i, j) {
			r.placed[i] = j + 1
			remaining[j] -= len(r.curDevs[i])
			r.targets[i] = scheduler.Target{Job: job.ID, Type: t, Count: len(r.curDevs[i]),
				Reason: scheduler.ReasonPinned, Note: "non-preemptible, keeps its devices"}
		}
	}
	r.pinned = slices.Clone(r.placed)
	return remaining
}

// choose gives each unplaced job its first candidate whose type still has
// room for the whole gang, in candidate order (Gavel's greedy).
func (r *round) choose(remaining []int) {
	r.choice = make([]int, len(r.in.Jobs))
	for ci, c := range r.cands {
		i := r.rows[c.row]
		if r.placed[i] != 0 || r.choice[i] != 0 || remaining[c.typ] < r.scale[i] {
			continue
		}
		r.choice[i] = ci + 1
		remaining[c.typ] -= r.scale[i]
	}
}

// packChosen places the chosen gangs: those that stay on their current
// devices, then the others largest first on as few nodes as possible; a
// gang that does not pack loses its choice.
func (r *round) packChosen() {
	var movers []int
	for i := range r.in.Jobs {
		if r.choice[i] == 0 {
			continue
		}
		c := r.cands[r.choice[i]-1]
		// Lease extension (Gavel): a job given its current type again keeps
		// its devices when they are free, and so is not restarted.
		if r.onCurrent(i, c.typ) && r.keep(i, c.typ) {
			r.placed[i] = c.typ + 1
		} else {
			movers = append(movers, i)
		}
	}
	slices.SortStableFunc(movers, func(a, b int) int {
		return cmp.Or(cmp.Compare(r.scale[b], r.scale[a]), cmp.Compare(r.choice[a], r.choice[b]))
	})
	for _, i := range movers {
		c := r.cands[r.choice[i]-1]
		if pack(&r.types[c.typ], r.scale[i]) {
			r.placed[i] = c.typ + 1
		} else {
			r.choice[i] = 0
		}
	}
}

// backfill places the waiting gangs, in candidate order, where they pack.
func (r *round) backfill() {
	for ci, c := range r.cands {
		i := r.rows[c.row]
		if r.placed[i] == 0 && pack(&r.types[c.typ], r.scale[i]) {
			r.placed[i] = c.typ + 1
			r.choice[i] = ci + 1
		}
	}
}

// replay places the final set on the free devices the way the scheduler's
// Packer does (every unchanged gang kept, then the rest largest first, by
// job ID), and lets the gangs that would not be placed wait.
func (r *round) replay() {
	var rest []int
	for i := range r.in.Jobs {
		if r.placed[i] == 0 {
			continue
		}
		j := r.placed[i] - 1
		if r.pinned[i] != 0 || r.onCurrent(i, j) && r.keep(i, j) {
			continue
		}
		rest = append(rest, i)
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		return cmp.Or(cmp.Compare(r.scale[b], r.scale[a]), cmp.Compare(r.idRank[a], r.idRank[b]))
	})
	for _, i := range rest {
		if !pack(&r.types[r.placed[i]-1], r.scale[i]) {
			r.placed[i] = 0
		}
	}
}

// explain writes the targets of the placed jobs that are not pinned and
// the notes of the problem rows that wait.
func (r *round) explain() {
	name := r.obj.Name()
	var buf []byte
	for i := range r.in.Jobs {
		if r.placed[i] == 0 || r.pinned[i] != 0 {
			continue
		}
		c := r.cands[r.choice[i]-1]
		t := &r.types[c.typ]
		reason := scheduler.ReasonObjective
		if c.stays || r.onCurrent(i, c.typ) {
			reason = scheduler.ReasonUnchanged
		}
		buf = placedNote(buf[:0], name, c.due, t.key, c.got, c.jobPrio)
		r.targets[i] = scheduler.Target{Job: r.in.Jobs[i].ID, Type: t.key, Count: r.scale[i], MaxNodes: nodesFor(r.scale[i], t.perNode),
			Reason: reason, Note: string(buf)}
	}
	for m, i := range r.rows {
		if r.placed[i] != 0 {
			continue
		}
		best, bt := 0.0, ""
		for j, x := range r.sol.X[m] {
			if x > best {
				best, bt = x, string(r.types[j].key)
			}
		}
		buf = waitNote(buf[:0], name, sum(r.sol.X[m]), bt)
		if best == 0 {
			buf = append(append(buf[:0], name...), ": no share this round"...)
		}
		r.targets[i] = scheduler.Target{Job: r.in.Jobs[i].ID, Reason: scheduler.ReasonObjective, Note: string(buf)}
	}
}

// placedNote appends the note of a placed job to buf: fmt's
// "%s: share due %.3f of time on %s, received %.3f (job priority %.3g)",
// built with strconv, which costs a fraction of fmt.Sprintf at 50,000
// notes a round.
func placedNote(buf []byte, name string, due float64, t accel.TypeKey, got, prio float64) []byte {
	buf = append(append(buf, name...), ": share due "...)
	buf = append(append(append(strconv.AppendFloat(buf, due, 'f', 3, 64), " of time on "...), t...), ", received "...)
	buf = append(strconv.AppendFloat(buf, got, 'f', 3, 64), " (job priority "...)
	return append(strconv.AppendFloat(buf, prio, 'g', 3, 64), ')')
}

// waitNote appends the note of a waiting job to buf: fmt's
// "%s: waits this round; share due %.3f (most on %s), jobs further below
// their share go first", built with strconv as placedNote is.
func waitNote(buf []byte, name string, due float64, most string) []byte {
	buf = append(append(buf, name...), ": waits this round; share due "...)
	buf = append(append(strconv.AppendFloat(buf, due, 'f', 3, 64), " (most on "...), most...)
	return append(buf, "), jobs further below their share go first"...)
}

// credit adds the time since the last round to the jobs that ran, and
// resets the counters when the job set changed long enough ago. byID is
// the input jobs' indexes in ID order and curType their current types; it
// returns each input job's counters.
func (p *Policy) credit(in scheduler.Input, byID []int, curType []accel.TypeKey) []*jobCounters {
	st := &p.st
	ids := make([]string, len(byID))
	for k, i := range byID {
		ids[k] = in.Jobs[i].ID
	}
	changed := !slices.Equal(ids, st.jobSet)
	counters := st.counters
	if changed {
		// Carry the counters of the jobs that stay (nil for new ones):
		// both lists are sorted, so this is a merge.
		counters = make([]*jobCounters, len(ids))
		o := 0
		for k, id := range ids {
			for o < len(st.jobSet) && st.jobSet[o] < id {
				o++
			}
			if o < len(st.jobSet) && st.jobSet[o] == id {
				counters[k] = st.counters[o]
			}
		}
	}
	if st.started {
		dt := in.Now.Sub(st.last)
		for k, c := range counters {
			if c == nil {
				continue
			}
			c.total += dt
			if t := curType[byID[k]]; t != "" {
				c.add(t, dt)
			}
		}
	}
	st.resetDue = st.resetDue || changed
	if st.resetDue && (!st.started || in.Now.Sub(st.lastReset) >= p.cfg.ResetInterval) {
		clear(counters)
		st.lastReset = in.Now
		st.resetDue = false
	}
	out := make([]*jobCounters, len(in.Jobs))
	for k, c := range counters {
		if c == nil {
			c = &jobCounters{}
			counters[k] = c
		}
		out[byID[k]] = c
	}
	st.jobSet, st.counters = ids, counters
	st.started = true
	st.last = in.Now
	return out
}

// pack reserves s devices of type t on as few nodes as the type allows:
// best fit on one node when one has room (the fewest free devices that
// hold the gang, the first such node in name order), else the nodes with
// the most free devices first (ties in name order). It reports false
// (reserving nothing) when the gang cannot be consolidated. It costs
// O(log nodes) per node it looks at, not a scan of the type's nodes.
func pack(t *typeInfo, s int) bool {
	limit := nodesFor(s, t.perNode)
	if limit == 1 {
		f := t.frees.Next(s)
		if f < 0 {
			return false
		}
		t.take(t.byFree[f].Next(0), s)
		return true
	}
	need := s
	use := t.use[:0]
	for f := t.frees.Prev(len(t.byFree) - 1); f > 0 && need > 0 && len(use) < limit; f = t.frees.Prev(f - 1) {
		b := t.byFree[f]
		for k := b.Next(0); k >= 0 && need > 0 && len(use) < limit; k = b.Next(k + 1) {
			use = append(use, k)
			need -= f
		}
	}
	t.use = use
	if need > 0 {
		return false
	}
	need = s
	for _, k := range use {
		d := min(need, t.free[k])
		t.take(k, d)
		need -= d
	}
	return true
}

// reindex files every node of t under its free count, after free was set
// wholesale.
func (t *typeInfo) reindex() {
	top := 0
	for _, f := range t.free {
		top = max(top, f)
	}
	if len(t.byFree) < top+1 {
		t.byFree = append(t.byFree, make([]nodeset.Set, top+1-len(t.byFree))...)
	}
	if t.frees == nil || t.frees.Size() < len(t.byFree) {
		t.frees = nodeset.New(len(t.byFree))
	} else {
		t.frees.Clear()
	}
	for _, b := range t.byFree {
		b.Clear()
	}
	for k, f := range t.free {
		if f > 0 {
			t.file(k, f)
		}
	}
}

// take reserves d of node k's free devices.
func (t *typeInfo) take(k, d int) {
	f := t.free[k]
	if f > 0 {
		b := t.byFree[f]
		b.Remove(k)
		if b.Empty() {
			t.frees.Remove(f)
		}
	}
	f -= d
	t.free[k] = f
	if f > 0 {
		t.file(k, f)
	}
}

// file adds node k to the nodes with f free devices.
func (t *typeInfo) file(k, f int) {
	b := t.byFree[f]
	if b == nil {
		b = nodeset.New(len(t.free))
		t.byFree[f] = b
	}
	if b.Empty() {
		t.frees.Add(f)
	}
	b.Add(k)
}

// nodesFor returns the fewest nodes that hold s devices at perNode a node.
func nodesFor(s, perNode int) int {
	if perNode <= 0 {
		return 1
	}
	return (s + perNode - 1) / perNode
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// sum returns the sum of x.
func sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}
