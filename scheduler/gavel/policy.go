package gavel

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/goodsched/goodsched/accel"
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
	// counters, which happen when the set of jobs changes (0 = 32 minutes,
	// Gavel's 1920 s).
	ResetInterval time.Duration
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

type roundState struct {
	started   bool
	last      time.Time
	lastReset time.Time
	jobSet    []string
	jobs      map[string]*jobCounters
}

type jobCounters struct {
	received map[accel.TypeKey]time.Duration
	total    time.Duration
}

var _ scheduler.Policy = (*Policy)(nil)

// NewPolicy returns a Policy for cfg. It fails with ErrInvalid on a bad
// configuration.
func NewPolicy(cfg Config) (*Policy, error) {
	if cfg.ResetInterval < 0 {
		return nil, fmt.Errorf("%w: ResetInterval = %v", ErrInvalid, cfg.ResetInterval)
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
	return &Policy{cfg: cfg, st: roundState{jobs: map[string]*jobCounters{}}}, nil
}

// Reset forgets the time-share history, as if the policy were new.
func (p *Policy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st = roundState{jobs: map[string]*jobCounters{}}
}

// typeInfo is one accelerator type of the round's cluster.
type typeInfo struct {
	key     accel.TypeKey
	count   int
	perNode int            // most healthy devices on one node
	nodes   []string       // nodes with healthy devices of the type, sorted
	at      map[string]int // node name → index into nodes and free
	free    []int          // free healthy devices per node
}

// Allocate implements scheduler.Policy. Errors wrap ErrInvalid (bad
// cluster, duplicate job IDs, NaN or negative throughput, time going
// backwards) or come from the context.
func (p *Policy) Allocate(ctx context.Context, in scheduler.Input) ([]scheduler.Target, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := in.Cluster.Validate(); err != nil {
		return nil, fmt.Errorf("%w: cluster: %w", ErrInvalid, err)
	}
	if p.st.started && in.Now.Before(p.st.last) {
		return nil, fmt.Errorf("%w: Now %v is before the previous round's %v", ErrInvalid, in.Now, p.st.last)
	}
	byID := make(map[string]int, len(in.Jobs))
	for i := range in.Jobs {
		id := in.Jobs[i].ID
		if id == "" {
			return nil, fmt.Errorf("%w: jobs[%d]: empty ID", ErrInvalid, i)
		}
		if _, dup := byID[id]; dup {
			return nil, fmt.Errorf("%w: jobs[%d]: duplicate ID %q", ErrInvalid, i, id)
		}
		byID[id] = i
	}

	// Types, per-node capacity, and where each device is.
	devType := map[string]accel.TypeKey{}
	devNode := map[string]string{}
	healthy := map[string]bool{}
	tIdx := map[accel.TypeKey]int{}
	var types []typeInfo
	for _, t := range in.Cluster.Types() {
		if c := in.Cluster.Count(t); c > 0 {
			tIdx[t] = len(types)
			types = append(types, typeInfo{key: t, count: c, at: map[string]int{}})
		}
	}
	for _, n := range in.Cluster.Nodes {
		for _, d := range n.Devices {
			devType[d.ID], devNode[d.ID], healthy[d.ID] = d.Type, n.Name, d.Healthy
			if i, ok := tIdx[d.Type]; ok && d.Healthy {
				t := &types[i]
				if _, seen := t.at[n.Name]; !seen {
					t.at[n.Name] = len(t.nodes)
					t.nodes = append(t.nodes, n.Name)
					t.free = append(t.free, 0)
				}
				f := &t.free[t.at[n.Name]]
				*f++
				t.perNode = max(t.perNode, *f)
			}
		}
	}
	for i := range types { // nodes sorted by name, for deterministic ties
		t := &types[i]
		order := slices.Clone(t.nodes)
		slices.Sort(order)
		free := make([]int, len(order))
		for k, n := range order {
			free[k] = t.free[t.at[n]]
		}
		for k, n := range order {
			t.at[n] = k
		}
		t.nodes, t.free = order, free
	}
	// What runs now: type and devices per job.
	curType := map[string]accel.TypeKey{}
	curDevs := map[string][]string{}
	for _, a := range in.Current {
		if len(a.Devices) == 0 {
			continue
		}
		curType[a.Job] = devType[a.Devices[0]]
		curDevs[a.Job] = a.Devices
	}

	p.credit(in, curType)

	// The problem: rigid gangs on the types with healthy devices.
	targets := make([]scheduler.Target, len(in.Jobs))
	var rows []int // input index of each problem row
	prob := Problem{Devices: make([]int, len(types))}
	for j, t := range types {
		prob.Devices[j] = t.count
	}
	scale := make([]int, len(in.Jobs))
	for i := range in.Jobs {
		job := &in.Jobs[i]
		targets[i] = scheduler.Target{Job: job.ID, Reason: scheduler.ReasonNoCapacity, Note: "no allowed type can hold the gang"}
		s := job.Requested
		if s <= 0 {
			s = max(job.MinReplicas, 1)
		}
		scale[i] = s
		row := make([]float64, len(types))
		ok := false
		for j, t := range types {
			if (len(job.Types) > 0 && !slices.Contains(job.Types, t.key)) || s > t.count {
				continue
			}
			v := p.cfg.Throughput(job, t.key, nodesFor(s, t.perNode), s)
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("%w: throughput of job %q on %s = %v", ErrInvalid, job.ID, t.key, v)
			}
			row[j] = v
			ok = ok || v > 0
		}
		if !ok {
			continue
		}
		rows = append(rows, i)
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
		if p.cfg.StepsLeft != nil {
			left = p.cfg.StepsLeft(job, best)
		}
		prob.StepsLeft = append(prob.StepsLeft, max(left, 0))
		prob.Elapsed = append(prob.Elapsed, max(in.Now.Sub(job.Submitted), 0))
	}
	if len(rows) == 0 {
		return targets, nil
	}
	obj := p.cfg.Objective
	if c, ok := obj.(MaxThroughputPerCost); ok {
		c.CostPerHour = make([]float64, len(types))
		for j, t := range types {
			c.CostPerHour[j] = p.cfg.CostPerHour[t.key]
			if c.CostPerHour[j] == 0 {
				return nil, fmt.Errorf("%w: CostPerHour has no price for %s", ErrInvalid, t.key)
			}
		}
		c.SLO = nil
		if p.cfg.SLO != nil {
			c.SLO = make([]time.Duration, len(rows))
			for r, i := range rows {
				c.SLO[r] = max(p.cfg.SLO(&in.Jobs[i]), 0)
			}
		}
		obj = c
	}
	sol, err := Solve(ctx, prob, obj, &p.cfg.Settings)
	if err != nil {
		return nil, err
	}

	// Priorities. A job's priority is its effective throughput due under X
	// over the throughput its received time shares give (Gavel's share due
	// over share received, in throughput so that equally fast types are
	// interchangeable); jobs new since the last reset come first. Each job
	// tries its type of the current round first when it has a share there
	// and the type is at least as fast as its planned mean (no restart),
	// then its types by per-type priority X / time received.
	type cand struct {
		row, typ  int
		jobPrio   float64
		prio, due float64
		got       float64
		stays     bool
	}
	var cands []cand
	for r, i := range rows {
		id := in.Jobs[i].ID
		c := p.st.jobs[id]
		var due, recv float64
		for j, x := range sol.X[r] {
			due += x * prob.Throughput[r][j]
			if c.total > 0 {
				recv += float64(c.received[types[j].key]) / float64(c.total) * prob.Throughput[r][j]
			}
		}
		jp := 1e9 * due
		if recv > 0 {
			jp = due / recv
		}
		// Staying first is allowed on a type at least as fast as the
		// time-weighted mean of the job's planned types: it then cannot fall
		// behind its due throughput by not moving.
		perTime := due / sum(sol.X[r])
		for j, x := range sol.X[r] {
			if x <= 1e-9 {
				continue
			}
			got := 0.0
			if c.total > 0 {
				got = float64(c.received[types[j].key]) / float64(c.total)
			}
			prio := x * 1e9
			if got > 0 {
				prio = x / got
			}
			c := cand{row: r, typ: j, jobPrio: jp, prio: prio, due: x, got: got,
				stays: curType[id] == types[j].key && len(curDevs[id]) == scale[i] &&
					prob.Throughput[r][j] >= perTime*(1-1e-9)}
			if c.stays {
				c.jobPrio *= 1 + p.cfg.StayBonus
			}
			cands = append(cands, c)
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.jobPrio, a.jobPrio), cmp.Compare(in.Jobs[rows[a.row]].ID, in.Jobs[rows[b.row]].ID),
			boolCmp(b.stays, a.stays), cmp.Compare(b.prio, a.prio), cmp.Compare(b.due, a.due), cmp.Compare(a.typ, b.typ))
	})

	// Realise the shares: pinned jobs keep their devices; then whole gangs
	// by priority against each type's device count (Gavel's greedy); then
	// per type the jobs that stay are packed on their current devices and
	// the others largest first on as few nodes as possible; gangs that do
	// not pack wait, and the freed room is backfilled in priority order.
	placed := make([]int, len(in.Jobs)) // 1 + type index, 0 = waiting
	keep := func(i, j int) bool {
		need := map[string]int{}
		for _, d := range curDevs[in.Jobs[i].ID] {
			if !healthy[d] || devType[d] != types[j].key {
				return false
			}
			need[devNode[d]]++
		}
		for n, k := range need {
			if types[j].free[types[j].at[n]] < k {
				return false
			}
		}
		for n, k := range need {
			types[j].free[types[j].at[n]] -= k
		}
		return true
	}
	initFree := make([][]int, len(types))
	for j := range types {
		initFree[j] = slices.Clone(types[j].free)
	}
	remaining := make([]int, len(types))
	for j, t := range types {
		remaining[j] = t.count
	}
	for i := range in.Jobs {
		job := &in.Jobs[i]
		t, running := curType[job.ID]
		j, known := tIdx[t]
		if job.NonPreemptible && running && known && keep(i, j) {
			placed[i] = j + 1
			remaining[j] -= len(curDevs[job.ID])
			targets[i] = scheduler.Target{Job: job.ID, Type: t, Count: len(curDevs[job.ID]),
				Reason: scheduler.ReasonPinned, Note: "non-preemptible, keeps its devices"}
		}
	}
	pinned := slices.Clone(placed)
	choice := make([]int, len(in.Jobs)) // 1 + index into cands
	for ci, c := range cands {
		i := rows[c.row]
		if placed[i] != 0 || choice[i] != 0 || remaining[c.typ] < scale[i] {
			continue
		}
		choice[i] = ci + 1
		remaining[c.typ] -= scale[i]
	}
	var movers []int
	for i := range in.Jobs {
		if choice[i] == 0 {
			continue
		}
		c := cands[choice[i]-1]
		if c.stays && keep(i, c.typ) {
			placed[i] = c.typ + 1
		} else {
			movers = append(movers, i)
		}
	}
	slices.SortStableFunc(movers, func(a, b int) int {
		return cmp.Or(cmp.Compare(scale[b], scale[a]), cmp.Compare(choice[a], choice[b]))
	})
	for _, i := range movers {
		c := cands[choice[i]-1]
		if pack(&types[c.typ], scale[i]) {
			placed[i] = c.typ + 1
		} else {
			choice[i] = 0
		}
	}
	for ci, c := range cands {
		i := rows[c.row]
		if placed[i] == 0 && pack(&types[c.typ], scale[i]) {
			placed[i] = c.typ + 1
			choice[i] = ci + 1
		}
	}
	// Replay the final set the way the scheduler's Packer places it (every
	// unchanged gang kept, then the rest largest first, by job ID), and let
	// the gangs that would not be placed wait.
	for j := range types {
		copy(types[j].free, initFree[j])
	}
	var rest []int
	for i := range in.Jobs {
		if placed[i] == 0 {
			continue
		}
		j := placed[i] - 1
		id := in.Jobs[i].ID
		if pinned[i] != 0 || curType[id] == types[j].key && len(curDevs[id]) == scale[i] && keep(i, j) {
			continue
		}
		rest = append(rest, i)
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		return cmp.Or(cmp.Compare(scale[b], scale[a]), cmp.Compare(in.Jobs[a].ID, in.Jobs[b].ID))
	})
	for _, i := range rest {
		if !pack(&types[placed[i]-1], scale[i]) {
			placed[i] = 0
		}
	}
	for i := range in.Jobs {
		if placed[i] == 0 || pinned[i] != 0 {
			continue
		}
		c := cands[choice[i]-1]
		t := &types[c.typ]
		reason := scheduler.ReasonObjective
		if c.stays {
			reason = scheduler.ReasonUnchanged
		}
		targets[i] = scheduler.Target{Job: in.Jobs[i].ID, Type: t.key, Count: scale[i], MaxNodes: nodesFor(scale[i], t.perNode),
			Reason: reason, Note: fmt.Sprintf("%s: share due %.3f of time on %s, received %.3f (job priority %.3g)",
				obj.Name(), c.due, t.key, c.got, c.jobPrio)}
	}
	for r, i := range rows {
		if placed[i] != 0 {
			continue
		}
		best, bt := 0.0, ""
		for j, x := range sol.X[r] {
			if x > best {
				best, bt = x, string(types[j].key)
			}
		}
		targets[i] = scheduler.Target{Job: in.Jobs[i].ID, Reason: scheduler.ReasonObjective,
			Note: fmt.Sprintf("%s: waits this round; share due %.3f (most on %s), jobs further below their share go first", obj.Name(), sum(sol.X[r]), bt)}
		if best == 0 {
			targets[i].Note = fmt.Sprintf("%s: no share this round", obj.Name())
		}
	}
	return targets, nil
}

