package goodput

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// EstimatorConfig configures NewEstimator. Only Limits is required.
type EstimatorConfig struct {
	// Limits are the job's batch-size limits (InitBatch ≥ 1).
	Limits Limits
	// Fit configures every refit. Warm starts from the previous fit are
	// added automatically.
	Fit FitOptions
	// Profiles are one-GPU measurements of the job on accelerator types
	// it may not have run on yet (Sia's seed profiles), keyed by type.
	// They bootstrap those types' models.
	Profiles map[string][]Observation
	// MaxReplicas, if positive, caps the exploration bound.
	MaxReplicas int
	// Explore is how fast the exploration bound grows: the job may be
	// offered at most Explore × the most replicas it has run with (1
	// before any run), because its model is only trusted near measured
	// scales. 0 = DefaultExplore. Pollux uses 2; fewer, larger steps cost
	// fewer restarts while a job ramps up (see DefaultExplore).
	Explore int
	// TypeLimits optionally replaces Limits on some accelerator types
	// (Sia: the largest per-GPU batch depends on the device's memory).
	// InitBatch should match Limits.InitBatch so efficiencies compare.
	TypeLimits map[string]Limits
	// Plans, if set, is the PlanCache of the curves Curve returns (unless
	// their CurveOptions name another): several Estimators may share one.
	Plans *PlanCache
	// TierBandwidths is TierModel's prior: each network tier's bandwidth,
	// as TierOptions.Bandwidths (accel/topology's TierBandwidths). nil:
	// no prior.
	TierBandwidths []float64
}

// DefaultExplore is EstimatorConfig.Explore's default. In the simulator,
// on the Pollux workloads (16×4 T4, eight 160-job traces), 4 shortened
// the goodput policy's average JCT against Pollux's 2 by 2.2% at 1.0×
// load, 7.6% at 0.5×, 1.0% at 1.5× and 0.8% at 2.0×, and by 2.3% on Sia's
// heterogeneous cluster, with 7–22% fewer restarts. 3 and 8 beat 2 but
// not 4; unbounded growth matched 4 (within 0.1%).
const DefaultExplore = 4

// Estimator learns one job's goodput models online, one per accelerator
// type, from the measurements the host reports. It refits a type's model
// lazily, when the model is asked for after new observations arrived.
//
// A type the job has run on with several replicas gets its own fit. A
// type it has only one-GPU data for (from a profile or a run) borrows the
// scaling of the type with the most multi-replica configurations: that
// type's parameters scaled by the ratio of one-GPU step times (Sia's
// bootstrapping). With no multi-replica data anywhere, a type's own fit
// relies on Pollux's priors (perfect scaling).
//
// An Estimator is safe for concurrent use.
type Estimator struct {
	mu       sync.Mutex
	limits   Limits
	typeLim  map[string]Limits
	fitOpts  FitOptions
	maxRepl  int
	explore  int
	grad     GradStats
	types    map[string]*typeState
	profiled int // most replicas ever observed, any type
	plans    *PlanCache
	tiers    map[string]*tierState // ObserveTier's data, per type
	tierBW   []float64             // EstimatorConfig.TierBandwidths
}

type obsKey struct{ nodes, replicas, local int }

type obsAgg struct {
	n            float64
	accum, optim float64 // running means
}

// add folds o's times into the running means.
func (a *obsAgg) add(o Observation) {
	a.n++
	a.accum += (o.AccumSeconds - a.accum) / a.n
	a.optim += (o.OptimSeconds - a.optim) / a.n
}

type typeState struct {
	obs      map[obsKey]*obsAgg
	multi    int // distinct multi-replica configurations
	dirty    bool
	fitted   bool
	params   Params
	result   FitResult
	fitError error
}

