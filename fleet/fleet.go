package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

// Errors returned by this package, wrapped with the job, cluster or field
// at fault; test with errors.Is.
var (
	// ErrInvalid reports malformed input: an empty or duplicate cluster
	// name or job ID, a negative bandwidth, checkpoint size or duration,
	// a bad Config knob.
	ErrInvalid = errors.New("fleet: invalid input")
	// ErrNoCluster reports a job whose accelerator types no cluster of
	// the Input has (gone clusters included): no round could ever run it.
	ErrNoCluster = errors.New("fleet: no cluster has the job's types")
	// ErrCluster reports a cluster's scheduler round that failed (the
	// scheduler's own error is wrapped too).
	ErrCluster = errors.New("fleet: cluster round failed")
)

// DefaultBandwidthGbps is the bandwidth between two clusters when neither
// Config.BandwidthGbps nor a Link sets it.
const DefaultBandwidthGbps = 10

// DefaultHysteresis is the share of a job's predicted time a move must
// save, its cost included, when Config.Hysteresis is 0.
const DefaultHysteresis = 0.1

// Cluster is one cluster of the fleet in one round.
type Cluster struct {
	// Name identifies the cluster; unique and non-empty.
	Name string
	// Region is where it is (an Electricity Maps zone such as
	// "US-CAL-CISO", or any label); informational.
	Region string
	// Cluster is its inventory snapshot; ignored when Inventory is set.
	Cluster accel.Cluster
	// Inventory, if set, is snapshotted each round instead of Cluster; a
	// snapshot that fails (other than by the context) means the cluster is
	// gone this round: its jobs become waiting fleet jobs.
	Inventory accel.Inventory
	// Carbon is the grid intensity of the cluster's region from Now on
	// (the zero Series: unknown). Passed to the cluster's round as
	// scheduler.Input.Carbon and, with Config.CarbonWeight, counted by
	// routing and migration.
	Carbon carbon.Series
}

// Checkpoint is what a job's state costs to save, move and restore.
type Checkpoint struct {
	// SizeBytes is the size of one checkpoint (≥ 0).
	SizeBytes int64
	// Interval is the time between periodic checkpoints (≥ 0; 0 = the
	// job does not checkpoint periodically).
	Interval time.Duration
	// Save and Restore are how long writing and reading one checkpoint
	// take, restarting the job included (≥ 0).
	Save, Restore time.Duration
	// OnDemand says the job checkpoints on request at its next step
	// barrier (Singularity's jobs do): a move loses no work.
	OnDemand bool
	// Last is when the job last checkpointed, or started running since
	// its last restore; the zero time = unknown, charged a whole Interval.
	Last time.Time
}

// Validate reports a negative size or duration (ErrInvalid).
func (c Checkpoint) Validate() error {
	switch {
	case c.SizeBytes < 0:
		return fmt.Errorf("%w: checkpoint size %d bytes is negative", ErrInvalid, c.SizeBytes)
	case c.Interval < 0, c.Save < 0, c.Restore < 0:
		return fmt.Errorf("%w: checkpoint interval %v, save %v, restore %v: none may be negative", ErrInvalid, c.Interval, c.Save, c.Restore)
	}
	return nil
}

// Transfer is how long the checkpoint takes over gbps gigabits per
// second (+Inf when gbps is 0).
func (c Checkpoint) Transfer(gbps float64) time.Duration {
	if c.SizeBytes == 0 {
		return 0
	}
	if gbps <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return seconds(float64(c.SizeBytes) * 8 / (gbps * 1e9))
}

// Lost is the work a running job loses when it stops at now without an
// on-demand checkpoint: the time since Last, at most Interval (when it
// checkpoints periodically); 0 when it checkpoints on demand.
func (c Checkpoint) Lost(now time.Time) time.Duration {
	if c.OnDemand {
		return 0
	}
	if c.Last.IsZero() {
		return c.Interval
	}
	lost := max(now.Sub(c.Last), 0)
	if c.Interval > 0 {
		lost = min(lost, c.Interval)
	}
	return lost
}

// MigrationCost is the time a move to another cluster over gbps costs the
// job: for a running job, Save + Transfer + Restore + Lost; for a stopped
// job with state (its checkpoint is saved), Transfer + Restore.
func (c Checkpoint) MigrationCost(now time.Time, running bool, gbps float64) time.Duration {
	t := c.Transfer(gbps)
	if t == time.Duration(math.MaxInt64) {
		return t
	}
	cost := t + c.Restore
	if running {
		cost += c.Save + c.Lost(now)
	}
	return cost
}

// PreemptionCost is the time a preemption in place costs the running
// job: Save + Restore (when it runs again) + Lost.
func (c Checkpoint) PreemptionCost(now time.Time) time.Duration {
	return c.Save + c.Restore + c.Lost(now)
}

