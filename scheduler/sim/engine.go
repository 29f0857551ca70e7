package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// Faults configures injected node failures. The zero value injects none.
type Faults struct {
	// MTBF is each node's mean time between failures (exponential); 0 =
	// no failures.
	MTBF time.Duration
	// Repair is how long a failed node stays down (default 1 h).
	Repair time.Duration
	// Seed seeds the failure process.
	Seed uint64
}

// Status is reported after every simulated round through Config.Progress.
type Status struct {
	Now       time.Duration // virtual time since the start of the workload
	Submitted int
	Running   int
	Completed int
	Jobs      int
}

// Config is one simulation. The zero value of every optional field is a
// documented default; Cluster, Jobs, Apps and Policy (or Scheduler) are
// required.
type Config struct {
	// Cluster is the simulated cluster (for example from accel.ParseSpec).
	Cluster accel.Cluster
	// Jobs is the workload.
	Jobs []JobSpec
	// Apps maps application names to their measured profiles (the ground
	// truth); every job's Application must be present.
	Apps map[string]*Application
	// Policy decides each round; it is realised by a scheduler.Scheduler
	// with Placer. Ignored when Scheduler is set.
	Policy scheduler.Policy
	// Placer realises the policy's targets; nil = the Scheduler's default
	// (placement.RoundPlacer, and the policy may offer its own layout).
	Placer placement.Placer
	// Scheduler, if set, is used as is instead of Policy and Placer (for
	// example one built with scheduler.Config.AllowInterference).
	Scheduler *scheduler.Scheduler
	// Kind says how the simulator presents workload jobs to the policy.
	// The zero value is scheduler.Rigid: each job runs on exactly the
	// workload's num_replicas devices with its batch_size (FIFO,
	// Tiresias). scheduler.Elastic keeps the workload's batch size but
	// lets the policy choose any count from 1 to batch_size / MinLocal
	// (Optimus). scheduler.Adaptive ignores num_replicas and batch_size:
	// the policy chooses any count from 0 to the job's maximum and the job
	// picks its batch size with its goodput model, as in Pollux; set it
	// explicitly for the goodput policy.
	Kind scheduler.Kind
	// PerType gives adaptive jobs one goodput model per accelerator type,
	// bootstrapped from a one-device profile on every type at arrival (as
	// in Sia). Without it a job has a single model that ignores the type
	// (heterogeneity-blind).
	PerType bool
	// Oracle gives Elastic and Rigid jobs a Speedup and RemainingWork
	// computed from the ground truth, as the published Optimus+Oracle
	// baseline has. Adaptive jobs always learn from measurements.
	Oracle bool
	// Interval is the scheduling round, 1 s to MaxInterval (default: the
	// Policy's own round length when it implements scheduler.RoundLength,
	// as Gavel's 6-minute rounds do, else 60 s).
	Interval time.Duration
	// InterferenceSlowdown is the workload's physics, not a scheduling
	// setting: every distributed job that shares a node with another
	// distributed job runs slower by this fraction, in [0, 1) (default
	// 0). Whether the scheduler avoids such sharing is
	// scheduler.Config.AllowInterference.
	InterferenceSlowdown float64
	// MaxReplicas caps any job's device count for adaptive jobs (default
	// 64, as the Pollux simulator).
	MaxReplicas int
	// Explore is the adaptive jobs' exploration growth: a job is offered
	// at most Explore × the most devices it has run on (1 before its
	// first run). 0 = goodput.DefaultExplore (4); the Pollux simulator
	// uses 2.
	Explore int
	// Faults injects node failures (default none).
	Faults Faults
	// Start is the wall-clock time of the workload's time 0, used for
	// Input.Now and Job.Submitted (default 2021-01-01 UTC). The simulator
	// never reads the real clock.
	Start time.Time
	// Horizon stops the simulation at this virtual time even if jobs
	// remain (default 60 days), or earlier when nothing can change any more
	// (no job runs or is yet to arrive, and the policy places none of the
	// waiting ones); unfinished jobs are reported, not lost.
	Horizon time.Duration
	// Tiers, if set, slows each gang by the network tiers its nodes span
	// and reports every round (see Tiers). Default nil: no tiers.
	Tiers *Tiers
	// Progress, if set, is called after every round from the goroutine
	// running the simulation.
	Progress func(Status)
	// EveryRound calls the policy every round. By default, when Kind is
	// scheduler.Rigid (the zero value) a round is skipped when nothing the
	// rigid baselines decide on has changed since the previous call: no
	// arrival, completion, node failure or repair, and no job waiting. Their plan would be the same,
	// and skipping makes large, lightly loaded clusters fast.
	EveryRound bool
	// Carbon is the grid's carbon intensity over the run, on the wall
	// clock that Start anchors (which must fall inside it): the ground
	// truth the run's energy is charged against, and, as a perfect
	// forecast of up to ForecastHorizon, every round's Input.Carbon. The
	// zero Series accounts nothing; with one, Result.EnergyKWh and
	// CarbonKg are set (busy and idle devices, every round), and a run
	// that outlasts the series fails with ErrInvalid.
	Carbon carbon.Series
	// Power is the power model of the devices; the zero value is the
	// accel catalog's TDPs at PUE 1 (see energy.PowerModel; its PUE
	// multiplies IT energy into facility energy).
	Power energy.PowerModel
	// Slack, when positive, gives every job a deadline, its submission
	// plus its isolated run time (JobResult.Isolated) plus Slack, and
	// makes it delay-tolerant; the policy also sees its remaining work
	// (ground truth: its isolated configuration's remaining time, times
	// that configuration's speedup over one device as the job's Speedup
	// predicts it) and Result.DeadlineMisses is counted. 0 = no
	// deadlines.
	Slack time.Duration
	// Queues, if set, is the quota tree passed as scheduler.Input.Queues
	// every round: each job is submitted to the leaf queue its
	// JobSpec.Queue names (required then), and Result.Tenants reports per
	// leaf queue (see TenantResult). Default none: one pool, no quotas.
	Queues []quota.Queue
	// IgnoreQueues shows the scheduler no queues (one shared pool) while
	// Result.Tenants still accounts against Queues' quotas, for comparing
	// a shared pool with quotas (requires Queues).
	IgnoreQueues bool
	// Provision, if set, powers nodes up and down every round (see
	// Provisioner): the devices of a node that is not on, or still moving
	// between states, are not offered to the policy, and the energy
	// account (Carbon, required then) charges every node's state and
	// transitions with Power.Nodes. Default nil: every node stays on.
	Provision Provisioner
	// Variability, if set, makes devices differ in speed and change over
	// time, and has the scheduler learn it online (see Variability).
	// Default nil: every device of a type is equally fast.
	Variability *Variability
	// Services take their devices first every round (see Service);
	// default none. They cannot be combined with Queues, Faults or
	// Provision.
	Services []Service
}

