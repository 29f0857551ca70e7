package goodput

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
)

// TierParams extends Params with a synchronisation factor per network
// tier above the node, for clusters whose nodes sit in a topology tree
// (NVLink domain › rack › block › spine; accel/topology). Pollux's model
// knows whether a gang spans one node or several; here the multi-node
// sync time also depends on the slowest tier the gang's nodes span, the
// way a slower link stretches an all-reduce (DeAR, ICDCS'23).
//
// Tiers are numbered as accel/topology's Topology.Tier numbers them: 0 is
// one node, 1 the innermost level above the node, and so on outward; the
// last is the root (nodes that share no domain). A gang of K replicas
// over N ≥ 2 nodes whose slowest tier is t synchronises in
//
//	Sync[t−1] · T_sync(N, K)
//
// with T_sync the multi-node term of Params (AlphaN, BetaN and, in
// FormAllReduce, the tree), so At(t) is a Params whose every prediction
// (Model's Throughput, Goodput, Optimize) is the tier's. One node (tier
// 0) is Params' intra-node term, untouched. Without tiers (Sync nil, or
// every factor 1) TierParams is Params exactly.
type TierParams struct {
	Params
	// Sync holds the factor of tiers 1..len(Sync); a tier beyond them
	// takes the last one. A factor is > 0; the tier the base Params were
	// fitted on has 1.
	Sync []float64 `json:"tier_sync,omitempty"`
}

// Validate checks the base parameters and the factors (finite, > 0).
func (p TierParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return err
	}
	for i, f := range p.Sync {
		if !finite(f) || f <= 0 {
			return fmt.Errorf("%w: Sync[%d] (tier %d) = %v, want finite and > 0", ErrInvalidParams, i, i+1, f)
		}
	}
	return nil
}

// Factor is tier's sync factor: 1 for tier ≤ 0 or without factors.
func (p TierParams) Factor(tier int) float64 {
	if tier <= 0 || len(p.Sync) == 0 {
		return 1
	}
	return p.Sync[min(tier, len(p.Sync))-1]
}

// At returns the Params of a placement whose slowest tier is tier: the
// multi-node sync coefficients scaled by Factor(tier). A factor of 1
// returns Params unchanged, bit for bit.
func (p TierParams) At(tier int) Params {
	return p.Params.syncScaled(p.Factor(tier)) // × 1 is exact
}

// TierObservation is an Observation with the slowest tier its placement
// spans (Topology.TierOf of its nodes).
type TierObservation struct {
	Observation
	// Tier is 0 for one node, ≥ 1 for several.
	Tier int `json:"tier"`
}

// Validate checks the observation and that its tier matches its shape:
// 0 exactly when it ran on one node.
func (o TierObservation) Validate() error {
	if err := o.Observation.Validate(); err != nil {
		return err
	}
	switch {
	case o.Tier < 0:
		return fmt.Errorf("%w: Tier = %d", ErrInvalidObservation, o.Tier)
	case o.Nodes == 1 && o.Tier != 0:
		return fmt.Errorf("%w: Tier = %d on one node, want 0", ErrInvalidObservation, o.Tier)
	case o.Nodes > 1 && o.Tier == 0:
		return fmt.Errorf("%w: Tier = 0 on %d nodes, want ≥ 1 (the slowest tier spanned)", ErrInvalidObservation, o.Nodes)
	}
	return nil
}

// TierOptions configure FitTiers.
type TierOptions struct {
	// Fit configures the fit of the base Params.
	Fit FitOptions
	// Bandwidths is the prior: the bandwidth of each tier, indexed by
	// tier as Topology.TierBandwidths returns them (0 = unknown). A tier
	// without observations gets the factor of the nearest observed tier
	// (inner first) times that tier's bandwidth over its own, or, where
	// either is unknown, that tier's factor unchanged. nil: no prior.
	Bandwidths []float64
	// Tiers is the fewest factors to return (len(Sync)); more are
	// returned when observations or Bandwidths name outer tiers.
	Tiers int
}

// Validate checks the fit options, the bandwidths (finite, ≥ 0) and Tiers
// (≥ 0).
func (o TierOptions) Validate() error {
	if err := o.Fit.Validate(); err != nil {
		return err
	}
	for i, b := range o.Bandwidths {
		if !finite(b) || b < 0 {
			return fmt.Errorf("%w: Bandwidths[%d] = %v, want finite and ≥ 0", ErrInvalidOptions, i, b)
		}
	}
	if o.Tiers < 0 {
		return fmt.Errorf("%w: Tiers = %d", ErrInvalidOptions, o.Tiers)
	}
	return nil
}