// Job is one fleet job in one round.
type Job struct {
	// Job is the job as a cluster's scheduler sees it. Its Types range
	// over the whole fleet; RemainingWork (seconds on one device of its
	// best type, Speedup values being comparable across types) is what
	// migration gains are predicted from (0 = unknown: the job is not
	// migrated while it has state). Attained > 0 means the job has state.
	scheduler.Job
	// Cluster is the cluster the job is on, running or queued; "" = it
	// waits at the fleet.
	Cluster string
	// Assignment is its devices on Cluster (empty = not running).
	Assignment placement.Assignment
	// Checkpoint is what moving it costs.
	Checkpoint Checkpoint
}

// Link overrides the bandwidth between two clusters (both directions).
type Link struct {
	// From and To name the clusters.
	From, To string
	// Gbps is the bandwidth in gigabits per second (> 0).
	Gbps float64
}

// Config configures a Fleet. The zero value is valid.
type Config struct {
	// NewScheduler builds the Scheduler of a cluster the first time its
	// name is seen; nil = scheduler.New(scheduler.Config{}) (Pollux).
	NewScheduler func(cluster string) (*scheduler.Scheduler, error)
	// BandwidthGbps is the bandwidth between any two clusters in gigabits
	// per second (≥ 0; 0 = DefaultBandwidthGbps).
	BandwidthGbps float64
	// Links overrides it for pairs of clusters.
	Links []Link
	// Hysteresis is the share of a job's predicted time that routing a
	// queued job elsewhere, or migrating a job, must save (cost included),
	// in [0, 1) (0 = DefaultHysteresis).
	Hysteresis float64
	// CarbonWeight makes routing and migration prefer clean grids: a
	// cluster's predicted time is scaled by 1 + CarbonWeight × its
	// Cluster.Carbon intensity at Now in kg/kWh (a series without a unit
	// is read as g/kWh; ≥ 0; 0 = carbon is not counted). A series that
	// does not cover Now, or whose unit does not convert, is ErrInvalid.
	CarbonWeight float64
	// Stay keeps every job on the cluster it names: jobs are routed only
	// when they wait at the fleet (or their cluster is gone), never moved.
	// It is the baseline that migration is measured against.
	Stay bool
	// Workers is how many cluster rounds run at once (≥ 0; 0 = one
	// goroutine per cluster, 1 = one after another).
	Workers int
}

// Validate checks the settings (ErrInvalid).
func (c Config) Validate() error {
	switch {
	case !(c.BandwidthGbps >= 0) || math.IsInf(c.BandwidthGbps, 0):
		return fmt.Errorf("%w: Config.BandwidthGbps %v must be ≥ 0", ErrInvalid, c.BandwidthGbps)
	case !(c.Hysteresis >= 0 && c.Hysteresis < 1):
		return fmt.Errorf("%w: Config.Hysteresis %v is outside [0, 1)", ErrInvalid, c.Hysteresis)
	case !(c.CarbonWeight >= 0) || math.IsInf(c.CarbonWeight, 0):
		return fmt.Errorf("%w: Config.CarbonWeight %v must be ≥ 0", ErrInvalid, c.CarbonWeight)
	case c.Workers < 0:
		return fmt.Errorf("%w: Config.Workers %d is negative", ErrInvalid, c.Workers)
	}
	for i, l := range c.Links {
		if l.From == "" || l.To == "" || !(l.Gbps > 0) || math.IsInf(l.Gbps, 0) {
			return fmt.Errorf("%w: Config.Links[%d] %s–%s: bandwidth %v must be > 0 between two named clusters", ErrInvalid, i, l.From, l.To, l.Gbps)
		}
	}
	return nil
}

// Input is one fleet round.
type Input struct {
	// Clusters are the clusters present; a job naming another is treated
	// as waiting at the fleet.
	Clusters []Cluster
	// Jobs are every unfinished job of the fleet.
	Jobs []Job
	// Now is the logical time of the round.
	Now time.Time
}

// Move says what the fleet did with a job.
type Move int

// Moves.
const (
	// Stay: the job remains on its cluster.
	Stay Move = iota
	// Route: a job without state (it never ran) goes to a cluster: free.
	Route
	// Migrate: a job with state moves to another cluster; Decision.Cost
	// is charged.
	Migrate
	// Requeue: no present cluster can take the job (its own is gone and
	// the others lack its types or room); it waits at the fleet.
	Requeue
)

var moveNames = [...]string{"stay", "route", "migrate", "requeue"}

// String returns the move's name ("stay", "route", "migrate", "requeue").
func (m Move) String() string {
	if m >= 0 && int(m) < len(moveNames) {
		return moveNames[m]
	}
	return fmt.Sprintf("move(%d)", int(m))
}

// MarshalText writes the move's name.
func (m Move) MarshalText() ([]byte, error) {
	if m < 0 || int(m) >= len(moveNames) {
		return nil, fmt.Errorf("%w: move %d", ErrInvalid, int(m))
	}
	return []byte(moveNames[m]), nil
}