// job is the simulator's state of one job.
type job struct {
	spec   JobSpec
	app    *Application
	idx    int
	submit float64 // seconds

	// allocation
	typ    accel.TypeKey
	counts []int // devices per node, in cluster node order
	devs   []string
	nodes  []int // node indices used
	// keep is the fraction of its throughput the job keeps on its nodes
	// (Config.Tiers; set on each allocation).
	keep float64

	local, accum int
	batch        int

	stall    float64
	progress float64
	epoch    int
	ckptProg float64
	ckptEp   int

	attained float64 // device-seconds
	allocs   int     // allocations so far
	started  bool
	startAt  float64
	done     bool
	finish   float64
	failures int

	// cached ground truth for the current configuration
	stepKey    [3]int // local, accum, epoch of cached rate
	cachedRate float64
	rateValid  bool
	// gen counts the job's allocations (type and per-node counts); the
	// memos below are valid for one gen.
	gen int
	// step and sync time of the allocation at per-device batch stepLocal
	// (Application.StepTime is a pure function of them).
	stepGen, stepLocal int
	stepT, syncT       float64
	stepOK, stepMemo   bool
	// devIdx holds the index of each of devs in the engine's device
	// order (-1: unknown device), for the invariant check.
	devIdx []int
	// rb is the state right after the last rebatch; a rebatch with the
	// same inputs (allocation, curve, plan) would leave it unchanged.
	rb rebatchState

	// W-jobs (EasyScale; Config.Kind not rigid, JobSpec.Workers > 0): w
	// is W, wlocal each worker's samples per step, workers the workers
	// each of devs hosts, wmodel the throughput model the policy sees
	// (rebuilt when the learner's version moves).
	w, wlocal int
	workers   []int
	wmodel    *goodput.WorkerModel
	wmodelVer int
	// what the job has measured (adaptive jobs)
	lrn    *learner
	plan   goodput.BatchPlan
	oracle *fixedBatchSpeedup
}

type engine struct {
	cfg      Config
	sched    *scheduler.Scheduler
	cluster  accel.Cluster
	perNode  map[accel.TypeKey]int
	types    []accel.TypeKey
	jobs     []*job
	byName   map[string]*job
	now      float64
	down     []float64 // per node: time when it comes back (0 = up)
	nextFail []float64
	rng      *rand.Rand
	util     []UtilSample
	// changed is set by arrivals, completions, failures and repairs; the
	// quiet-round rule reads it.
	changed   bool
	submitted int
	// pending holds the jobs by arrival; next is the first not yet
	// arrived. live holds the arrived, unfinished jobs in workload order
	// (refreshed by refreshLive; may briefly hold jobs completed since).
	pending  []*job
	next     int
	live     []*job
	finished int
	healthy  int
	moved    bool // allocations or health changed: check invariants
	// noMemo turns off the per-job memos of step times and rebatch
	// outcomes and the batch plans jobs share (tests compare the two).
	noMemo bool
	// plans shares the batch plans of equal goodput models between the
	// jobs' curves (jobs of one application often learn the same model).
	plans *goodput.PlanCache
	// invariant-check state, indexed like devIdx: where each device is
	// in cluster.Nodes, and which job held it at check number checks
	// (ownedAt; a device is free in this check unless ownedAt == checks)
	devIdx  map[string]int
	devAt   [][2]int
	owner   []int
	ownedAt []int
	checks  int
	// grid holds deadlines and the energy account (Config.Carbon, Slack).
	grid *grid
	// ten is the per-tenant accounting (nil without Config.Queues).
	ten *tenancy
	// pow is the nodes' power state (nil without Config.Provision).
	pow *power
	// tiersErr is the first bad Tiers.Keep value (Config.Tiers).
	tiersErr error
	// speed is the per-device speed state (nil without Config.Variability).
	speed *speedState
	// svcs are Config.Services' state; serviceShortfall counts the
	// replica-rounds they asked for and found no room for.
	svcs             []*service
	serviceShortfall int
}

