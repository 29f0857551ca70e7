package goodput

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// AnyType is the type key that matches every accelerator type without an
// entry of its own in a Curve.
const AnyType = ""

// CurveOptions configure NewCurve. The zero value uses a one-GPU baseline
// on the slowest type and the limits' own replica bound.
type CurveOptions struct {
	// BaseNodes and BaseReplicas are the baseline allocation whose best
	// goodput is speedup 1: 0 means 1 node and 1 replica (AdaptDL master);
	// a fair share of the cluster is Pollux's artifact choice.
	BaseNodes, BaseReplicas int
	// BaseType is the accelerator type of the baseline. AnyType ("") means
	// the type with the smallest baseline goodput, the slowest (Sia's
	// normalisation).
	BaseType string
	// MaxReplicas, if positive, caps the replicas with a non-zero speedup
	// (an Estimator's exploration bound, for example).
	MaxReplicas int
	// Plans, if set, shares the memoised batch plans with other curves
	// built from equal models; nil gives the curve memos of its own.
	Plans *PlanCache
}

// Curve is a job's speedup curve over allocations, per accelerator type:
// the best goodput at (nodes, replicas) on a type, divided by the
// baseline's. It implements Speedup, BatchPlanner and NodeBounder.
// Results are memoised on first use; a memoised lookup neither locks nor
// allocates. A Curve is safe for concurrent use.
type Curve struct {
	entries []curveEntry // sorted by type
	any     *curveEntry  // the AnyType entry, or nil
	base    float64      // baseline goodput (linear entries: per replica)
	baseK   float64      // baseline replicas
}

type curveEntry struct {
	typ     string
	model   Model
	linear  bool
	maxRepl int
	memo    *planMemo // the model's plans; nil for a linear entry
}

// CurveModel is one accelerator type's entry for NewCurve: a fitted Model,
// or (Linear) only batch limits for a type with no fitted model, which then
// scales linearly: speedup = replicas / BaseReplicas.
type CurveModel struct {
	Model  Model
	Linear bool
}

// NewCurve builds a speedup curve from per-type models keyed by type
// (AnyType for a single, type-agnostic model). Models are validated.
func NewCurve(models map[string]CurveModel, opts CurveOptions) (*Curve, error) {
	if len(models) == 0 {
		return nil, fmt.Errorf("%w: no models", ErrInvalidOptions)
	}
	if opts.BaseNodes < 0 || opts.BaseReplicas < 0 || opts.MaxReplicas < 0 {
		return nil, fmt.Errorf("%w: negative BaseNodes, BaseReplicas or MaxReplicas", ErrInvalidOptions)
	}
	bn, bk := max(opts.BaseNodes, 1), max(opts.BaseReplicas, 1)
	if bn > bk {
		return nil, fmt.Errorf("%w: BaseNodes %d > BaseReplicas %d", ErrInvalidOptions, bn, bk)
	}
	c := &Curve{baseK: float64(bk)}
	for _, typ := range slices.Sorted(maps.Keys(models)) {
		cm := models[typ]
		var err error
		if cm.Linear {
			err = cm.Model.Limits.Validate()
		} else {
			err = cm.Model.Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("type %q: %w", typ, err)
		}
		maxRepl := cm.Model.MaxUsefulReplicas()
		if opts.MaxReplicas > 0 {
			maxRepl = min(maxRepl, opts.MaxReplicas)
		}
		ce := curveEntry{typ: typ, model: cm.Model, linear: cm.Linear, maxRepl: maxRepl}
		if !cm.Linear {
			ce.memo = opts.Plans.memo(cm.Model)
		}
		c.entries = append(c.entries, ce)
	}
	for i := range c.entries {
		if c.entries[i].typ == AnyType {
			c.any = &c.entries[i]
		}
	}
	// Baseline goodput.
	c.base = math.Inf(1)
	found := false
	for i := range c.entries {
		e := &c.entries[i]
		if opts.BaseType != AnyType && e.typ != opts.BaseType {
			continue
		}
		found = true
		if e.linear {
			continue
		}
		g := e.memo.plan(&e.model, bn, bk).Goodput
		if !(g > 0) || math.IsInf(g, 0) {
			return nil, fmt.Errorf("%w: baseline (%d nodes, %d replicas) infeasible on type %q", ErrInvalidOptions, bn, bk, e.typ)
		}
		c.base = min(c.base, g)
	}
	if !found {
		return nil, fmt.Errorf("%w: BaseType %q has no model", ErrInvalidOptions, opts.BaseType)
	}
	if math.IsInf(c.base, 1) {
		c.base = 0 // every candidate is linear
	}
	return c, nil
}

