package goodput

import (
	"fmt"
	"math"
)

// Form selects the synchronisation-time model of Params.
type Form int

const (
	// FormDefault is the zero value: it selects the package's default
	// form, DefaultForm.
	FormDefault Form = iota
	// FormPollux is Pollux's model exactly: T_sync is 0 for one replica,
	// AlphaR + BetaR·(K−2) when all K replicas share one node and
	// AlphaN + BetaN·(K−2) when they span several nodes.
	FormPollux
	// FormAllReduce models the two all-reduce algorithms NCCL chooses
	// between. Within one node and across two nodes replicas form a flat
	// ring, whose latency grows linearly in K: Pollux's intra-node term
	// AlphaR + BetaR·(K−2) and inter-node term AlphaN + BetaN·(K−2). Across
	// N ≥ 3 nodes the all-reduce runs as a tree (reduce within each node,
	// a tree between nodes, broadcast back), whose depth grows with
	// log₂ K and whose intra-node chain grows with the g = K/N replicas per
	// node:
	//
	//	AlphaT + BetaT·log₂(K/2) + DeltaT·(g−1)
	//
	// Until the job has run on 3 or more nodes (AlphaT = 0), the ring term
	// applies to every multi-node shape, so the form equals FormPollux.
	FormAllReduce
)

// DefaultForm is the form FormDefault resolves to: FormAllReduce, the form
// that generalises better to shapes a job has not run on (TestFormStudy).
// Fitted on each model's placements and evaluated on the scalability
// shapes the placements never ran, it has the lower median step-time error
// on 10 of the 12 (model, type) cells where the two forms differ, and a
// median of medians of 6.2% against 8.5%:
//   - t4 (Pollux's data; 1–4 nodes fitted, 6–16 evaluated): bert 5.0% vs
//     6.7%, deepspeech2 7.9% vs 16.1%, imagenet 6.2% vs 6.8%, ncf 8.1% vs
//     8.9%, yolov3 5.8% vs 21.1%; not cifar10 (6.3% vs 6.2%);
//   - rtx (Sia's RTX 2080 Ti profiles, three-node rows up to 12 GPUs added
//     to the fit, 14–24 GPUs evaluated): bert 3.3% vs 18.6%, cifar10 7.9%
//     vs 11.6%, deepspeech2 2.7% vs 19.9%, imagenet 3.0% vs 10.7%, ncf 5.1%
//     vs 7.7%; not yolov3 (13.9% vs 13.1%).
//
// On Sia's own placements (dgx-ext and rtx run on at most two nodes) the
// two forms are the same model: without three-node data FormAllReduce has
// no tree and is FormPollux exactly, so the default changes nothing until a
// job has run on three or more nodes.
const DefaultForm = FormAllReduce

// String returns "pollux", "allreduce" or "default".
func (f Form) String() string {
	switch f {
	case FormDefault:
		return "default"
	case FormPollux:
		return "pollux"
	case FormAllReduce:
		return "allreduce"
	}
	return fmt.Sprintf("Form(%d)", int(f))
}

// ParseForm maps "pollux", "allreduce" and "default" (or "") to a Form.
func ParseForm(s string) (Form, error) {
	switch s {
	case "", "default":
		return FormDefault, nil
	case "pollux":
		return FormPollux, nil
	case "allreduce", "all-reduce":
		return FormAllReduce, nil
	}
	return 0, fmt.Errorf("%w: unknown form %q", ErrInvalidOptions, s)
}

// resolve maps FormDefault to DefaultForm.
func (f Form) resolve() Form {
	if f == FormDefault {
		return DefaultForm
	}
	return f
}

// Bounds of the throughput parameters, as in Pollux: every time
// coefficient is at least MinCoef seconds; Gamma lies in [1, 10].
const (
	MinCoef  = 1e-8
	MinGamma = 1.0
	MaxGamma = 10.0
)