func (c *Config) validate() error {
	if err := c.Cluster.Validate(); err != nil {
		return fmt.Errorf("%w: Cluster: %w", ErrInvalid, err)
	}
	if c.Cluster.Size() == 0 {
		return fmt.Errorf("%w: Cluster has no devices", ErrInvalid)
	}
	if len(c.Jobs) == 0 {
		return fmt.Errorf("%w: Jobs is empty", ErrInvalid)
	}
	if c.Policy == nil && c.Scheduler == nil {
		return fmt.Errorf("%w: Policy is nil", ErrInvalid)
	}
	if c.Interval < 0 || c.Horizon < 0 || c.Faults.MTBF < 0 || c.Faults.Repair < 0 || c.MaxReplicas < 0 || c.Explore < 0 {
		return fmt.Errorf("%w: negative Interval, Horizon, MaxReplicas, Explore or Faults duration", ErrInvalid)
	}
	if c.Interval == 0 {
		c.Interval = 60 * time.Second
		if rl, ok := c.Policy.(scheduler.RoundLength); ok && c.Scheduler == nil && rl.RoundLength() > 0 {
			c.Interval = rl.RoundLength()
		}
	}
	if c.Interval < time.Second || c.Interval > MaxInterval {
		return fmt.Errorf("%w: Interval %v is outside [1s, %v]", ErrInvalid, c.Interval, MaxInterval)
	}
	if c.Horizon == 0 {
		c.Horizon = 60 * 24 * time.Hour
	}
	if c.MaxReplicas == 0 {
		c.MaxReplicas = 64
	}
	if c.Explore == 0 {
		c.Explore = goodput.DefaultExplore
	}
	if c.Faults.Repair == 0 {
		c.Faults.Repair = time.Hour
	}
	if !(c.InterferenceSlowdown >= 0 && c.InterferenceSlowdown < 1) {
		return fmt.Errorf("%w: InterferenceSlowdown %v is outside [0, 1)", ErrInvalid, c.InterferenceSlowdown)
	}
	if c.Kind < scheduler.Rigid || c.Kind > scheduler.Adaptive {
		return fmt.Errorf("%w: Kind %d", ErrInvalid, c.Kind)
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if err := c.checkGrid(); err != nil {
		return err
	}
	if err := c.validateQueues(); err != nil {
		return err
	}
	if err := c.validateServices(); err != nil {
		return err
	}
	types := c.Cluster.Types()
	seen := make(map[string]bool, len(c.Jobs))
	for i, j := range c.Jobs {
		if j.Name == "" || seen[j.Name] {
			return fmt.Errorf("%w: Jobs[%d]: empty or duplicate name %q", ErrInvalid, i, j.Name)
		}
		seen[j.Name] = true
		if j.Submit < 0 || j.Replicas < 1 || j.BatchSize < 1 {
			return fmt.Errorf("%w: Jobs[%d] (%s): negative submit time or non-positive replicas/batch", ErrInvalid, i, j.Name)
		}
		app := c.Apps[j.Application]
		if app == nil {
			return fmt.Errorf("%w: Jobs[%d] (%s): %q", ErrUnknownApplication, i, j.Name, j.Application)
		}
		if len(app.runs) == 0 || len(app.perf) == 0 || !(app.target > 0) {
			return fmt.Errorf("%w: Apps[%q] was not built by LoadProfiles", ErrInvalid, j.Application)
		}
		if !profiledOn(app, types) {
			return fmt.Errorf("%w: Jobs[%d] (%s): application %q has profiles for %v, none for the cluster's types %v", ErrInvalid, i, j.Name, j.Application, app.Types(), types)
		}
	}
	return nil
}

// MaxInterval is the longest Config.Interval: a round longer than a day
// leaves every job's start, growth and completion to the next day.
const MaxInterval = 24 * time.Hour

// profiledOn reports whether app has measurements on one of types.
func profiledOn(app *Application, types []accel.TypeKey) bool {
	for _, t := range types {
		if _, _, ok := app.LocalRange(t); ok {
			return true
		}
	}
	return false
}

// UnprofiledTypes returns the cluster's device types that no application
// in apps has measurements for, sorted. The simulator never gives such
// devices to a job (it would have no step times there), so they stay
// idle; a host should say so before a run. Run refuses a job whose
// application covers none of the cluster's types.
func UnprofiledTypes(c accel.Cluster, apps map[string]*Application) []accel.TypeKey {
	var out []accel.TypeKey
	for _, t := range c.Types() {
		covered := false
		for _, a := range apps {
			if a != nil && profiledOn(a, []accel.TypeKey{t}) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, t)
		}
	}
	return out
}