// Decision is what the fleet decided for one job.
type Decision struct {
	// Job is the job's ID.
	Job string `json:"job"`
	// From and To are its cluster before and after the round ("" = at
	// the fleet).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Move is what happened between clusters.
	Move Move `json:"move"`
	// Cost is the migration cost charged (Migrate only).
	Cost time.Duration `json:"cost"`
	// Gain is the predicted time saved by the move before its cost
	// (Migrate and Route).
	Gain time.Duration `json:"gain"`
	// Message says why, in words.
	Message string `json:"message"`
	// Cluster is To's scheduler decision for the job (zero when To is "").
	Cluster scheduler.Decision `json:"cluster"`
}

// ClusterPlan is one cluster's round.
type ClusterPlan struct {
	// Name is the cluster's.
	Name string `json:"name"`
	// Input is what its scheduler was given (jobs routed to it, the
	// assignments that stayed).
	Input scheduler.Input `json:"-"`
	// Plan is its scheduler's plan.
	Plan scheduler.Plan `json:"plan"`
}

// Plan is the result of one fleet round.
type Plan struct {
	// Jobs has one decision per input job, sorted by job ID.
	Jobs []Decision `json:"jobs"`
	// Clusters has one plan per cluster present, sorted by name.
	Clusters []ClusterPlan `json:"clusters"`
	// Gone lists, sorted, the clusters named by jobs or Input.Clusters
	// that were absent or whose Inventory failed this round.
	Gone []string `json:"gone,omitempty"`
}

// Decision returns the decision for job id.
func (p Plan) Decision(id string) (Decision, bool) {
	k, ok := slices.BinarySearchFunc(p.Jobs, id, func(d Decision, id string) int { return strings.Compare(d.Job, id) })
	if !ok {
		return Decision{}, false
	}
	return p.Jobs[k], true
}

// Fleet schedules a fleet of clusters round by round. It keeps one
// scheduler.Scheduler per cluster name. It is safe for concurrent use
// as long as the Schedulers Config.NewScheduler builds are, but rounds of
// one fleet are meant to be sequential (each Scheduler carries caches).
type Fleet struct {
	cfg     Config
	mu      sync.Mutex
	scheds  map[string]*scheduler.Scheduler
	indexes map[string]*placement.IndexCache
}

// index returns the cluster's index cache.
func (f *Fleet) index(name string) *placement.IndexCache {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.indexes[name]
	if c == nil {
		c = &placement.IndexCache{}
		f.indexes[name] = c
	}
	return c
}

// New returns a Fleet for cfg, or ErrInvalid for a bad setting.
func New(cfg Config) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BandwidthGbps == 0 {
		cfg.BandwidthGbps = DefaultBandwidthGbps
	}
	if cfg.Hysteresis == 0 {
		cfg.Hysteresis = DefaultHysteresis
	}
	cfg.Links = slices.Clone(cfg.Links)
	return &Fleet{cfg: cfg, scheds: map[string]*scheduler.Scheduler{}, indexes: map[string]*placement.IndexCache{}}, nil
}

// Bandwidth returns the bandwidth between clusters a and b, in Gbps.
func (f *Fleet) Bandwidth(a, b string) float64 {
	for _, l := range f.cfg.Links {
		if (l.From == a && l.To == b) || (l.From == b && l.To == a) {
			return l.Gbps
		}
	}
	return f.cfg.BandwidthGbps
}

func (f *Fleet) scheduler(name string) (*scheduler.Scheduler, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.scheds[name]; ok {
		return s, nil
	}
	var s *scheduler.Scheduler
	var err error
	if f.cfg.NewScheduler != nil {
		s, err = f.cfg.NewScheduler(name)
	} else {
		s, err = scheduler.New(scheduler.Config{})
	}
	if err == nil && s == nil {
		err = fmt.Errorf("%w: Config.NewScheduler returned nil", ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	f.scheds[name] = s
	return s, nil
}

// Schedule runs one fleet round: it routes and migrates (Route), then
// runs every cluster's scheduler round, concurrently (Config.Workers), and
// merges the plans. Errors: ErrInvalid and ErrNoCluster for bad input,
// ErrCluster (wrapping the scheduler's error) for a failed cluster round,
// the context's error when ctx is done.
func (f *Fleet) Schedule(ctx context.Context, in Input) (Plan, error) {
	rt, err := f.Route(ctx, in)
	if err != nil {
		return Plan{}, err
	}
	plans := make([]scheduler.Plan, len(rt.Clusters))
	errs := make([]error, len(rt.Clusters))
	scheds := make([]*scheduler.Scheduler, len(rt.Clusters))
	for i, c := range rt.Clusters {
		if scheds[i], err = f.scheduler(c.Name); err != nil {
			return Plan{}, err
		}
	}
	workers := f.cfg.Workers
	if workers == 0 {
		workers = len(rt.Clusters)
	}
	run := func(i int) {
		plans[i], errs[i] = scheds[i].Schedule(ctx, rt.Clusters[i].Input)
	}
	if workers <= 1 {
		for i := range rt.Clusters {
			run(i)
		}
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, workers)
		for i := range rt.Clusters {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				run(i)
			}()
		}
		wg.Wait()
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Plan{}, fmt.Errorf("fleet: %w", ctxErr)
		}
		return Plan{}, fmt.Errorf("%w: %s: %w", ErrCluster, rt.Clusters[i].Name, err)
	}
	return rt.merge(plans), nil
}