// Bounds of a fitted tier factor.
const (
	minTierFactor = 1e-3
	maxTierFactor = 1e4
)

// FitTiers fits TierParams to observations from several tiers. The base
// Params are Fit's, on the one-node observations and those of the
// innermost tier observed on several nodes (its factor is 1); each other
// observed tier's factor then minimises the squared log error of its
// optimizer-step times (Fit's error term) over [1e-3, 1e4], by a scan
// of the log range refined by golden-section search. Tiers without
// observations follow TierOptions.Bandwidths. Observations of a single
// tier give Fit's Params bit for bit. Errors: as Fit, and an invalid
// TierObservation (its index named) or TierOptions.
func FitTiers(obs []TierObservation, opts TierOptions) (TierParams, FitResult, error) {
	if len(obs) == 0 {
		return TierParams{}, FitResult{}, ErrNoObservations
	}
	if err := opts.Validate(); err != nil {
		return TierParams{}, FitResult{}, fmt.Errorf("TierOptions: %w", err)
	}
	ref, top := 0, 0 // innermost and outermost multi-node tiers observed
	for i, o := range obs {
		if err := o.Validate(); err != nil {
			return TierParams{}, FitResult{}, fmt.Errorf("observation %d: %w", i, err)
		}
		if o.Tier > 0 && (ref == 0 || o.Tier < ref) {
			ref = o.Tier
		}
		top = max(top, o.Tier)
	}
	base := make([]Observation, 0, len(obs))
	for _, o := range obs {
		if o.Tier == 0 || o.Tier == ref {
			base = append(base, o.Observation)
		}
	}
	p, res, err := Fit(base, opts.Fit)
	if err != nil {
		return TierParams{}, res, err
	}
	fitted := map[int]float64{}
	if ref > 0 {
		fitted[ref] = 1
	}
	byTier := map[int][]Observation{}
	for _, o := range obs {
		if o.Tier > ref {
			byTier[o.Tier] = append(byTier[o.Tier], o.Observation)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(byTier)) {
		fitted[t] = fitTierFactor(p, byTier[t])
	}
	n := max(opts.Tiers, top, len(opts.Bandwidths)-1)
	return TierParams{Params: p, Sync: tierFactors(n, fitted, opts.Bandwidths)}, res, nil
}

// tierFactors fills the factors of tiers 1..n: fitted ones as given,
// each other one from its neighbour towards the nearest fitted tier
// (outward from the innermost fitted tier, then inward below it), scaled
// by the ratio of their bandwidths where both are known. With nothing
// fitted, tier 1 is the reference. Factors that are all 1 give nil (no
// tiers: Params exactly).
func tierFactors(n int, fitted map[int]float64, bw []float64) []float64 {
	if n <= 0 {
		return nil
	}
	if len(fitted) == 0 {
		fitted = map[int]float64{1: 1}
	}
	inner := slices.Min(slices.Collect(maps.Keys(fitted)))
	bwOf := func(t int) float64 {
		if t >= 0 && t < len(bw) {
			return bw[t]
		}
		return 0
	}
	out := make([]float64, max(n, inner))
	from := func(t, s int) float64 { // t's factor from its neighbour s
		f := out[s-1]
		if bs, bt := bwOf(s), bwOf(t); bs > 0 && bt > 0 {
			f *= bs / bt
		}
		return min(max(f, minTierFactor), maxTierFactor)
	}
	for t := inner; t <= n; t++ {
		if f, ok := fitted[t]; ok {
			out[t-1] = f
		} else {
			out[t-1] = from(t, t-1)
		}
	}
	for t := inner - 1; t >= 1; t-- {
		out[t-1] = from(t, t+1)
	}
	out = out[:n]
	for _, f := range out {
		if f != 1 {
			return out
		}
	}
	return nil
}

// fitTierFactor returns the factor f of the multi-node sync time that
// best fits obs under p: the least squared log error of optimizer-step
// times, log((T_grad^γ + (f·T_sync)^γ)^(1/γ)) against log OptimSeconds.
func fitTierFactor(p Params, obs []Observation) float64 {
	type point struct{ tg, ts, y float64 }
	pts := make([]point, len(obs))
	for i, o := range obs {
		pts[i] = point{p.GradSeconds(o.Local), p.SyncSeconds(o.Nodes, o.Replicas), math.Log(o.OptimSeconds)}
	}
	loss := func(lf float64) float64 {
		f := math.Exp(lf)
		var s float64
		for _, q := range pts {
			r := math.Log(p.optimSeconds(q.tg, f*q.ts)) - q.y
			s += r * r
		}
		return s
	}
	lo, hi := math.Log(minTierFactor), math.Log(maxTierFactor)
	const steps = 160
	h := (hi - lo) / steps
	best, bestLoss := 0, math.Inf(1)
	for i := 0; i <= steps; i++ {
		if l := loss(lo + float64(i)*h); l < bestLoss {
			best, bestLoss = i, l
		}
	}
	a, b := lo+float64(max(best-1, 0))*h, lo+float64(min(best+1, steps))*h
	const invPhi = 0.6180339887498949
	c, d := b-invPhi*(b-a), a+invPhi*(b-a)
	fc, fd := loss(c), loss(d)
	for b-a > 1e-12 {
		if fc <= fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = loss(c)
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = loss(d)
		}
	}
	return math.Exp((a + b) / 2)
}