// credit adds the time since the last round to the jobs that ran, and
// resets the counters when the job set changed long enough ago.
func (p *Policy) credit(in scheduler.Input, curType map[string]accel.TypeKey) {
	st := &p.st
	ids := make([]string, len(in.Jobs))
	for i := range in.Jobs {
		ids[i] = in.Jobs[i].ID
	}
	slices.Sort(ids)
	if st.started {
		dt := in.Now.Sub(st.last)
		for _, id := range ids {
			c := st.jobs[id]
			if c == nil {
				continue
			}
			c.total += dt
			if t, ok := curType[id]; ok && t != "" {
				c.received[t] += dt
			}
		}
	}
	changed := !slices.Equal(ids, st.jobSet)
	if changed && (!st.started || in.Now.Sub(st.lastReset) >= p.cfg.ResetInterval) {
		st.jobs = map[string]*jobCounters{}
		st.lastReset = in.Now
	}
	for _, id := range slices.Sorted(maps.Keys(st.jobs)) {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			delete(st.jobs, id)
		}
	}
	for _, id := range ids {
		if st.jobs[id] == nil {
			st.jobs[id] = &jobCounters{received: map[accel.TypeKey]time.Duration{}}
		}
	}
	st.jobSet = ids
	st.started = true
	st.last = in.Now
}

// pack reserves s devices of type t on as few nodes as the type allows:
// best fit on one node when one has room, else the nodes with the most
// free devices first. It reports false (reserving nothing) when the gang
// cannot be consolidated.
func pack(t *typeInfo, s int) bool {
	limit := nodesFor(s, t.perNode)
	if limit == 1 {
		best := -1
		for k, f := range t.free {
			if f >= s && (best < 0 || f < t.free[best]) {
				best = k
			}
		}
		if best < 0 {
			return false
		}
		t.free[best] -= s
		return true
	}
	order := make([]int, len(t.free))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.free[b], t.free[a]) })
	need := s
	var use []int
	for _, k := range order[:min(limit, len(order))] {
		if need <= 0 || t.free[k] == 0 {
			break
		}
		use = append(use, k)
		need -= t.free[k]
	}
	if need > 0 {
		return false
	}
	need = s
	for _, k := range use {
		d := min(need, t.free[k])
		t.free[k] -= d
		need -= d
	}
	return true
}

func nodesFor(s, perNode int) int {
	if perNode <= 0 {
		return 1
	}
	return (s + perNode - 1) / perNode
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}