// Routing is the fleet layer's part of a round, before the clusters'
// rounds: every job's move and each cluster's scheduler Input.
type Routing struct {
	// Jobs has one decision per job, sorted by ID, without the clusters'
	// decisions.
	Jobs []Decision
	// Clusters has each present cluster's name and Input, by name.
	Clusters []ClusterPlan
	// Gone lists the clusters gone this round, sorted.
	Gone []string
}

func (rt *Routing) merge(plans []scheduler.Plan) Plan {
	p := Plan{Jobs: rt.Jobs, Clusters: rt.Clusters, Gone: rt.Gone}
	for i := range p.Clusters {
		p.Clusters[i].Plan = plans[i]
	}
	byName := make(map[string]int, len(p.Clusters))
	for i, c := range p.Clusters {
		byName[c.Name] = i
	}
	for k := range p.Jobs {
		d := &p.Jobs[k]
		if d.To == "" {
			continue
		}
		if sd, ok := plans[byName[d.To]].Decision(d.Job); ok {
			d.Cluster = sd
		}
	}
	return p
}

// site is the fleet layer's view of one present cluster.
type site struct {
	name    string
	idx     int
	cluster accel.Cluster
	index   *placement.Index
	carbon  carbon.Series
	types   []accel.TypeKey // sorted
	count   []int           // healthy devices per type
	perNode []int           // most devices of the type on one node
	busy    []int           // devices held by jobs staying or arriving, per type
	demand  int             // devices asked by jobs on it, running or queued
	size    int             // healthy devices
	penalty float64         // carbon factor
	group   int             // its group: sites of the same types, counts and node sizes share one (0, 1, …)
}

// hasType reports whether s has a device type j may use.
func (s *site) hasType(j *scheduler.Job) bool {
	if len(j.Types) == 0 {
		return len(s.types) > 0
	}
	return slices.ContainsFunc(j.Types, func(t accel.TypeKey) bool {
		_, ok := slices.BinarySearch(s.types, t)
		return ok
	})
}

// typeOf returns the index of the type of the job's devices on s (-1:
// none, or devices s does not have).
func (s *site) typeOf(a placement.Assignment) int {
	if len(a.Devices) == 0 {
		return -1
	}
	d, ok := s.index.Device(a.Devices[0])
	if !ok {
		return -1
	}
	ti, ok := s.index.TypeIndex(d.Type)
	if !ok {
		return -1
	}
	return ti
}