// tierKey identifies an aggregated tiered observation in an Estimator.
type tierKey struct{ tier, nodes, replicas, local int }

// tierState is an Estimator's tiered data of one type.
type tierState struct {
	obs    map[tierKey]*obsAgg
	dirty  bool
	fitted bool
	params TierParams
}

// ObserveTier records an observation whose placement's slowest tier is
// tier (Topology.TierOf of its nodes; 0 for one node). It is also
// recorded as Observe records it, so Model, Curve and every untiered
// prediction are what they would be without tiers; TierModel fits the
// tiers on top. Errors: those of Observe and TierObservation.Validate.
func (e *Estimator) ObserveTier(typ string, tier int, o Observation) error {
	to := TierObservation{Observation: o, Tier: tier}
	if err := checkTypeKey(typ); err != nil {
		return err
	}
	if err := to.Validate(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.observe(typ, o); err != nil {
		return err
	}
	ts := e.tiers[typ]
	if ts == nil {
		ts = &tierState{obs: map[tierKey]*obsAgg{}}
		e.tiers[typ] = ts
	}
	k := tierKey{tier, o.Nodes, o.Replicas, o.Local}
	a := ts.obs[k]
	if a == nil {
		a = &obsAgg{}
		ts.obs[k] = a
	}
	a.add(o)
	ts.dirty = true
	return nil
}

// TierModel returns typ's model with per-tier sync factors, fitted (by
// FitTiers, lazily, warm-started from the previous fit) on what
// ObserveTier recorded, with EstimatorConfig.TierBandwidths as the prior.
// A type without tiered observations gets Model's parameters with the
// prior's factors. false when the job has no data on typ.
func (e *Estimator) TierModel(typ string) (TierModel, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.model(typ)
	if !ok {
		return TierModel{}, false
	}
	ts := e.tiers[typ]
	if ts != nil && ts.dirty {
		obs := make([]TierObservation, 0, len(ts.obs))
		for k, a := range ts.obs {
			obs = append(obs, TierObservation{Tier: k.tier, Observation: Observation{Nodes: k.nodes, Replicas: k.replicas,
				Local: k.local, AccumSeconds: a.accum, OptimSeconds: a.optim}})
		}
		slices.SortFunc(obs, func(a, b TierObservation) int {
			return cmp.Or(cmp.Compare(a.Tier, b.Tier), cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Local, b.Local))
		})
		opts := TierOptions{Fit: e.fitOpts, Bandwidths: e.tierBW}
		if ts.fitted {
			prev := ts.params.Params
			opts.Fit.Init = &prev
		}
		p, _, err := FitTiers(obs, opts)
		if err == nil {
			ts.params, ts.fitted = p, true
		}
		ts.dirty = false
	}
	if ts == nil || !ts.fitted {
		return TierModel{Model: m, Sync: tierFactors(len(e.tierBW)-1, nil, e.tierBW)}, true
	}
	m.Params = ts.params.Params
	return TierModel{Model: m, Sync: ts.params.Sync}, true
}

// TierModel is a Model with per-tier sync factors (see TierParams).
type TierModel struct {
	Model
	// Sync is TierParams.Sync.
	Sync []float64 `json:"tier_sync,omitempty"`
}

// At returns the Model of a placement whose slowest tier is tier.
func (m TierModel) At(tier int) Model {
	out := m.Model
	out.Params = TierParams{Params: m.Params, Sync: m.Sync}.At(tier)
	return out
}