// Run simulates cfg to completion (or to cfg.Horizon) on a virtual clock
// and returns the metrics. It returns an error for an invalid Config (ErrInvalid,
// ErrUnknownApplication), when the scheduler fails, when ctx is done, and
// (ErrLostJob) if a job ever goes missing. Run is safe to call
// concurrently with distinct Configs (policies and applications may be
// shared if they are safe for concurrent use).
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	e, err := newEngine(cfg)
	if err != nil {
		return Result{}, err
	}
	if err := e.loop(ctx); err != nil {
		return Result{}, err
	}
	return e.result()
}

// device returns the node position and type of device id (0 and "" when
// the cluster has no such device).
func (e *engine) device(id string) (node int, typ accel.TypeKey) {
	i, ok := e.devIdx[id]
	if !ok {
		return 0, ""
	}
	at := e.devAt[i]
	return at[0], e.cluster.Nodes[at[0]].Devices[at[1]].Type
}

func newEngine(cfg Config) (*engine, error) {
	e := &engine{cfg: cfg, perNode: map[accel.TypeKey]int{}, byName: map[string]*job{},
		plans: goodput.NewPlanCache(0)}
	e.cluster = cloneCluster(cfg.Cluster)
	e.devIdx = make(map[string]int, e.cluster.Size())
	for i, n := range e.cluster.Nodes {
		per := map[accel.TypeKey]int{}
		for k, d := range n.Devices {
			e.devIdx[d.ID] = len(e.devIdx)
			e.devAt = append(e.devAt, [2]int{i, k})
			per[d.Type]++
		}
		for t, k := range per {
			e.perNode[t] = max(e.perNode[t], k)
		}
	}
	e.types = e.cluster.Types()
	if cfg.Scheduler != nil {
		e.sched = cfg.Scheduler
	} else {
		s, err := scheduler.New(scheduler.Config{Policy: cfg.Policy, Placer: cfg.Placer})
		if err != nil {
			return nil, fmt.Errorf("%w: scheduler: %w", ErrInvalid, err)
		}
		e.sched = s
	}
	for i, s := range cfg.Jobs {
		j := &job{spec: s, app: cfg.Apps[s.Application], idx: i, submit: s.Submit.Seconds()}
		if s.Workers > 0 && cfg.Kind != scheduler.Rigid {
			j.w = s.Workers
			j.wlocal = (j.fixedBatch() + j.w - 1) / j.w
		}
		e.jobs = append(e.jobs, j)
		e.byName[s.Name] = j
	}
	e.newTenancy()
	var err error
	if e.speed, err = newSpeedState(e); err != nil {
		return nil, err
	}
	e.pending = slices.Clone(e.jobs)
	slices.SortStableFunc(e.pending, func(a, b *job) int { return cmp.Compare(a.submit, b.submit) })
	e.healthy = e.cluster.Size()
	e.down = make([]float64, len(e.cluster.Nodes))
	e.nextFail = make([]float64, len(e.cluster.Nodes))
	if cfg.Faults.MTBF > 0 {
		e.rng = rand.New(rand.NewPCG(cfg.Faults.Seed, 0x9e3779b97f4a7c15))
		for i := range e.nextFail {
			e.nextFail[i] = e.rng.ExpFloat64() * cfg.Faults.MTBF.Seconds()
		}
	}
	return e, nil
}

func cloneCluster(c accel.Cluster) accel.Cluster {
	out := accel.Cluster{Nodes: make([]accel.Node, len(c.Nodes))}
	for i, n := range c.Nodes {
		out.Nodes[i] = n
		out.Nodes[i].Devices = slices.Clone(n.Devices)
		for k := range out.Nodes[i].Devices {
			out.Nodes[i].Devices[k].Healthy = true
		}
	}
	return out
}

// jobTypes is the list of cluster types the job has measurements for.
func (e *engine) jobTypes(j *job) []accel.TypeKey {
	var ts []accel.TypeKey
	for _, t := range e.types {
		if _, _, ok := j.app.LocalRange(t); ok {
			ts = append(ts, t)
		}
	}
	return ts
}

func (e *engine) loop(ctx context.Context) error {
	dt := e.cfg.Interval.Seconds()
	horizon := e.cfg.Horizon.Seconds()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.schedule(ctx); err != nil {
			return err
		}
		if e.cfg.Tiers != nil {
			if e.tiersErr != nil {
				return e.tiersErr
			}
			e.observeTiers()
		}
		e.sample()
		e.observeTenants()
		if e.allDone() || e.now >= horizon || e.stuck() {
			return nil
		}
		if err := e.account(dt); err != nil {
			return err
		}
		e.advance(dt)
		if err := e.reportSpeeds(); err != nil {
			return err
		}
		e.now += dt
		e.faults()
		if e.moved {
			e.moved = false
			if err := e.checkInvariants(); err != nil {
				return err
			}
		}
		if e.cfg.Progress != nil {
			e.cfg.Progress(e.status())
		}
		if e.allDone() {
			e.sample()
			return nil
		}
	}
}