// Route is the fleet layer's part of Schedule: it validates the input,
// snapshots inventories, decides every job's move and builds each
// cluster's scheduler Input; it runs no cluster round.
func (f *Fleet) Route(ctx context.Context, in Input) (Routing, error) {
	sites, groups, gone, err := f.sites(ctx, in)
	if err != nil {
		return Routing{}, err
	}
	byName := make(map[string]*site, len(sites))
	for _, s := range sites {
		byName[s.name] = s
	}
	goneSet := map[string]bool{}
	for _, g := range gone {
		goneSet[g] = true
	}
	// byID: the jobs' indexes in ID order (a host that lists its jobs in
	// ID order sorts nothing); an empty or duplicate ID is found there.
	byID := make([]int32, len(in.Jobs))
	for i := range byID {
		byID[i] = int32(i)
	}
	if !slices.IsSortedFunc(byID, func(a, b int32) int { return strings.Compare(in.Jobs[a].ID, in.Jobs[b].ID) }) {
		slices.SortFunc(byID, func(a, b int32) int { return cmp.Or(strings.Compare(in.Jobs[a].ID, in.Jobs[b].ID), cmp.Compare(a, b)) })
	}
	for r, i := range byID {
		if id := in.Jobs[i].ID; id == "" || r > 0 && in.Jobs[byID[r-1]].ID == id {
			return Routing{}, fmt.Errorf("%w: jobs[%d]: empty or duplicate ID %q", ErrInvalid, i, id)
		}
	}
	for i := range in.Jobs {
		j := &in.Jobs[i]
		if err := j.Checkpoint.Validate(); err != nil {
			return Routing{}, fmt.Errorf("job %q: %w", j.ID, err)
		}
		if !j.Tier.Valid() {
			return Routing{}, fmt.Errorf("%w: job %q: tier %d", tiers.ErrUnknown, j.ID, int(j.Tier))
		}
		if j.RemainingWork < 0 || math.IsNaN(j.RemainingWork) || math.IsInf(j.RemainingWork, 0) {
			return Routing{}, fmt.Errorf("%w: job %q: RemainingWork %v", ErrInvalid, j.ID, j.RemainingWork)
		}
		if len(j.Assignment.Devices) > 0 && j.Cluster == "" {
			return Routing{}, fmt.Errorf("%w: job %q holds devices but names no cluster", ErrInvalid, j.ID)
		}
		if j.Cluster != "" && byName[j.Cluster] == nil && !goneSet[j.Cluster] {
			goneSet[j.Cluster] = true
			gone = append(gone, j.Cluster)
		}
	}
	slices.Sort(gone)
	// A job must fit some cluster of the fleet (gone ones included).
	all := map[accel.TypeKey]bool{}
	for _, s := range sites {
		for _, t := range s.types {
			all[t] = true
		}
	}
	for _, t := range f.goneTypes(ctx, in, goneSet) {
		all[t] = true
	}
	for i := range in.Jobs {
		j := &in.Jobs[i]
		if len(j.Types) == 0 {
			continue
		}
		if !slices.ContainsFunc(j.Types, func(t accel.TypeKey) bool { return all[t] }) {
			return Routing{}, fmt.Errorf("%w: job %q asks for %v", ErrNoCluster, j.ID, j.Types)
		}
	}
	// Routing order: by tier, then priority, submission and ID (its rank
	// in byID), each compared only when the ones before tie.
	order := make([]routeKey, len(in.Jobs))
	for r, i := range byID {
		j := &in.Jobs[i]
		order[r] = routeKey{tier: tierRank(j.Tier), priority: j.Priority, submitted: j.Submitted, idRank: r}
	}
	slices.SortFunc(order, func(a, b routeKey) int {
		if a.tier != b.tier {
			return cmp.Compare(a.tier, b.tier)
		}
		if a.priority != b.priority {
			return cmp.Compare(b.priority, a.priority)
		}
		if c := a.submitted.Compare(b.submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.idRank, b.idRank)
	})
	jobs := make([]*Job, len(in.Jobs))
	// pos[k] is job k's rank by ID: decisions are filed in ID order as
	// they are made (sorting the large Decision values afterwards costs
	// more than routing). input[k] is its index in in.Jobs.
	pos := make([]int, len(jobs))
	input := make([]int32, len(jobs))
	for k, o := range order {
		input[k] = byID[o.idRank]
		jobs[k], pos[k] = &in.Jobs[input[k]], o.idRank
	}

	// Who stays where: running jobs on present clusters hold their devices.
	to := make([]*site, len(jobs))
	running := make([]bool, len(jobs))
	for k, j := range jobs {
		s := byName[j.Cluster]
		if s == nil || !s.hasType(&j.Job) {
			continue // routed again below
		}
		to[k] = s
		s.demand += want(&j.Job)
		if n := len(j.Assignment.Devices); n > 0 {
			running[k] = true
			if ti := s.typeOf(j.Assignment); ti >= 0 {
				s.busy[ti] += n
			}
		}
	}
	// Each job's best type per group of identical sites, worked out first
	// for the jobs that routing or migration compares across clusters (the
	// switch below; bestOn fills in any other on first use), in input
	// order: the jobs' speedup models are then read in the order the host
	// keeps them, far faster than in routing order (memory locality: 20,000
	// goodput curves, 6× in examples/benchmark's fleet instance).
	best := make([]bestSpeed, len(jobs)*groups)
	rowOf := func(i int32) []bestSpeed { return best[int(i)*groups : (int(i)+1)*groups : (int(i)+1)*groups] }
	// stays: job k, if on a present cluster, is not moved (the switch's
	// Stay case).
	stays := func(k int) bool {
		j := jobs[k]
		return f.cfg.Stay || running[k] && (j.NonPreemptible || j.Tier == tiers.Premium || j.Tier == tiers.Standard)
	}
	compares := make([]bool, len(jobs))
	for k, j := range jobs {
		held := to[k] != nil && stays(k)
		unknown := to[k] != nil && (j.Attained > 0 || running[k]) && j.RemainingWork == 0
		compares[input[k]] = !held && !unknown
	}
	var v view
	groupSites := make([]*site, groups)
	for _, s := range sites {
		if groupSites[s.group] == nil {
			groupSites[s.group] = s
		}
	}
	for i := range in.Jobs {
		if !compares[i] {
			continue
		}
		v.reset(&in.Jobs[i], rowOf(int32(i)))
		for _, s := range groupSites {
			bestOn(&v, s)
		}
	}
	decisions := make([]Decision, len(jobs))
	var msgs messages
	msgs.buf.Grow(64 * len(jobs))
	msgs.spans = make([]messageSpan, 0, len(jobs))
	h := f.cfg.Hysteresis
	for k, job := range jobs {
		v.reset(job, rowOf(input[k]))
		j := &v
		d := &decisions[pos[k]]
		d.Job, d.From = j.ID, j.Cluster
		cur := to[k]
		hasState := j.Attained > 0 || running[k]
		switch {
		case cur == nil: // waiting at the fleet, or its cluster is gone
			best, score := f.best(j, sites)
			if best == nil {
				d.Move, d.Message = Requeue, "no present cluster has the job's types and room for its count"
				if j.Cluster != "" {
					d.Message = "cluster " + j.Cluster + " is gone or lacks its types; " + d.Message
				}
				continue
			}
			to[k] = best
			best.demand += j.count()
			d.Move = Route
			msgs.start(pos[k])
			if j.Cluster != "" {
				msgs.add("cluster ", j.Cluster, " is gone or lacks its types; ")
			}
			msgs.add("routed to ", best.name, " (predicted time factor ")
			msgs.g3(score)
			msgs.add(")")
			if hasState {
				// Its last checkpoint survives the cluster: it is charged
				// the transfer and a restore, and, when it was running,
				// the work since that checkpoint (no save was possible).
				d.Move = Migrate
				d.Cost = j.Checkpoint.MigrationCost(in.Now, false, f.Bandwidth(j.Cluster, best.name))
				if len(j.Assignment.Devices) > 0 {
					c := j.Checkpoint
					c.OnDemand = false
					d.Cost += c.Lost(in.Now)
				}
			}
		case stays(k):
			d.Move, d.Message = Stay, "stays"
		case !hasState:
			// Queued, never ran: rerouting is free when another cluster
			// is predicted faster by the hysteresis.
			cur.demand -= j.count()
			here := f.score(j, cur, false)
			best, score := f.best(j, sites)
			if best != nil && best != cur && score < here*(1-h) {
				to[k] = best
				best.demand += j.count()
				d.Move, d.Gain = Route, 0
				msgs.start(pos[k])
				msgs.add("rerouted ", cur.name, "→", best.name, ": predicted time factor ")
				msgs.g3(here)
				msgs.add("→")
				msgs.g3(score)
				continue
			}
			cur.demand += j.count()
			d.Move, d.Message = Stay, "stays"
		default:
			f.migrate(j, k, running[k], cur, sites, to, d, in.Now)
		}
	}
	rt := Routing{Gone: gone}
	// perSite: each site's jobs in routing order, carved from one array.
	counts := make([]int, len(sites))
	for _, s := range to {
		if s != nil {
			counts[s.idx]++
		}
	}
	perSite := make([][]int, len(sites))
	free := make([]int, 0, len(jobs))
	for i, n := range counts {
		perSite[i], free = free[:0:n], free[n:n]
	}
	for k, s := range to {
		if s == nil {
			continue
		}
		decisions[pos[k]].To = s.name
		perSite[s.idx] = append(perSite[s.idx], k)
	}
	for i, s := range sites {
		ci := scheduler.Input{Cluster: s.cluster, Now: in.Now, Carbon: s.carbon, Jobs: make([]scheduler.Job, 0, len(perSite[i]))}
		for _, k := range perSite[i] {
			j := jobs[k]
			sj := j.Job
			if decisions[pos[k]].Move == Migrate {
				sj.Restarts++
			}
			lacks := func(t accel.TypeKey) bool {
				_, ok := slices.BinarySearch(s.types, t)
				return !ok
			}
			if slices.ContainsFunc(sj.Types, lacks) {
				sj.Types = slices.DeleteFunc(slices.Clone(sj.Types), lacks)
			}
			ci.Jobs = append(ci.Jobs, sj)
			if running[k] && s.name == j.Cluster && len(j.Assignment.Devices) > 0 {
				ci.Current = append(ci.Current, j.Assignment)
			}
		}
		rt.Clusters = append(rt.Clusters, ClusterPlan{Name: s.name, Input: ci})
	}
	msgs.fill(decisions)
	rt.Jobs = decisions
	return rt, nil
}

