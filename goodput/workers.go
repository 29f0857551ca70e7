package goodput

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultSliceOverhead is the time a device loses, as a fraction of one
// logical worker's pass, for every worker beyond the first that it
// time-slices: EasyScale's measured context-switch cost, the mean over its
// eight models of (switching − not switching)/not switching per
// micro-batch with 8 workers on one V100 (0.30%; artifact
// EST-overhead/plot/context_switch.csv, Figure 11 of the SC'23 paper).
const DefaultSliceOverhead = 0.003

// ErrInvalidGang reports a gang that cannot host a job's logical workers:
// workers per type that do not sum to the job's count, a device with no
// worker, an unknown or repeated type, or a count below one.
var ErrInvalidGang = errors.New("goodput: invalid gang")

// TypeShare is the part of a gang on one accelerator type: Devices
// devices of Type that host Workers of the job's logical workers between
// them, spread as evenly as possible (the busiest hosts
// ceil(Workers/Devices), and every device at least one).
type TypeShare struct {
	Type    string `json:"type"`
	Devices int    `json:"devices"`
	Workers int    `json:"workers"`
}

// CheckGang reports whether gang can host exactly workers logical
// workers: workers ≥ 1, at least one share, each share with a non-empty
// type seen once, 1 ≤ Devices ≤ Workers, and Workers summing to workers.
// Errors wrap ErrInvalidGang and name the share.
func CheckGang(workers int, gang []TypeShare) error {
	if workers < 1 {
		return fmt.Errorf("%w: %d logical workers, want ≥ 1", ErrInvalidGang, workers)
	}
	if len(gang) == 0 {
		return fmt.Errorf("%w: no device", ErrInvalidGang)
	}
	sum := 0
	for i, s := range gang {
		switch {
		case s.Type == "":
			return fmt.Errorf("%w: share %d: empty type", ErrInvalidGang, i)
		case s.Devices < 1 || s.Workers < s.Devices:
			return fmt.Errorf("%w: share %d (%s): %d workers on %d devices, want 1 ≤ devices ≤ workers", ErrInvalidGang, i, s.Type, s.Workers, s.Devices)
		}
		for _, o := range gang[:i] {
			if o.Type == s.Type {
				return fmt.Errorf("%w: share %d: type %s twice", ErrInvalidGang, i, s.Type)
			}
		}
		sum += s.Workers
	}
	if sum != workers {
		return fmt.Errorf("%w: workers per type sum to %d, want %d", ErrInvalidGang, sum, workers)
	}
	return nil
}

// GangSpeedup is implemented by the speedup models of jobs with a fixed
// number of logical workers (EasyScale's W-jobs): how much faster the job
// trains on a gang of one or several device types than on its baseline.
// nodes is the number of nodes the gang spans. Implementations return 0
// for a gang the job cannot use (CheckGang fails, a type it has no model
// for), never NaN or a negative value, and are safe for concurrent use.
type GangSpeedup interface {
	GangSpeedup(gang []TypeShare, nodes int) float64
	// Workers is the job's logical worker count W.
	Workers() int
}

// WorkerConfig describes a job with a fixed number of logical workers for
// NewWorkerModel.
type WorkerConfig struct {
	// Workers is W, the job's logical worker count (its world size; ≥ 1).
	Workers int
	// Local is each worker's batch per step (≥ 1); the global batch
	// W·Local never changes, so statistical efficiency is constant and
	// goodput is throughput.
	Local int
	// Models are the job's fitted models per accelerator type key, as an
	// Estimator's Model or Fit on the type's profile gives them: Params
	// time one pass and the synchronisation; Limits.MaxLocal (0 = no
	// bound) is the largest batch one pass of that type holds, so a worker
	// whose Local exceeds it takes ceil(Local/MaxLocal) passes.
	Models map[string]Model
	// SliceOverhead is the fraction of one worker's time a device loses
	// per extra worker it time-slices; 0 means DefaultSliceOverhead and a
	// negative value none.
	SliceOverhead float64
	// BaseType is the type of the baseline (speedup 1): all W workers on
	// one device of it. "" means the type with the slowest baseline.
	BaseType string
}