// Params are the throughput parameters of one job on one accelerator
// type. Times are in seconds; the batch-proportional coefficients are in
// seconds per sample. The zero value is not valid: use Fit, or fill every
// coefficient (≥ MinCoef) and Gamma in [1, 10].
//
// The step time of an allocation of K replicas over N nodes with per-GPU
// batch m and s accumulation steps is
//
//	T_grad = AlphaC + BetaC·m
//	T_iter = s·T_grad + (T_grad^γ + T_sync^γ)^(1/γ)
//
// with T_sync given by Form (see FormPollux and FormAllReduce).
type Params struct {
	// Form selects the sync model; FormDefault means DefaultForm.
	Form Form `json:"form"`
	// AlphaC and BetaC: compute time of one forward/backward pass,
	// AlphaC + BetaC·m seconds.
	AlphaC float64 `json:"alpha_c"`
	BetaC  float64 `json:"beta_c"`
	// AlphaR and BetaR: sync time when all replicas share one node,
	// AlphaR + BetaR·(K−2).
	AlphaR float64 `json:"alpha_r"`
	BetaR  float64 `json:"beta_r"`
	// AlphaN and BetaN: sync time across nodes. FormPollux:
	// AlphaN + BetaN·(K−2); FormAllReduce: see FormAllReduce.
	AlphaN float64 `json:"alpha_n"`
	BetaN  float64 `json:"beta_n"`
	// AlphaT, BetaT and DeltaT: FormAllReduce's tree sync time across
	// three or more nodes, AlphaT + BetaT·log₂(K/2) + DeltaT·(K/N − 1).
	// AlphaT = 0 means the tree is unknown and the ring term applies.
	// All three are 0 in FormPollux.
	AlphaT float64 `json:"alpha_t,omitempty"`
	BetaT  float64 `json:"beta_t,omitempty"`
	DeltaT float64 `json:"delta_t,omitempty"`
	// Gamma is the compute/communication overlap exponent in [1, 10]:
	// 1 is no overlap, 10 is nearly max(T_grad, T_sync).
	Gamma float64 `json:"gamma"`
}

// Validate reports whether p can be used for predictions.
func (p Params) Validate() error {
	form := p.Form.resolve()
	if form != FormPollux && form != FormAllReduce {
		return fmt.Errorf("%w: Form %d", ErrInvalidParams, int(p.Form))
	}
	coefs := [...]struct {
		name string
		v    float64
	}{{"AlphaC", p.AlphaC}, {"BetaC", p.BetaC}, {"AlphaR", p.AlphaR}, {"BetaR", p.BetaR}, {"AlphaN", p.AlphaN}, {"BetaN", p.BetaN}}
	for _, c := range coefs {
		if !finite(c.v) || c.v < 0 {
			return fmt.Errorf("%w: %s = %v", ErrInvalidParams, c.name, c.v)
		}
	}
	tree := [...]struct {
		name string
		v    float64
	}{{"AlphaT", p.AlphaT}, {"BetaT", p.BetaT}, {"DeltaT", p.DeltaT}}
	for _, c := range tree {
		if !finite(c.v) || c.v < 0 {
			return fmt.Errorf("%w: %s = %v", ErrInvalidParams, c.name, c.v)
		}
	}
	if p.AlphaC+p.BetaC <= 0 {
		return fmt.Errorf("%w: AlphaC + BetaC must be positive", ErrInvalidParams)
	}
	if !(p.Gamma >= MinGamma && p.Gamma <= MaxGamma) {
		return fmt.Errorf("%w: Gamma = %v, want [1, 10]", ErrInvalidParams, p.Gamma)
	}
	return nil
}

// SyncSeconds is T_sync for K = replicas over nodes nodes: 0 for a single
// replica (Pollux uses 1e-8), otherwise per p.Form. It does not validate.
func (p Params) SyncSeconds(nodes, replicas int) float64 {
	if replicas <= 1 {
		return MinCoef
	}
	k := float64(replicas)
	if nodes <= 1 {
		return p.AlphaR + p.BetaR*math.Max(k-2, MinCoef)
	}
	if nodes > 2 && p.AlphaT > 0 && p.Form.resolve() == FormAllReduce {
		return p.AlphaT + p.BetaT*math.Log2(k/2) + p.DeltaT*(k/float64(nodes)-1)
	}
	return p.AlphaN + p.BetaN*math.Max(k-2, MinCoef)
}

// nodeBound is the node count from which SyncSeconds, and so every
// goodput, no longer depends on the node count: 2, or 0 when the tree
// term of FormAllReduce makes it depend on every node count.
func (p Params) nodeBound() int {
	if p.AlphaT > 0 && p.Form.resolve() == FormAllReduce {
		return 0
	}
	return 2
}

// GradSeconds is T_grad, the time of one forward/backward pass with
// per-GPU batch local.
func (p Params) GradSeconds(local int) float64 {
	return p.AlphaC + p.BetaC*float64(local)
}

// StepSeconds is T_iter: the time of one optimizer step (including accum
// accumulation passes) on replicas replicas over nodes nodes with per-GPU
// batch local. It does not validate; invalid shapes give NaN or garbage.
func (p Params) StepSeconds(nodes, replicas, local, accum int) float64 {
	tg := p.GradSeconds(local)
	return float64(accum)*tg + p.optimSeconds(tg, p.SyncSeconds(nodes, replicas))
}

// optimSeconds is (tg^γ + ts^γ)^(1/γ), computed without overflow.
func (p Params) optimSeconds(tg, ts float64) float64 {
	g := p.Gamma
	if g == 1 {
		return tg + ts
	}
	hi, lo := tg, ts
	if lo > hi {
		hi, lo = lo, hi
	}
	if hi <= 0 {
		return 0
	}
	r := lo / hi
	return hi * math.Pow(1+math.Pow(r, g), 1/g)
}