// migrate decides whether job j (index k, with state) on cur moves: to a
// cluster with room for it now, when the predicted time there plus the
// migration cost is below its predicted time here by the hysteresis.
func (f *Fleet) migrate(j *view, k int, running bool, cur *site, sites []*site, to []*site, d *Decision, now time.Time) {
	d.Move, d.Message = Stay, "stays"
	if j.RemainingWork == 0 {
		d.Message = "stays: remaining work unknown"
		return
	}
	here := f.score(j, cur, running)
	if math.IsInf(here, 1) {
		here = f.score(j, cur, false)
	}
	var best *site
	var bestT, bestCost, bestGain float64
	for _, s := range sites {
		if s == cur {
			continue
		}
		sc := f.score(j, s, false)
		if math.IsInf(sc, 1) || !fitsNow(j, s) {
			continue
		}
		cost := j.Checkpoint.MigrationCost(now, running, f.Bandwidth(cur.name, s.name)).Seconds()
		t := j.RemainingWork*sc + cost
		if best == nil || t < bestT {
			best, bestT, bestCost, bestGain = s, t, cost, j.RemainingWork*(here-sc)
		}
	}
	tHere := j.RemainingWork * here
	if best == nil || !(bestT < tHere*(1-f.cfg.Hysteresis)) {
		return
	}
	cur.demand -= j.count()
	if running {
		if ti := cur.typeOf(j.Assignment); ti >= 0 {
			cur.busy[ti] -= len(j.Assignment.Devices)
		}
	}
	best.demand += j.count()
	if ti := bestType(j, best); ti >= 0 {
		best.busy[ti] += j.count()
	}
	to[k] = best
	d.Move, d.Cost, d.Gain = Migrate, seconds(bestCost), seconds(bestGain)
	d.Message = fmt.Sprintf("migrated %s→%s: predicted %.0fs→%.0fs, cost %.0fs included", cur.name, best.name, tHere, bestT, bestCost)
}

