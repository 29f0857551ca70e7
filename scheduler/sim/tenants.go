package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// TenantResult is one tenant's figures in a simulation with
// Config.Queues: a tenant is a leaf queue, and its jobs are the workload
// jobs whose JobSpec.Queue names it.
//
// Guarantee accounting is measured by the simulator itself, after every
// round's plan is applied, from what the jobs hold, not from what the
// scheduler reports:
//
//   - A tenant's demand for type t is the sum, over its submitted,
//     unfinished jobs that can run on t, of the most devices each may get
//     that round as the policy sees it (scheduler.Job.MaxReplicas: the
//     rigid count, the elastic maximum, or an adaptive job's exploration
//     bound). A job that can run on several types counts toward each, so
//     on mixed clusters the figures below are upper bounds.
//   - Its entitlement for t is min(nominal quota for t, demand for t); the
//     nominal quota is the leaf queue's Quota.Nominal for t (0 if none).
//   - The tenant is short in a round when, for some type, the devices its
//     jobs hold are fewer than its entitlement; RoundsShort counts those
//     rounds. A policy may leave a tenant short by its own choice (the
//     goodput policy does not grow a job whose gain does not pay for the
//     restart), so the guarantee is judged on deprivation:
//   - The tenant is below its guarantee in a round when, for some type,
//     its shortfall (entitlement − held) is more than the devices of that
//     type left free after the round (healthy, held by no job): some of
//     what it is entitled to is held by other tenants. A run of
//     consecutive such rounds starts with the round in which it was first
//     seen, the reclaim round (the scheduler may need it to take lent
//     devices back); RoundsBelowGuarantee counts the rounds of each run
//     after it, the rounds a reclaim within one round leaves at zero.
//   - A reclaim starts in a round when, for some type, the tenant's
//     entitlement exceeds what it held at the end of the previous round by
//     more than the devices of that type that were free then (healthy,
//     held by no job), so that other tenants' jobs must give devices back;
//     it completes at the first round, from that one on, in which the
//     tenant is not below its guarantee. ReclaimRounds sums, and MaxReclaimRounds is the
//     largest of, the rounds each completed reclaim took (0 = met in the
//     round the demand returned).
//
// With Config.IgnoreQueues the same accounting runs against the same
// quotas while the scheduler sees one shared pool: that shows what the
// guarantees would have been worth.
type TenantResult struct {
	// Name is the leaf queue's name.
	Name string `json:"name"`
	// Jobs and Completed count the tenant's jobs.
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	// AvgJCT is the mean JCT of its completed jobs.
	AvgJCT time.Duration `json:"avg_jct"`
	// AvgQueueDelay is the mean, over its jobs that started, of first
	// start − submit.
	AvgQueueDelay time.Duration `json:"avg_queue_delay"`
	// GPUHours is the device time its jobs held, stalls included.
	GPUHours float64 `json:"gpu_hours"`
	// Guaranteed is the sum over types of its nominal quotas (devices).
	Guaranteed int `json:"guaranteed"`
	// RoundsShort counts the rounds it held less than its entitlement;
	// RoundsBelowGuarantee the rounds it was below its guarantee (short by
	// more than the free devices), without the first round of each run of
	// such rounds (see the type's doc).
	RoundsShort          int `json:"rounds_short"`
	RoundsBelowGuarantee int `json:"rounds_below_guarantee"`
	// Reclaims counts the reclaims that started; OpenReclaims those not
	// completed when the simulation ended.
	Reclaims     int `json:"reclaims"`
	OpenReclaims int `json:"open_reclaims"`
	// ReclaimRounds and MaxReclaimRounds sum and bound the rounds the
	// completed reclaims took.
	ReclaimRounds    int `json:"reclaim_rounds"`
	MaxReclaimRounds int `json:"max_reclaim_rounds"`
}