// LinearCurve is the curve of a job with no fitted model: on every type,
// speedup = replicas (a one-GPU baseline), within the limits' replica
// bound and maxReplicas if positive.
func LinearCurve(l Limits, maxReplicas int) (*Curve, error) {
	return NewCurve(map[string]CurveModel{AnyType: {Model: Model{Limits: l}, Linear: true}}, CurveOptions{MaxReplicas: maxReplicas})
}

func (c *Curve) entry(typ string) *curveEntry {
	for i := range c.entries {
		if c.entries[i].typ == typ {
			return &c.entries[i]
		}
	}
	return c.any
}

// Types returns the accelerator types with an entry, sorted (AnyType first
// if present).
func (c *Curve) Types() []string {
	out := make([]string, len(c.entries))
	for i := range c.entries {
		out[i] = c.entries[i].typ
	}
	return out
}

// MaxReplicas is the largest replica count with a non-zero speedup on typ
// (0 if the curve has no entry for typ).
func (c *Curve) MaxReplicas(typ string) int {
	if e := c.entry(typ); e != nil {
		return e.maxRepl
	}
	return 0
}

// Speedup implements Speedup: the best goodput on (typ, nodes, replicas)
// over the baseline's; 0 for no allocation, impossible shapes, replicas
// above the bound, types without an entry, and infeasible batch limits.
func (c *Curve) Speedup(typ string, nodes, replicas int) float64 {
	e := c.entry(typ)
	if e == nil || nodes < 1 || replicas < nodes || replicas > e.maxRepl {
		return 0
	}
	if e.linear {
		return float64(replicas) / c.baseK
	}
	if !(c.base > 0) {
		return 0
	}
	return c.plan(e, nodes, replicas).Goodput / c.base
}

// BatchPlan implements BatchPlanner: the batch plan with the best goodput
// on (typ, nodes, replicas). For a linear entry it is Pollux's plan for a
// job without a model (total batch max(InitBatch, MinLocal·replicas))
// with Goodput 0 (unknown). The zero BatchPlan means infeasible.
func (c *Curve) BatchPlan(typ string, nodes, replicas int) BatchPlan {
	e := c.entry(typ)
	if e == nil || nodes < 1 || replicas < nodes || replicas > e.maxRepl {
		return BatchPlan{}
	}
	if e.linear {
		return linearPlan(e.model.Limits, replicas)
	}
	return c.plan(e, nodes, replicas)
}

// linearPlan is the batch a job without a model trains at.
func linearPlan(l Limits, replicas int) BatchPlan {
	if l.InitBatch < 1 {
		return BatchPlan{}
	}
	batch := max(l.InitBatch, l.minLocal()*replicas)
	if !l.Adaptive() {
		batch = l.InitBatch
	}
	local := (batch + replicas - 1) / replicas
	accum := 0
	if l.Accumulation {
		accum = max((local+l.maxLocal()-1)/l.maxLocal()-1, 0)
		local = (local + accum) / (accum + 1)
	}
	// Clamped to the per-GPU bounds, as Model.Optimize does.
	if l.minLocal() > l.maxLocal() {
		return BatchPlan{}
	}
	local = min(max(local, l.minLocal()), l.maxLocal())
	if local*replicas*(accum+1) < l.InitBatch {
		return BatchPlan{}
	}
	return BatchPlan{Batch: local * replicas * (accum + 1), Local: local, Accum: accum}
}

// plan returns the memoised Optimize result.
func (c *Curve) plan(e *curveEntry, nodes, replicas int) BatchPlan {
	return e.memo.plan(&e.model, nodes, replicas)
}

// NodeBound implements NodeBounder: 2 when every entry's sync time is the
// same on every node count from 2 on (FormPollux, or FormAllReduce before
// its tree term is fitted), 1 when every entry is linear, 0 when some
// entry's sync time depends on every node count.
func (c *Curve) NodeBound() int {
	b := 1
	for i := range c.entries {
		if e := &c.entries[i]; !e.linear {
			nb := e.model.nodeBound()
			if nb == 0 {
				return 0
			}
			b = max(b, nb)
		}
	}
	return b
}

// Base is the baseline goodput in samples per second (0 when every entry
// is linear).
func (c *Curve) Base() float64 { return c.base }