// routeKey is what orders a job for routing.
type routeKey struct {
	tier      int
	priority  int
	submitted time.Time
	idRank    int // rank of its ID among the jobs'
}

// tierRank orders jobs for routing: premium, then standard and jobs
// without a tier, then basic.
func tierRank(t tiers.Tier) int {
	switch t {
	case tiers.Premium:
		return 0
	case tiers.Basic:
		return 2
	}
	return 1
}

// want is the device count the job asks for: Requested, else
// MinReplicas, else 1.
func want(j *scheduler.Job) int {
	return max(cmp.Or(j.Requested, j.MinReplicas, 1), 1)
}

// speed is the job's speedup on type ti of s at its wanted count (0 when
// the type is not allowed or too small).
func speed(j *view, s *site, ti int) float64 {
	n := j.count()
	t := s.types[ti]
	if s.count[ti] < n || (len(j.Types) > 0 && !slices.Contains(j.Types, t)) {
		return 0
	}
	if j.Speedup == nil {
		return float64(n)
	}
	return j.at(t, (n+s.perNode[ti]-1)/s.perNode[ti], n)
}

// view is a job with the speedups the round has asked of it: clusters
// of the same types and node sizes ask the same.
type view struct {
	*Job
	keys [8]speedKey
	vals [8]float64
	n    int
	// best is the job's row of the round's table of its best type per
	// group of identical sites (site.group).
	best []bestSpeed
}

// bestSpeed is a job's fastest type on a group of identical sites and
// its speed there.
type bestSpeed struct {
	done bool
	ti   int32 // -1: none
	v    float64
}

type speedKey struct {
	t     accel.TypeKey
	nodes int
}

// reset makes v the view of job, whose row of best types is best.
func (v *view) reset(job *Job, best []bestSpeed) {
	v.Job, v.n, v.best = job, 0, best
}

// count is the device count the job asks for (want).
func (v *view) count() int { return want(&v.Job.Job) }

// at returns the job's speedup on n devices of type t over nodes nodes
// (0 for NaN, ±Inf or ≤ 0), asked once per round.
func (v *view) at(t accel.TypeKey, nodes, n int) float64 {
	k := speedKey{t, nodes}
	for i := range v.n {
		if v.keys[i] == k {
			return v.vals[i]
		}
	}
	x := v.Speedup.Speedup(string(t), nodes, n)
	if !(x > 0) || math.IsInf(x, 0) {
		x = 0
	}
	if v.n < len(v.keys) {
		v.keys[v.n], v.vals[v.n] = k, x
		v.n++
	}
	return x
}

// bestType is the index of the type of s where j is fastest (-1: none).
func bestType(j *view, s *site) int {
	ti, _ := bestOn(j, s)
	return ti
}

// bestOn returns the index of the type of s where j is fastest and its
// speed there (-1 and 0: none), worked out once per group of identical
// sites (site.group).
func bestOn(j *view, s *site) (int, float64) {
	b := &j.best[s.group]
	if !b.done {
		b.done, b.ti, b.v = true, -1, 0
		for ti := range s.types {
			if v := speed(j, s, ti); v > b.v {
				b.ti, b.v = int32(ti), v
			}
		}
	}
	return int(b.ti), b.v
}

// fitsNow reports whether s has free devices of j's best type for its
// wanted count.
func fitsNow(j *view, s *site) bool {
	ti := bestType(j, s)
	return ti >= 0 && s.count[ti]-s.busy[ti] >= j.count()
}

// score is the job's predicted time per unit of remaining work on s:
// 1/speed, times the cluster's load when it would queue there (its
// demand over its devices, the job included), times the carbon penalty.
// running: the job runs on s now, at its current speed, load aside.
func (f *Fleet) score(j *view, s *site, running bool) float64 {
	ti, v := bestOn(j, s)
	if running {
		if t := s.typeOf(j.Assignment); t >= 0 {
			ti, v = t, speed(j, s, t)
		}
	}
	if ti < 0 || v == 0 {
		return math.Inf(1)
	}
	load := 1.0
	if !running && s.size > 0 {
		load = max(1, float64(s.demand+j.count())/float64(s.size))
	}
	return load / v * s.penalty
}