// stuck reports that nothing can change any more: no job runs, none is
// yet to arrive, no node is down, no service holds devices, no waiting job has a deadline ahead (a
// carbon-aware policy may be deferring it; Config.Slack), and the policy
// placed none of the waiting jobs (for example gangs larger than the
// cluster).
func (e *engine) stuck() bool {
	if e.next < len(e.pending) {
		return false
	}
	for _, j := range e.live {
		if !j.done && len(j.devs) > 0 {
			return false
		}
	}
	for _, d := range e.down {
		if d > 0 {
			return false
		}
	}
	for _, s := range e.svcs {
		if len(s.replicas) > 0 {
			return false // it may give its devices back
		}
	}
	return !e.deferrable() && !e.powering()
}

func (e *engine) allDone() bool { return e.finished == len(e.jobs) }

func (e *engine) status() Status {
	e.refreshLive()
	s := Status{Now: dur(e.now), Jobs: len(e.jobs), Completed: e.finished, Submitted: e.finished + len(e.live)}
	for _, j := range e.live {
		if len(j.devs) > 0 {
			s.Running++
		}
	}
	return s
}

func dur(sec float64) time.Duration { return time.Duration(math.Round(sec * float64(time.Second))) }

// refreshLive drops completed jobs from the live list and adds arrivals.
func (e *engine) refreshLive() {
	k := 0
	for _, j := range e.live {
		if !j.done {
			e.live[k] = j
			k++
		}
	}
	clear(e.live[k:])
	e.live = e.live[:k]
	added := false
	for e.next < len(e.pending) && e.pending[e.next].submit <= e.now {
		e.live = append(e.live, e.pending[e.next])
		e.next++
		added = true
	}
	if added {
		slices.SortFunc(e.live, func(a, b *job) int { return cmp.Compare(a.idx, b.idx) })
	}
}

// active returns the submitted, unfinished jobs in workload order.
func (e *engine) active() []*job {
	e.refreshLive()
	return slices.Clone(e.live)
}

// schedule runs one round: build the Input, ask the scheduler, apply the plan.
func (e *engine) schedule(ctx context.Context) error {
	act := e.active()
	e.reserveServices()
	if len(act) != e.submitted {
		e.changed = true
	}
	if len(act) == 0 {
		return e.provision(ctx, nil)
	}
	if e.cfg.Kind == scheduler.Rigid && !e.cfg.EveryRound && !e.changed {
		quiet := true
		for _, j := range act {
			if len(j.devs) == 0 {
				quiet = false
				break
			}
		}
		if quiet {
			return nil
		}
	}
	e.changed, e.submitted = false, len(act)
	in := scheduler.Input{Cluster: e.cluster, Now: e.cfg.Start.Add(dur(e.now))}
	in.Carbon = e.forecast(in.Now)
	in.Speeds = e.speeds()
	if !e.cfg.IgnoreQueues {
		in.Queues = e.cfg.Queues
	}
	in.Jobs = make([]scheduler.Job, 0, len(act))
	running := 0
	for _, j := range act {
		if len(j.devs) > 0 {
			running++
		}
	}
	if running > 0 {
		in.Current = make([]placement.Assignment, 0, running)
	}
	for _, j := range act {
		in.Jobs = append(in.Jobs, e.describe(j))
		if len(j.devs) > 0 {
			in.Current = append(in.Current, placement.Assignment{Job: j.spec.Name, Devices: slices.Clone(j.devs), Workers: slices.Clone(j.workers)})
		}
	}
	if err := e.provision(ctx, &in); err != nil {
		return err
	}
	e.serviceInput(&in)
	plan, err := e.sched.Schedule(ctx, in)
	if err != nil {
		return fmt.Errorf("sim: round at %v: %w", dur(e.now), err)
	}
	if len(plan.Decisions) != len(in.Jobs) {
		return fmt.Errorf("%w: round at %v: %d decisions for %d active jobs", ErrLostJob, dur(e.now), len(plan.Decisions), len(in.Jobs))
	}
	for _, d := range plan.Decisions {
		if e.isService(d.Job) {
			continue // the service's own count rules (Service)
		}
		j := e.byName[d.Job]
		if j == nil || j.done || j.submit > e.now {
			return fmt.Errorf("%w: plan names job %q which is not active", ErrLostJob, d.Job)
		}
		devs := d.Assignment.Devices
		if d.To == 0 {
			devs = nil
		}
		if err := e.checkWorkers(j, d); err != nil {
			return err
		}
		if j.w > 0 {
			if !e.sameGang(j, devs, d.Assignment.Workers) {
				e.reallocate(j, d.Type, devs, d.Batch)
				j.workers = slices.Clone(d.Assignment.Workers)
			}
			continue
		}
		if slices.Equal(devs, j.devs) {
			continue
		}
		if e.sameShape(j, devs) {
			// The same devices in another order (a kept job's devices
			// are listed in canonical order, not the order it started
			// with), or other devices of its type on the same nodes, as
			// many per node: the job keeps running, as in the Pollux
			// simulator, which tracks GPUs per node only.
			j.devs = slices.Clone(devs)
			e.indexDevices(j)
			e.moved = true
			continue
		}
		e.reallocate(j, d.Type, devs, d.Batch)
	}
	return nil
}