// WorkerModel predicts a W-job's throughput on any gang, of one type or
// several. A device of type τ that hosts k workers runs their k·p passes
// (p per worker) one after another and synchronises once, so its step
// takes Pollux's T_iter with s = k·p − 1 accumulation passes,
//
//	(k·p − 1)·T_grad + (T_grad^γ + T_sync^γ)^(1/γ) + (k − 1)·o·p·T_grad,
//
// with T_grad, γ and T_sync (for the whole gang's nodes and devices) from
// τ's Params and o the slice overhead; the gang's step is the slowest
// device's. With one worker per device on one type it is Pollux's model.
// A WorkerModel is immutable and safe for concurrent use.
type WorkerModel struct {
	workers int
	local   int
	types   []workerType // sorted by name
	over    float64
	base    float64 // baseline throughput, samples per second
}

type workerType struct {
	name   string
	params Params
	passes int     // passes per worker
	pass   int     // batch of one pass
	grad   float64 // T_grad of one pass
}

// NewWorkerModel validates cfg and builds its model.
func NewWorkerModel(cfg WorkerConfig) (*WorkerModel, error) {
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("%w: Workers = %d, want ≥ 1", ErrInvalidOptions, cfg.Workers)
	}
	if cfg.Local < 1 {
		return nil, fmt.Errorf("%w: Local = %d, want ≥ 1", ErrInvalidOptions, cfg.Local)
	}
	if len(cfg.Models) == 0 {
		return nil, fmt.Errorf("%w: no Models", ErrInvalidOptions)
	}
	if !finite(cfg.SliceOverhead) {
		return nil, fmt.Errorf("%w: SliceOverhead = %v", ErrInvalidOptions, cfg.SliceOverhead)
	}
	m := &WorkerModel{workers: cfg.Workers, local: cfg.Local, over: cfg.SliceOverhead}
	switch {
	case m.over == 0:
		m.over = DefaultSliceOverhead
	case m.over < 0:
		m.over = 0
	}
	for name, mod := range cfg.Models {
		if name == AnyType {
			return nil, fmt.Errorf("%w: Models: empty type key", ErrInvalidOptions)
		}
		if err := mod.Params.Validate(); err != nil {
			return nil, fmt.Errorf("type %q: %w", name, err)
		}
		if mod.MaxLocal < 0 {
			return nil, fmt.Errorf("type %q: %w: MaxLocal = %d", name, ErrInvalidLimits, mod.MaxLocal)
		}
		wt := workerType{name: name, params: mod.Params, passes: 1, pass: cfg.Local}
		if mod.MaxLocal > 0 && cfg.Local > mod.MaxLocal {
			wt.passes = (cfg.Local + mod.MaxLocal - 1) / mod.MaxLocal
			wt.pass = (cfg.Local + wt.passes - 1) / wt.passes
		}
		wt.grad = mod.Params.GradSeconds(wt.pass)
		m.types = append(m.types, wt)
	}
	slices.SortFunc(m.types, func(a, b workerType) int { return strings.Compare(a.name, b.name) })
	m.base = math.Inf(1)
	for i := range m.types {
		t := &m.types[i]
		if cfg.BaseType != AnyType && t.name != cfg.BaseType {
			continue
		}
		m.base = min(m.base, float64(m.batch())/m.deviceSeconds(t, m.workers, MinCoef))
	}
	if math.IsInf(m.base, 1) {
		return nil, fmt.Errorf("%w: BaseType %q has no model", ErrInvalidOptions, cfg.BaseType)
	}
	if !(m.base > 0) {
		return nil, fmt.Errorf("%w: baseline throughput %v", ErrInvalidOptions, m.base)
	}
	return m, nil
}

// Workers implements GangSpeedup: the job's logical worker count.
func (m *WorkerModel) Workers() int { return m.workers }

func (m *WorkerModel) batch() int { return m.workers * m.local }