// best returns the cluster with the lowest score for j (ties: the least
// asked-for, then the first by name); nil when none can take it.
func (f *Fleet) best(j *view, sites []*site) (*site, float64) {
	var best *site
	bs := math.Inf(1)
	for _, s := range sites {
		sc := f.score(j, s, false)
		if math.IsInf(sc, 1) {
			continue
		}
		// Equal scores (clusters that are not full score their speed
		// alone): the one with the lower share of its devices asked for.
		if sc < bs*(1-1e-9) || (sc <= bs*(1+1e-9) && s.utilization() < best.utilization()) {
			best, bs = s, sc
		}
	}
	return best, bs
}

// utilization is the share of its devices the jobs on s ask for.
func (s *site) utilization() float64 {
	if s.size == 0 {
		return math.Inf(1)
	}
	return float64(s.demand) / float64(s.size)
}

// sites validates and snapshots the clusters; those whose Inventory fails
// are gone. groups is how many groups of identical sites there are.
func (f *Fleet) sites(ctx context.Context, in Input) (sites []*site, groups int, gone []string, err error) {
	names := map[string]bool{}
	cs := slices.Clone(in.Clusters)
	slices.SortStableFunc(cs, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	for i, c := range cs {
		if c.Name == "" || names[c.Name] {
			return nil, 0, nil, fmt.Errorf("%w: cluster %d: empty or duplicate name %q", ErrInvalid, i, c.Name)
		}
		names[c.Name] = true
		cl := c.Cluster
		if c.Inventory != nil {
			snap, err := c.Inventory.Snapshot(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil, 0, nil, fmt.Errorf("fleet: %w", ctx.Err())
				}
				gone = append(gone, c.Name)
				continue
			}
			cl = snap
		}
		ix, err := f.index(c.Name).Index(&cl)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("%w: cluster %q: %w", ErrInvalid, c.Name, err)
		}
		s := &site{name: c.Name, idx: len(sites), cluster: cl, index: ix, carbon: c.Carbon, penalty: 1}
		s.types = ix.Types()
		s.count = make([]int, len(s.types))
		s.perNode = make([]int, len(s.types))
		s.busy = make([]int, len(s.types))
		for ti, t := range s.types {
			total, perNode, _ := ix.Usable(t)
			s.count[ti], s.perNode[ti] = total, max(perNode, 1)
			s.size += total
		}
		s.group = -1
		for _, o := range sites {
			if slices.Equal(o.types, s.types) && slices.Equal(o.count, s.count) && slices.Equal(o.perNode, s.perNode) {
				s.group = o.group
				break
			}
		}
		if s.group < 0 {
			s.group = groups
			groups++
		}
		if f.cfg.CarbonWeight > 0 && len(c.Carbon.Values) > 0 {
			v, err := c.Carbon.At(in.Now)
			if err == nil && c.Carbon.Unit != "" && c.Carbon.Unit != carbon.GPerKWh {
				// One value in g/kWh (an empty unit is taken as g/kWh).
				var one carbon.Series
				one, err = carbon.Series{Start: in.Now, Step: time.Hour, Values: []float64{v}, Unit: c.Carbon.Unit}.Convert(carbon.GPerKWh)
				if err == nil {
					v = one.Values[0]
				}
			}
			if err != nil {
				return nil, 0, nil, fmt.Errorf("%w: cluster %q: carbon at %v: %w", ErrInvalid, c.Name, in.Now, err)
			}
			s.penalty = 1 + f.cfg.CarbonWeight*v/1000
		}
		sites = append(sites, s)
	}
	return sites, groups, gone, nil
}

// goneTypes returns the types of the configured clusters that are gone
// this round (their last Cluster value, when given).
func (f *Fleet) goneTypes(_ context.Context, in Input, gone map[string]bool) []accel.TypeKey {
	var ts []accel.TypeKey
	for _, c := range in.Clusters {
		if gone[c.Name] {
			ts = append(ts, c.Cluster.Types()...)
		}
	}
	return ts
}

// messages builds the routing messages of a round in one buffer: one
// allocation instead of a few per job.
type messages struct {
	buf   strings.Builder
	spans []messageSpan
}

// messageSpan is the start in buf of decisions[decision]'s message.
type messageSpan struct{ decision, from int }

// start begins the message of decisions[decision].
func (m *messages) start(decision int) {
	m.spans = append(m.spans, messageSpan{decision, m.buf.Len()})
}

// add appends parts to the current message.
func (m *messages) add(parts ...string) {
	for _, p := range parts {
		m.buf.WriteString(p)
	}
}

// g3 appends v with 3 significant digits (fmt's %.3g).
func (m *messages) g3(v float64) {
	var b [24]byte
	m.buf.Write(strconv.AppendFloat(b[:0], v, 'g', 3, 64))
}

// fill sets the decisions' messages.
func (m *messages) fill(decisions []Decision) {
	all := m.buf.String()
	for i, sp := range m.spans {
		end := len(all)
		if i+1 < len(m.spans) {
			end = m.spans[i+1].from
		}
		decisions[sp.decision].Message = all[sp.from:end]
	}
}

func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}