// NewEstimator validates cfg and returns an Estimator with no
// measurements (its curve scales linearly until it sees data).
func NewEstimator(cfg EstimatorConfig) (*Estimator, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("EstimatorConfig.Limits: %w", err)
	}
	if err := cfg.Fit.Validate(); err != nil {
		return nil, fmt.Errorf("EstimatorConfig.Fit: %w", err)
	}
	if cfg.MaxReplicas < 0 {
		return nil, fmt.Errorf("%w: EstimatorConfig.MaxReplicas = %d", ErrInvalidOptions, cfg.MaxReplicas)
	}
	if cfg.Explore < 0 {
		return nil, fmt.Errorf("%w: EstimatorConfig.Explore = %d", ErrInvalidOptions, cfg.Explore)
	}
	if cfg.Explore == 0 {
		cfg.Explore = DefaultExplore
	}
	if err := (TierOptions{Bandwidths: cfg.TierBandwidths}).Validate(); err != nil {
		return nil, fmt.Errorf("EstimatorConfig.TierBandwidths: %w", err)
	}
	e := &Estimator{limits: cfg.Limits, fitOpts: cfg.Fit, maxRepl: cfg.MaxReplicas, explore: cfg.Explore,
		types: map[string]*typeState{}, typeLim: map[string]Limits{}, plans: cfg.Plans, tiers: map[string]*tierState{},
		tierBW: slices.Clone(cfg.TierBandwidths)}
	for _, typ := range slices.Sorted(maps.Keys(cfg.TypeLimits)) {
		l := cfg.TypeLimits[typ]
		if err := checkTypeKey(typ); err != nil {
			return nil, fmt.Errorf("EstimatorConfig.TypeLimits: %w", err)
		}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("EstimatorConfig.TypeLimits[%q]: %w", typ, err)
		}
		e.typeLim[typ] = l
	}
	e.fitOpts.Init = nil
	for _, typ := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		for i, o := range cfg.Profiles[typ] {
			if o.Replicas != 1 {
				return nil, fmt.Errorf("%w: Profiles[%q][%d]: Replicas = %d, want 1", ErrInvalidOptions, typ, i, o.Replicas)
			}
			if err := e.observe(typ, o); err != nil {
				return nil, fmt.Errorf("Profiles[%q][%d]: %w", typ, i, err)
			}
		}
	}
	e.profiled = 0 // profiles do not count as runs for exploration
	return e, nil
}

// checkTypeKey accepts AnyType ("") and well-formed accelerator type keys:
// 1 to 64 characters of [a-z0-9-], not starting or ending with '-' (the
// form of accel.TypeKey; goodput does not import accel). A key that
// differs from the cluster's only by case or spaces ("A100-40GB") would
// otherwise never match and leave the job on a linear speedup.
func checkTypeKey(typ string) error {
	if typ == AnyType {
		return nil
	}
	ok := len(typ) <= 64 && typ[0] != '-' && typ[len(typ)-1] != '-'
	for i := 0; ok && i < len(typ); i++ {
		c := typ[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: type %q: want a canonical accelerator type key (1-64 characters of [a-z0-9-], as accel.CanonicalType returns)", ErrInvalidOptions, typ)
	}
	return nil
}

// Observe records the mean step times of one configuration on type typ,
// a canonical accelerator type key (accel.TypeKey, for example
// "a100-40gb", not the alias "a100") or AnyType. Repeated observations of
// a configuration are averaged. An invalid observation or a malformed key
// is rejected and not recorded; the scheduler rejects a job whose model
// is keyed by an alias.
func (e *Estimator) Observe(typ string, o Observation) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observe(typ, o)
}

// ObserveBatch records several observations; it stops at the first
// invalid one and names its index (the ones before it are kept).
func (e *Estimator) ObserveBatch(typ string, obs []Observation) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, o := range obs {
		if err := e.observe(typ, o); err != nil {
			return fmt.Errorf("observation %d: %w", i, err)
		}
	}
	return nil
}

func (e *Estimator) observe(typ string, o Observation) error {
	if err := checkTypeKey(typ); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ts := e.types[typ]
	if ts == nil {
		ts = &typeState{obs: map[obsKey]*obsAgg{}}
		e.types[typ] = ts
	}
	k := obsKey{o.Nodes, o.Replicas, o.Local}
	a := ts.obs[k]
	if a == nil {
		a = &obsAgg{}
		ts.obs[k] = a
		if o.Replicas > 1 {
			ts.multi++
		}
	}
	a.add(o)
	ts.dirty = true
	e.profiled = max(e.profiled, o.Replicas)
	return nil
}

// ObserveGrad records the job's latest gradient statistics (at
// InitBatch); they apply to every type.
func (e *Estimator) ObserveGrad(g GradStats) error {
	if err := g.Validate(); err != nil {
		return err
	}
	e.mu.Lock()
	e.grad = g
	e.mu.Unlock()
	return nil
}

// MaxReplicas is the exploration bound: at most Explore × the most
// replicas the job has run with (1 before any run), capped by the limits'
// MaxUsefulReplicas and the configured MaxReplicas.
func (e *Estimator) MaxReplicas() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.maxReplicas()
}

func (e *Estimator) maxReplicas() int {
	m := min(max(e.explore*e.profiled, 1), e.limits.MaxUsefulReplicas())
	if e.maxRepl > 0 {
		m = min(m, e.maxRepl)
	}
	return m
}