// sameShape reports whether devs are as many devices of job j's type on
// each of j's nodes as it holds now (a relabelling within nodes).
func (e *engine) sameShape(j *job, devs []string) bool {
	if len(devs) == 0 || len(devs) != len(j.devs) {
		return false
	}
	per := make(map[int]int, len(j.nodes))
	for _, d := range devs {
		n, t := e.device(d)
		if t != j.typ {
			return false
		}
		per[n]++
	}
	if len(per) != len(j.nodes) {
		return false
	}
	for k, n := range j.nodes {
		if per[n] != j.counts[k] {
			return false
		}
	}
	return true
}

// describe builds what the policy sees of job j: never the ground truth
// (except the Optimus oracle's, when Config.Oracle is set).
func (e *engine) describe(j *job) scheduler.Job {
	sj := scheduler.Job{
		ID:        j.spec.Name,
		Submitted: e.cfg.Start.Add(j.spec.Submit),
		Attained:  dur(j.attained),
		Restarts:  max(j.allocs-1, 0),
		Types:     e.jobTypes(j),
	}
	if e.ten != nil && !e.cfg.IgnoreQueues {
		sj.Queue = j.spec.Queue
	}
	if j.w > 0 {
		e.describeW(j, &sj)
		e.carbonView(j, &sj)
		return sj
	}
	switch e.cfg.Kind {
	case scheduler.Rigid:
		sj.Kind = scheduler.Rigid
		sj.Requested, sj.MinReplicas, sj.MaxReplicas = j.spec.Replicas, j.spec.Replicas, j.spec.Replicas
		if w := j.spec.Workers; w > 0 {
			// A W-job under a rigid policy: its world size on as many
			// devices, one worker each.
			sj.Workers, sj.Requested, sj.MinReplicas, sj.MaxReplicas = w, w, w, w
		}
		if e.cfg.Oracle {
			e.oracleView(j, &sj, j.spec.Replicas)
		}
	case scheduler.Elastic:
		sj.Kind = scheduler.Elastic
		maxRep := e.maxReplicas(j)
		sj.MinReplicas, sj.MaxReplicas, sj.Requested = 1, maxRep, min(j.spec.Replicas, maxRep)
		if e.cfg.Oracle {
			e.oracleView(j, &sj, maxRep)
		}
	default:
		sj.Kind = scheduler.Adaptive
		e.learnerOf(j) // its Estimator gives the exploration bound
		maxRep := e.maxReplicas(j)
		sj.MinReplicas, sj.MaxReplicas, sj.Requested = 0, maxRep, 1
		sj.Speedup = e.speedupOf(j, maxRep)
	}
	e.carbonView(j, &sj)
	return sj
}

// fixedBatch is the total batch of a job that does not adapt it.
func (j *job) fixedBatch() int {
	if j.app.FixedBatch > 0 {
		return j.app.FixedBatch
	}
	return j.spec.BatchSize
}

func (e *engine) oracleView(j *job, sj *scheduler.Job, maxRep int) {
	if j.oracle == nil {
		j.oracle = newFixedBatchSpeedup(j.app, j.fixedBatch(), maxRep, e.jobTypes(j), e.perNode)
	}
	sj.Speedup = j.oracle
	b := float64(j.fixedBatch())
	last := j.app.MaxEpochs - 1
	rem := 1.0
	if j.epoch < last {
		rem = j.app.Iterations(b, last) - j.app.Iterations(b, j.epoch)
	}
	sj.RemainingWork = rem * j.oracle.t1
}

// speedupOf returns the job's current speedup curve for the policy,
// rebuilt from its Estimator only when the job reported something new.
func (e *engine) speedupOf(j *job, maxRep int) goodput.Speedup {
	if j.app.FixedBatch > 0 {
		return linearSpeedup{maxRep: maxRep}
	}
	l := e.learnerOf(j)
	if l == nil {
		return linearSpeedup{maxRep: maxRep}
	}
	if l.curve == nil || l.curveVer != l.version || l.curveMax != maxRep {
		c, err := l.est.Curve(goodput.CurveOptions{MaxReplicas: maxRep})
		if err != nil {
			return linearSpeedup{maxRep: maxRep}
		}
		l.curve, l.curveVer, l.curveMax = c, l.version, maxRep
	}
	if !e.cfg.PerType {
		return blindSpeedup{l.curve}
	}
	return l.curve
}