// scaled returns p with every time coefficient multiplied by f (f > 0):
// the same scaling behaviour on a device f times slower.
func (p Params) scaled(f float64) Params {
	p.AlphaC *= f
	p.BetaC *= f
	p.AlphaR *= f
	p.BetaR *= f
	return p.syncScaled(f)
}

// syncScaled returns p with the multi-node sync coefficients (AlphaN,
// BetaN and the tree's AlphaT, BetaT, DeltaT) multiplied by f.
func (p Params) syncScaled(f float64) Params {
	p.AlphaN *= f
	p.BetaN *= f
	p.AlphaT *= f
	p.BetaT *= f
	p.DeltaT *= f
	return p
}

// GradStats are the gradient statistics at the initial batch size M0:
// Sqr estimates |g|² and Var estimates tr(Σ) (Pollux's GradParams). The
// gradient noise scale is φ = M0·Var/Sqr. The zero value means "not yet
// measured" and gives perfect statistical efficiency, as Pollux assumes.
type GradStats struct {
	Sqr float64 `json:"sqr"`
	Var float64 `json:"var"`
}

// Validate reports NaN, infinite or negative statistics.
func (g GradStats) Validate() error {
	if !finite(g.Sqr) || g.Sqr < 0 {
		return fmt.Errorf("%w: Sqr = %v", ErrInvalidGrad, g.Sqr)
	}
	if !finite(g.Var) || g.Var < 0 {
		return fmt.Errorf("%w: Var = %v", ErrInvalidGrad, g.Var)
	}
	return nil
}

// NoiseScale is φ = m0·Var/Sqr, +Inf when Sqr is 0 (pure noise: every
// batch size is equally efficient).
func (g GradStats) NoiseScale(m0 int) float64 {
	if g.Sqr <= 0 {
		return math.Inf(1)
	}
	return float64(m0) * g.Var / g.Sqr
}

// Limits are the job's batch-size bounds, as the user declares them to an
// adaptive data loader.
type Limits struct {
	// InitBatch is M0, the total batch size the job was tuned for (≥ 1).
	InitBatch int `json:"init_batch"`
	// MaxBatch is the largest total batch size. 0 or ≤ InitBatch means
	// the job does not adapt its batch size: it trains at InitBatch split
	// over its replicas, ceil(InitBatch/replicas) per GPU, as AdaptDL's
	// data loader runs it.
	MaxBatch int `json:"max_batch,omitempty"`
	// MinLocal and MaxLocal bound the per-GPU batch of one pass.
	// 0 means 1 and max(MaxBatch, InitBatch) respectively.
	MinLocal int `json:"min_local,omitempty"`
	MaxLocal int `json:"max_local,omitempty"`
	// Accumulation allows gradient accumulation: several passes per
	// optimizer step when the per-GPU batch exceeds MaxLocal.
	Accumulation bool `json:"accumulation,omitempty"`
}

// Validate reports inconsistent limits.
func (l Limits) Validate() error {
	switch {
	case l.InitBatch < 1:
		return fmt.Errorf("%w: InitBatch = %d, want ≥ 1", ErrInvalidLimits, l.InitBatch)
	case l.MaxBatch < 0:
		return fmt.Errorf("%w: MaxBatch = %d", ErrInvalidLimits, l.MaxBatch)
	case l.MinLocal < 0:
		return fmt.Errorf("%w: MinLocal = %d", ErrInvalidLimits, l.MinLocal)
	case l.MaxLocal < 0:
		return fmt.Errorf("%w: MaxLocal = %d", ErrInvalidLimits, l.MaxLocal)
	case l.MaxLocal > 0 && l.MaxLocal < l.minLocal():
		return fmt.Errorf("%w: MaxLocal = %d < MinLocal = %d", ErrInvalidLimits, l.MaxLocal, l.minLocal())
	}
	return nil
}

// Adaptive reports whether the job may change its total batch size.
func (l Limits) Adaptive() bool { return l.MaxBatch > l.InitBatch }

func (l Limits) maxBatch() int { return max(l.MaxBatch, l.InitBatch) }
func (l Limits) minLocal() int { return max(l.MinLocal, 1) }
func (l Limits) maxLocal() int {
	if l.MaxLocal > 0 {
		return l.MaxLocal
	}
	return l.maxBatch()
}

// MaxUsefulReplicas is the most replicas that can each get at least
// MinLocal samples of the largest batch: max(MaxBatch, InitBatch)/MinLocal,
// the bound AdaptDL's allocator applies. A job that does not adapt its
// batch and sets no MinLocal above 1 has no such bound (math.MaxInt): it
// runs ceil(InitBatch/replicas) ≥ 1 samples per GPU on any count.
func (l Limits) MaxUsefulReplicas() int {
	if !l.Adaptive() && l.MinLocal <= 1 {
		return math.MaxInt
	}
	return max(l.maxBatch()/l.minLocal(), 1)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