// limitsOf returns typ's limits.
func (e *Estimator) limitsOf(typ string) Limits {
	if l, ok := e.typeLim[typ]; ok {
		return l
	}
	return e.limits
}

// Types returns the accelerator types with any observation or profile,
// sorted.
func (e *Estimator) Types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.types))
}

// Observations returns the averaged observations of typ, sorted by
// (nodes, replicas, local).
func (e *Estimator) Observations(typ string) []Observation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observations(typ)
}

func (e *Estimator) observations(typ string) []Observation {
	ts := e.types[typ]
	if ts == nil {
		return nil
	}
	out := make([]Observation, 0, len(ts.obs))
	for k, a := range ts.obs {
		out = append(out, Observation{Nodes: k.nodes, Replicas: k.replicas, Local: k.local, AccumSeconds: a.accum, OptimSeconds: a.optim})
	}
	slices.SortFunc(out, func(a, b Observation) int {
		return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Local, b.Local))
	})
	return out
}

// refit fits typ's own observations if they changed.
func (e *Estimator) refit(typ string) *typeState {
	ts := e.types[typ]
	if ts == nil || !ts.dirty {
		return ts
	}
	opts := e.fitOpts
	if ts.fitted {
		prev := ts.params
		opts.Init = &prev
	}
	p, r, err := Fit(e.observations(typ), opts)
	if err == nil {
		ts.params, ts.result, ts.fitted = p, r, true
	}
	ts.fitError = err
	ts.dirty = false
	return ts
}

// reference returns the type with the most multi-replica configurations
// (ties by name), or "" and false.
func (e *Estimator) reference() (string, bool) {
	best, n := "", 0
	for _, typ := range slices.Sorted(maps.Keys(e.types)) {
		if m := e.types[typ].multi; m > n {
			best, n = typ, m
		}
	}
	return best, n > 0
}

// Model returns the current model of typ: fitted, projected from another
// type, or false when the job has no data on typ.
func (e *Estimator) Model(typ string) (Model, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.model(typ)
}

func (e *Estimator) model(typ string) (Model, bool) {
	p, ok := e.params(typ)
	if !ok {
		return Model{}, false
	}
	return Model{Params: p, Grad: e.grad, Limits: e.limitsOf(typ)}, true
}

// FitResult returns how typ's last own fit ended.
func (e *Estimator) FitResult(typ string) (FitResult, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := e.refit(typ)
	if ts == nil || !ts.fitted {
		return FitResult{}, false
	}
	return ts.result, true
}

func (e *Estimator) params(typ string) (Params, bool) {
	ts := e.refit(typ)
	if ts == nil || !ts.fitted {
		return Params{}, false
	}
	if ts.multi > 0 {
		return ts.params, true
	}
	ref, ok := e.reference()
	if !ok {
		return ts.params, true
	}
	rs := e.refit(ref)
	if rs == nil || !rs.fitted {
		return ts.params, true
	}
	// Project: the reference's scaling, slowed by the one-GPU step-time
	// ratio at this type's largest measured one-GPU batch.
	var o *Observation
	for _, ob := range e.observations(typ) {
		if ob.Replicas == 1 && (o == nil || ob.Local > o.Local) {
			o = &ob
		}
	}
	if o == nil {
		return ts.params, true
	}
	pred := rs.params.StepSeconds(1, 1, o.Local, 0)
	if !(pred > 0) {
		return ts.params, true
	}
	f := o.OptimSeconds / pred
	if !finite(f) || f <= 0 {
		return ts.params, true
	}
	return rs.params.scaled(f), true
}

// Curve returns the job's current speedup curve over every type it has
// data for (fitted or projected); types without data, and every type while
// the job has none, scale linearly (an AnyType entry: speedup = replicas /
// BaseReplicas). opts.MaxReplicas 0 means the exploration bound
// MaxReplicas; a positive value replaces it (a host that tracks its own
// bound, or needs the plan for an allocation it already gave the job).
// opts.Plans nil means EstimatorConfig.Plans. The curve is a snapshot:
// later observations do not change it.
func (e *Estimator) Curve(opts CurveOptions) (*Curve, error) {
	e.mu.Lock()
	models := map[string]CurveModel{AnyType: {Model: Model{Limits: e.limits}, Linear: true}}
	for _, typ := range slices.Sorted(maps.Keys(e.types)) {
		if m, ok := e.model(typ); ok {
			models[typ] = CurveModel{Model: m}
		}
	}
	if opts.MaxReplicas <= 0 {
		opts.MaxReplicas = e.maxReplicas()
	}
	if opts.Plans == nil {
		opts.Plans = e.plans
	}
	e.mu.Unlock()
	return NewCurve(models, opts)
}