// estType is the key under which the job reports measurements on typ.
func (e *engine) estType(typ accel.TypeKey) string {
	if !e.cfg.PerType {
		return goodput.AnyType
	}
	return string(typ)
}

// learnerOf returns the job's learner, creating its Estimator on first
// use. With per-type models the job is first profiled on one device of
// every type (Sia's seed profiles); those count as measurements.
func (e *engine) learnerOf(j *job) *learner {
	if j.lrn != nil {
		return j.lrn
	}
	lo, hi, _ := j.app.LocalRange(j.app.DefaultType())
	cfg := goodput.EstimatorConfig{
		Limits:      goodput.Limits{InitBatch: j.app.InitBatch, MaxBatch: j.app.MaxBatch, MinLocal: lo, MaxLocal: hi, Accumulation: true},
		MaxReplicas: e.cfg.MaxReplicas,
		Explore:     e.cfg.Explore,
	}
	if !e.noMemo {
		cfg.Plans = e.plans
	}
	if e.cfg.PerType || j.w > 0 {
		cfg.Profiles = map[string][]goodput.Observation{}
		for _, t := range e.jobTypes(j) {
			tlo, thi, _ := j.app.LocalRange(t)
			for _, l := range slices.Compact([]int{tlo, max(tlo, (tlo+thi)/2), thi}) {
				if st, sy, ok := j.app.StepTime(t, []int{1}, float64(l)); ok {
					cfg.Profiles[string(t)] = append(cfg.Profiles[string(t)], goodput.ObservationFromStep(1, 1, l, st, sy))
				}
			}
		}
	}
	est, err := goodput.NewEstimator(cfg)
	if err != nil {
		return nil
	}
	j.lrn = &learner{est: est, seen: map[[4]int]bool{}, shapes: map[[3]int]bool{}, version: 1}
	return j.lrn
}

// report tells the job's Estimator about a configuration it ran, when the
// measurement changes what it knows materially: a new (nodes, replicas)
// shape, or a step time its current model misses by more than 5%.
func (e *engine) report(j *job, step, sync float64) {
	l := e.learnerOf(j)
	if l == nil {
		return
	}
	ti := slices.Index(e.types, j.typ)
	nodes, reps := len(j.counts), len(j.devs)
	k := [4]int{ti, nodes, reps, j.local}
	if l.seen[k] {
		return
	}
	l.seen[k] = true
	typ := e.estType(j.typ)
	if l.shapes[[3]int{ti, nodes, reps}] {
		if m, ok := l.est.Model(typ); ok {
			pred := m.Params.StepSeconds(nodes, reps, j.local, 0)
			if pred > 0 && math.Abs(pred-step)/step <= refitTolerance {
				return
			}
		}
	}
	l.shapes[[3]int{ti, nodes, reps}] = true
	if l.est.Observe(typ, goodput.ObservationFromStep(nodes, reps, j.local, step, sync)) == nil {
		l.version++
		l.reports++
	}
}

// reportGrad tells the Estimator the job's gradient statistics when the
// noise scale moved by more than 1%.
func (e *engine) reportGrad(j *job, g goodput.GradStats) {
	l := e.learnerOf(j)
	if l == nil {
		return
	}
	old, cur := l.grad.NoiseScale(j.app.InitBatch), g.NoiseScale(j.app.InitBatch)
	if l.grad != (goodput.GradStats{}) && math.Abs(cur-old) <= gradTolerance*math.Abs(old) {
		return
	}
	if l.est.ObserveGrad(g) == nil {
		l.grad = g
		l.version++
	}
}

// reallocate applies a new assignment (possibly empty) to job j.
func (e *engine) reallocate(j *job, typ accel.TypeKey, devs []string, plan goodput.BatchPlan) {
	// Preemption or move: the job restarts from its last checkpoint,
	// which AdaptDL takes when it is asked to rescale.
	j.ckptProg, j.ckptEp = j.progress, j.epoch
	e.moved = true
	if len(devs) == 0 {
		j.release()
		j.typ = ""
		j.local, j.accum, j.batch, j.stall = 0, 0, 0, 0
		return
	}
	if _, t := e.device(devs[0]); t != "" && typ == "" {
		typ = t
	}
	j.typ = typ
	j.rateValid = false
	j.gen++
	j.devs = slices.Clone(devs)
	e.indexDevices(j)
	per := make(map[int]int)
	for _, d := range devs {
		n, _ := e.device(d)
		per[n]++
	}
	j.nodes = slices.Sorted(maps.Keys(per))
	j.counts = j.counts[:0]
	for _, n := range j.nodes {
		j.counts = append(j.counts, per[n])
	}
	if e.cfg.Tiers != nil {
		var err error
		if j.keep, err = e.keepOf(j); err != nil && e.tiersErr == nil {
			e.tiersErr = err
		}
	}
	j.allocs++
	if !j.started {
		j.started, j.startAt = true, e.now
	}
	j.stall = j.app.RestartDelay.Seconds()
	e.chooseBatch(j, plan)
}