// find returns the model of type name, nil if there is none. A scan: a
// model covers a few types, and comparing their names for equality (the
// lengths first) costs less than ordering them, on the path every speedup
// the search asks for takes.
func (m *WorkerModel) find(name string) *workerType {
	for i := range m.types {
		if m.types[i].name == name {
			return &m.types[i]
		}
	}
	return nil
}

// Types returns the type keys the model covers, sorted.
func (m *WorkerModel) Types() []string {
	out := make([]string, len(m.types))
	for i := range m.types {
		out[i] = m.types[i].name
	}
	return out
}

// WorkerSeconds is the time one worker's passes take on typ, without
// synchronisation (0 if the model has no entry for typ): EasyScale's
// per-worker speed, by which it splits workers over types.
func (m *WorkerModel) WorkerSeconds(typ string) float64 {
	t := m.find(typ)
	if t == nil {
		return 0
	}
	return float64(t.passes) * t.grad
}

// deviceSeconds is the step time of a device of type t hosting k workers
// when the gang synchronises in ts seconds.
func (m *WorkerModel) deviceSeconds(t *workerType, k int, ts float64) float64 {
	n := k * t.passes
	return float64(n-1)*t.grad + t.params.optimSeconds(t.grad, ts) + float64(k-1)*m.over*float64(t.passes)*t.grad
}

// StepSeconds is the predicted time of one step (all W workers' passes
// and one synchronisation) on gang over nodes nodes; NaN if the gang is
// invalid for the job (CheckGang), names a type without a model, or
// spans more nodes than devices or fewer than one.
func (m *WorkerModel) StepSeconds(gang []TypeShare, nodes int) float64 {
	devices := 0
	for _, s := range gang {
		devices += s.Devices
	}
	if nodes < 1 || nodes > devices || CheckGang(m.workers, gang) != nil {
		return math.NaN()
	}
	step := 0.0
	for _, s := range gang {
		t := m.find(s.Type)
		if t == nil {
			return math.NaN()
		}
		k := (s.Workers + s.Devices - 1) / s.Devices
		step = max(step, m.deviceSeconds(t, k, t.params.SyncSeconds(nodes, devices)))
	}
	return step
}

// Throughput is the predicted training throughput in samples per second
// (W·Local per step) on gang over nodes nodes; 0 where StepSeconds is NaN.
func (m *WorkerModel) Throughput(gang []TypeShare, nodes int) float64 {
	t := m.StepSeconds(gang, nodes)
	if !(t > 0) || math.IsInf(t, 0) {
		return 0
	}
	return float64(m.batch()) / t
}

// GangSpeedup implements GangSpeedup: Throughput over the baseline's (all
// W workers on one device of the base type).
func (m *WorkerModel) GangSpeedup(gang []TypeShare, nodes int) float64 {
	return m.Throughput(gang, nodes) / m.base
}

// Speedup implements Speedup for gangs of one type: replicas devices of
// typ hosting the W workers as evenly as possible; 0 for more devices than
// workers. Policies that cannot mix types see a W-job through it.
func (m *WorkerModel) Speedup(typ string, nodes, replicas int) float64 {
	if replicas < 1 || replicas > m.workers || nodes < 1 || nodes > replicas {
		return 0
	}
	t := m.find(typ)
	if t == nil {
		return 0
	}
	// GangSpeedup of the one share, without building it.
	k := (m.workers + replicas - 1) / replicas
	step := m.deviceSeconds(t, k, t.params.SyncSeconds(nodes, replicas))
	if !(step > 0) || math.IsInf(step, 0) {
		return 0
	}
	return float64(m.batch()) / step / m.base
}

// NodeBound implements NodeBounder: the node count from which no type's
// synchronisation time depends on nodes any more (0 if one's always does).
func (m *WorkerModel) NodeBound() int {
	b := 0
	for i := range m.types {
		nb := m.types[i].params.nodeBound()
		if nb == 0 {
			return 0
		}
		b = max(b, nb)
	}
	return b
}