// tenancy is the engine's per-tenant accounting (nil without
// Config.Queues).
type tenancy struct {
	names []string // leaf queues, by name
	nt    int      // cluster types (e.types order)
	guar  []int    // [tenant*nt+type] nominal quota
	ten   []int    // per engine job index: its tenant
	jobTy [][]int  // per engine job index: type indices it may use (lazily)
	tyIdx map[accel.TypeKey]int
	node  [][]int // per node: devices per type index

	round          int
	used, want     []int  // this round, [tenant*nt+type]
	prevUsed, free []int  // previous round: held per tenant, free per type
	curFree        []int  // this round: free per type
	below          []bool // previous round: below guarantee
	open           []int  // round the tenant's open reclaim started; -1 = none
	res            []TenantResult
}

// validateQueues checks what the simulator needs of Config.Queues (the
// scheduler validates the tree itself): unique, non-empty names, and every
// job naming a leaf queue.
func (c *Config) validateQueues() error {
	if len(c.Queues) == 0 {
		if c.IgnoreQueues {
			return fmt.Errorf("%w: IgnoreQueues without Queues", ErrInvalid)
		}
		return nil
	}
	leaves, err := leafQueues(c.Queues)
	if err != nil {
		return err
	}
	for i, j := range c.Jobs {
		if _, ok := slices.BinarySearch(leaves, j.Queue); !ok {
			return fmt.Errorf("%w: Jobs[%d] (%s): Queue %q is not a leaf queue of Config.Queues", ErrInvalid, i, j.Name, j.Queue)
		}
	}
	return nil
}

// leafQueues returns the names of the queues no queue names as its
// parent, sorted.
func leafQueues(qs []quota.Queue) ([]string, error) {
	parent := make(map[string]bool, len(qs))
	seen := make(map[string]bool, len(qs))
	for i, q := range qs {
		if q.Name == "" || seen[q.Name] {
			return nil, fmt.Errorf("%w: Queues[%d]: empty or duplicate name %q", ErrInvalid, i, q.Name)
		}
		seen[q.Name] = true
		if q.Parent != "" {
			parent[q.Parent] = true
		}
	}
	var leaves []string
	for _, q := range qs {
		if !parent[q.Name] {
			leaves = append(leaves, q.Name)
		}
	}
	slices.Sort(leaves)
	return leaves, nil
}

// newTenancy sets up the accounting for e's Config.Queues (validated).
func (e *engine) newTenancy() {
	if len(e.cfg.Queues) == 0 {
		return
	}
	leaves, _ := leafQueues(e.cfg.Queues)
	t := &tenancy{names: leaves, nt: len(e.types), tyIdx: map[accel.TypeKey]int{}}
	for i, ty := range e.types {
		t.tyIdx[ty] = i
	}
	n := len(leaves) * t.nt
	t.guar = make([]int, n)
	for _, q := range e.cfg.Queues {
		k, ok := slices.BinarySearch(leaves, q.Name)
		if !ok {
			continue
		}
		for _, qu := range q.Quotas {
			if ti, ok := t.tyIdx[qu.Type]; ok {
				t.guar[k*t.nt+ti] += qu.Nominal
			}
		}
	}
	t.ten = make([]int, len(e.jobs))
	t.jobTy = make([][]int, len(e.jobs))
	for i, j := range e.jobs {
		t.ten[i], _ = slices.BinarySearch(leaves, j.spec.Queue)
	}
	for _, nd := range e.cluster.Nodes {
		per := make([]int, t.nt)
		for _, d := range nd.Devices {
			if ti, ok := t.tyIdx[d.Type]; ok {
				per[ti]++
			}
		}
		t.node = append(t.node, per)
	}
	t.used, t.want = make([]int, n), make([]int, n)
	t.prevUsed, t.free = make([]int, n), make([]int, t.nt)
	t.curFree = make([]int, t.nt)
	t.below = make([]bool, len(leaves))
	t.open = make([]int, len(leaves))
	for k := range t.open {
		t.open[k] = -1
	}
	t.res = make([]TenantResult, len(leaves))
	for k, name := range leaves {
		t.res[k].Name = name
		for ti := range t.nt {
			t.res[k].Guaranteed += t.guar[k*t.nt+ti]
		}
	}
	e.ten = t
}