// release takes the job's devices away (preemption, completion, node
// failure); its type stays as it was.
func (j *job) release() {
	j.devs, j.counts, j.nodes, j.devIdx, j.workers = nil, nil, nil, nil, nil
	j.rateValid = false
	j.gen++
}

// indexDevices records the engine index of each of the job's devices.
func (e *engine) indexDevices(j *job) {
	j.devIdx = j.devIdx[:0]
	for _, d := range j.devs {
		i, ok := e.devIdx[d]
		if !ok {
			i = -1
		}
		j.devIdx = append(j.devIdx, i)
	}
}

// chooseBatch sets the per-device batch and accumulation steps for the
// job's allocation: the batch plan of its goodput model for adaptive
// jobs (Pollux's rule before the first fit), the fixed batch otherwise.
func (e *engine) chooseBatch(j *job, plan goodput.BatchPlan) {
	replicas := len(j.devs)
	if replicas == 0 {
		return
	}
	lo, hi, ok := j.app.LocalRange(j.typ)
	if !ok {
		lo, hi = j.app.MinLocal, j.app.MaxLocal
	}
	if e.cfg.Kind == scheduler.Adaptive && j.app.FixedBatch == 0 {
		if plan.Local <= 0 {
			plan = e.replan(j)
		}
		if plan.Local > 0 {
			j.plan = plan
			j.local, j.accum = min(max(plan.Local, lo), hi), plan.Accum
			j.batch = j.local * replicas * (j.accum + 1)
			return
		}
		j.plan = goodput.BatchPlan{}
		b := max(j.app.InitBatch, lo*replicas)
		j.local, j.accum = SplitBatch(b, replicas, lo, hi, j.app.MaxBatch, replicas == 1 && b > j.app.InitBatch)
		j.batch = j.local * replicas * (j.accum + 1)
		return
	}
	if j.w > 0 {
		j.local, j.accum, j.batch = j.wlocal, 0, j.w*j.wlocal
		return
	}
	b := j.fixedBatch()
	maxB := max(j.app.MaxBatch, b)
	j.local, j.accum = SplitBatch(b, replicas, lo, hi, maxB, replicas == 1 && b > j.app.InitBatch)
	j.batch = j.local * replicas * (j.accum + 1)
}

// replan asks the job's own model for the best batch on its allocation.
func (e *engine) replan(j *job) goodput.BatchPlan {
	if j.lrn == nil || len(j.devs) == 0 {
		return goodput.BatchPlan{}
	}
	sp := e.speedupOf(j, max(j.lrn.curveMax, len(j.devs)))
	bp, ok := sp.(goodput.BatchPlanner)
	if !ok {
		return goodput.BatchPlan{}
	}
	return bp.BatchPlan(string(j.typ), len(j.counts), len(j.devs))
}

// rebatch re-optimises a running adaptive job's batch between steps,
// adopting the new plan only when goodput.Switch says it pays (5%
// hysteresis).
func (e *engine) rebatch(j *job) {
	if e.cfg.Kind != scheduler.Adaptive || j.app.FixedBatch > 0 || len(j.devs) == 0 {
		return
	}
	if !e.noMemo && j.rb.same(j) {
		return // same inputs as the last rebatch: the same outcome
	}
	next := e.replan(j)
	if next.Local > 0 {
		cur := j.plan
		if m, ok := j.lrn.est.Model(e.estType(j.typ)); ok && cur.Local > 0 {
			cur.Goodput = m.Goodput(len(j.counts), len(j.devs), cur.Local, cur.Accum)
		}
		if cur.Local <= 0 || goodput.Switch(cur, next) {
			e.chooseBatch(j, next)
		}
	}
	j.rb.record(j)
}

// rebatchState is what rebatch's outcome depends on, recorded after a
// rebatch: the allocation (gen), the job's speedup curve (an immutable
// snapshot, current for the Estimator's version, which also pins its
// fitted models and gradient statistics) and the batch the job runs.
// Rebatching is idempotent, so a later rebatch with the same state is a
// no-op.
type rebatchState struct {
	valid        bool
	gen          int
	curve        *goodput.Curve
	version      int
	plan         goodput.BatchPlan
	local, accum int
}

func (r *rebatchState) record(j *job) {
	l := j.lrn
	if l == nil || l.curve == nil || l.curveVer != l.version || len(j.devs) > l.curveMax {
		r.valid = false // replan did not use a current curve
		return
	}
	*r = rebatchState{valid: true, gen: j.gen, curve: l.curve, version: l.version, plan: j.plan, local: j.local, accum: j.accum}
}

// same reports whether a rebatch of j now would see what the recorded
// one saw: replan would reuse the same current curve (speedupOf rebuilds
// it only for a new version or a larger allocation) on the same
// allocation, from the same batch.
func (r *rebatchState) same(j *job) bool {
	l := j.lrn
	return r.valid && l != nil && r.gen == j.gen && r.curve == l.curve && r.version == l.version &&
		l.curveVer == l.version && len(j.devs) <= l.curveMax &&
		r.plan == j.plan && r.local == j.local && r.accum == j.accum
}