// maxReplicas is the most devices job j may get this round, what describe
// shows the policy as MaxReplicas and the tenant accounting counts as its
// demand: a rigid job's count; an elastic job's fixed batch over the least
// local batch; an adaptive job's Estimator's exploration bound (1 before
// it has one); the last two capped by the application's MaxReplicas.
func (e *engine) maxReplicas(j *job) int {
	app := j.app
	maxRep := 1
	if j.w > 0 {
		if app.MaxReplicas > 0 {
			return min(j.w, app.MaxReplicas)
		}
		return j.w
	}
	switch e.cfg.Kind {
	case scheduler.Rigid:
		return j.spec.Replicas
	case scheduler.Elastic:
		maxRep = max(j.fixedBatch()/max(app.MinLocal, 1), 1)
	default:
		if j.lrn != nil {
			maxRep = j.lrn.est.MaxReplicas()
		}
	}
	if app.MaxReplicas > 0 {
		maxRep = min(maxRep, app.MaxReplicas)
	}
	return maxRep
}

// observeTenants does the guarantee accounting of one round, after its
// plan was applied (see TenantResult).
func (e *engine) observeTenants() {
	t := e.ten
	if t == nil {
		return
	}
	clear(t.used)
	clear(t.want)
	for _, j := range e.live {
		if j.done || j.submit > e.now {
			continue
		}
		k := t.ten[j.idx]
		if len(j.devs) > 0 {
			if ti, ok := t.tyIdx[j.typ]; ok {
				t.used[k*t.nt+ti] += len(j.devs)
			}
		}
		if t.jobTy[j.idx] == nil {
			t.jobTy[j.idx] = []int{}
			for _, ty := range e.jobTypes(j) {
				t.jobTy[j.idx] = append(t.jobTy[j.idx], t.tyIdx[ty])
			}
		}
		d := e.maxReplicas(j)
		for _, ti := range t.jobTy[j.idx] {
			t.want[k*t.nt+ti] += d
		}
	}
	// Free devices per type after this round's plan.
	clear(t.curFree)
	for i, per := range t.node {
		if e.down[i] == 0 {
			for ti, c := range per {
				t.curFree[ti] += c
			}
		}
	}
	for i, u := range t.used {
		t.curFree[i%t.nt] -= u
	}
	for k := range t.names {
		short, below, reclaim := false, false, false
		for ti := range t.nt {
			i := k*t.nt + ti
			t.want[i] = min(t.want[i], t.guar[i])
			if t.used[i] < t.want[i] {
				short = true
				if t.want[i]-t.used[i] > t.curFree[ti] {
					below = true
				}
			}
			if t.round > 0 && t.want[i]-t.prevUsed[i] > t.free[ti] {
				reclaim = true
			}
		}
		r := &t.res[k]
		if reclaim && t.open[k] < 0 {
			t.open[k] = t.round
			r.Reclaims++
		}
		if short {
			r.RoundsShort++
		}
		if below {
			if t.below[k] {
				r.RoundsBelowGuarantee++
			}
		} else if t.open[k] >= 0 {
			took := t.round - t.open[k]
			r.ReclaimRounds += took
			r.MaxReclaimRounds = max(r.MaxReclaimRounds, took)
			t.open[k] = -1
		}
		t.below[k] = below
	}
	copy(t.free, t.curFree)
	copy(t.prevUsed, t.used)
	t.round++
}

// tenantResults completes the per-tenant figures from the jobs.
func (e *engine) tenantResults() []TenantResult {
	t := e.ten
	if t == nil {
		return nil
	}
	out := slices.Clone(t.res)
	jct := make([]float64, len(out))
	delay := make([]float64, len(out))
	started := make([]int, len(out))
	for _, j := range e.jobs {
		k := t.ten[j.idx]
		r := &out[k]
		r.Jobs++
		r.GPUHours += j.attained / 3600
		if j.started {
			started[k]++
			delay[k] += j.startAt - j.submit
		}
		if j.done {
			r.Completed++
			jct[k] += j.finish - j.submit
		}
	}
	for k := range out {
		if out[k].Completed > 0 {
			out[k].AvgJCT = dur(jct[k] / float64(out[k].Completed))
		}
		if started[k] > 0 {
			out[k].AvgQueueDelay = dur(delay[k] / float64(started[k]))
		}
		if t.open[k] >= 0 {
			out[k].OpenReclaims = 1
		}
	}
	return out
}
