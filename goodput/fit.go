package goodput

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/optimize"
)

// Observation is one measured configuration: the mean times of a job's
// steps at one (nodes, replicas, per-GPU batch). A profile row with a step
// time and a sync time gives AccumSeconds = step − sync and
// OptimSeconds = step.
type Observation struct {
	// Nodes and Replicas: the shape the steps ran on (1 ≤ Nodes ≤ Replicas).
	Nodes    int `json:"nodes"`
	Replicas int `json:"replicas"`
	// Local is the per-GPU batch of one forward/backward pass (≥ 1).
	Local int `json:"local"`
	// AccumSeconds is the mean time of one forward/backward pass that does
	// not synchronise (an accumulation step), in seconds.
	AccumSeconds float64 `json:"accum_seconds"`
	// OptimSeconds is the mean time of one optimizer step, including its
	// forward/backward pass and gradient synchronisation, in seconds.
	OptimSeconds float64 `json:"optim_seconds"`
}

// accumSlack is how much longer than OptimSeconds a measured AccumSeconds
// may be: one-GPU steps have no sync, so noise alone can put the
// accumulation pass a few percent above the optimizer step.
const accumSlack = 1.1

// ObservationFromStep builds an Observation from a step time and the part
// of it spent synchronising, as Pollux's profiles record them.
func ObservationFromStep(nodes, replicas, local int, stepSeconds, syncSeconds float64) Observation {
	return Observation{Nodes: nodes, Replicas: replicas, Local: local,
		AccumSeconds: stepSeconds - syncSeconds, OptimSeconds: stepSeconds}
}

// Validate rejects impossible shapes, NaN, infinite, zero or negative
// times, and an accumulation step more than 10% longer than the optimizer
// step that contains one (more than measurement noise: swapped fields or a
// negative sync time).
func (o Observation) Validate() error {
	switch {
	case o.Nodes < 1:
		return fmt.Errorf("%w: Nodes = %d", ErrInvalidObservation, o.Nodes)
	case o.Replicas < o.Nodes:
		return fmt.Errorf("%w: Replicas = %d < Nodes = %d", ErrInvalidObservation, o.Replicas, o.Nodes)
	case o.Local < 1:
		return fmt.Errorf("%w: Local = %d", ErrInvalidObservation, o.Local)
	case !finite(o.AccumSeconds) || o.AccumSeconds <= 0:
		return fmt.Errorf("%w: AccumSeconds = %v", ErrInvalidObservation, o.AccumSeconds)
	case !finite(o.OptimSeconds) || o.OptimSeconds <= 0:
		return fmt.Errorf("%w: OptimSeconds = %v", ErrInvalidObservation, o.OptimSeconds)
	case o.AccumSeconds > accumSlack*o.OptimSeconds:
		return fmt.Errorf("%w: AccumSeconds = %v > OptimSeconds = %v (an optimizer step includes its forward/backward pass)", ErrInvalidObservation, o.AccumSeconds, o.OptimSeconds)
	}
	return nil
}

// FitOptions configure Fit. The zero value fits DefaultForm from one
// data-derived start.
type FitOptions struct {
	// Form is the sync model to fit; FormDefault means DefaultForm.
	Form Form
	// Init, if not nil, is an extra start tried first (a warm start from
	// the previous fit). Its Form is ignored.
	Init *Params
	// Starts is the number of starts: 0 or 1 is the data-derived start
	// only (closed-form estimates at the best of five overlaps γ, screened
	// by objective value); 2 adds Pollux's start (every α 0.1, every β
	// 0.01, γ 1.001); more add the other screened data-derived starts. The
	// best result is kept. At most MaxStarts: there are no more distinct
	// starts to try.
	Starts int
	// MaxIterations bounds the LBFGS iterations of each start; 0 means 200.
	MaxIterations int
	// GradientThreshold stops a start when the gradient norm (max norm,
	// in the log/logit coordinates of the reparametrised parameters;
	// for a parameter pulled away from its nearer bound, the raw
	// gradient over the parameter's natural scale: 1 for γ, 1% of a
	// pass for a coefficient) falls below it; 0 means 1e-5. A start also ends when the objective
	// improves by less than 1e-9 relative (plus 1e-12 absolute) in 3
	// iterations in a row.
	GradientThreshold float64
}

// MaxStarts is the largest FitOptions.Starts: the data-derived start,
// Pollux's start and the other screened data-derived starts (one per
// screened overlap γ but the best).
const MaxStarts = 1 + len(startGammas)

// Validate checks the options as Fit does: a known Form, Starts in
// 0..MaxStarts, MaxIterations ≥ 0, GradientThreshold finite and ≥ 0. It
// does not check Init (Fit validates it in the fitted form).
func (o FitOptions) Validate() error {
	if f := o.Form.resolve(); f != FormPollux && f != FormAllReduce {
		return fmt.Errorf("%w: Form %d", ErrInvalidOptions, int(o.Form))
	}
	if o.Starts < 0 || o.Starts > MaxStarts {
		return fmt.Errorf("%w: Starts = %d, want 0..%d (MaxStarts)", ErrInvalidOptions, o.Starts, MaxStarts)
	}
	if o.MaxIterations < 0 || o.GradientThreshold < 0 || math.IsNaN(o.GradientThreshold) || math.IsInf(o.GradientThreshold, 0) {
		return fmt.Errorf("%w: MaxIterations and GradientThreshold must be finite and ≥ 0", ErrInvalidOptions)
	}
	return nil
}

// FitStatus says how a fit ended.
type FitStatus int

const (
	// FitConverged: the gradient or the objective stopped changing.
	FitConverged FitStatus = iota
	// FitIterationLimit: MaxIterations was reached; the result is the best
	// point found.
	FitIterationLimit
	// FitLineSearchStopped: gonum's line search gave up (common at an
	// optimum); the result is kept and FitResult.GradNorm says how flat it is.
	FitLineSearchStopped
	// FitNoFreeParams: the priors pinned every parameter; nothing was optimised.
	FitNoFreeParams
)

// String names the status.
func (s FitStatus) String() string {
	switch s {
	case FitConverged:
		return "converged"
	case FitIterationLimit:
		return "iteration-limit"
	case FitLineSearchStopped:
		return "linesearch-stopped"
	case FitNoFreeParams:
		return "no-free-params"
	}
	return fmt.Sprintf("FitStatus(%d)", int(s))
}

// FitResult describes how Fit ended.
type FitResult struct {
	Status FitStatus
	// Loss is the objective at the returned parameters (after the priors
	// applied once the fit ends): RMSLE of pass times + RMSLE of
	// optimizer-step times + Pollux's regularisers (a ratio whose
	// denominator is 0, an unknown tree, counts 0).
	Loss float64
	// GradNorm is the Euclidean norm of the objective's gradient in the
	// reparametrised space at the result.
	GradNorm float64
	// Starts is how many starts were run; Evaluations counts objective
	// evaluations over all of them.
	Starts      int
	Evaluations int
	// Pinned lists the parameters the priors held fixed, by Params field name.
	Pinned []string
}

// parameter indices in the full vector.
const (
	iAlphaC = iota
	iBetaC
	iAlphaR
	iBetaR
	iAlphaN
	iBetaN
	iAlphaT
	iBetaT
	iDeltaT
	iGamma
	nParams
	nSync = iDeltaT - iAlphaR + 1
)

var paramNames = [nParams]string{"AlphaC", "BetaC", "AlphaR", "BetaR", "AlphaN", "BetaN", "AlphaT", "BetaT", "DeltaT", "Gamma"}

func toVec(p Params) [nParams]float64 {
	return [nParams]float64{p.AlphaC, p.BetaC, p.AlphaR, p.BetaR, p.AlphaN, p.BetaN, p.AlphaT, p.BetaT, p.DeltaT, p.Gamma}
}

func fromVec(v [nParams]float64, form Form) Params {
	return Params{Form: form, AlphaC: v[iAlphaC], BetaC: v[iBetaC], AlphaR: v[iAlphaR], BetaR: v[iBetaR],
		AlphaN: v[iAlphaN], BetaN: v[iBetaN], AlphaT: v[iAlphaT], BetaT: v[iBetaT], DeltaT: v[iDeltaT], Gamma: v[iGamma]}
}

// fitObs is an observation preprocessed for the objective: its per-GPU
// batch and shape are indices into the problem's distinct values, so each
// evaluation computes T_grad once per batch size and T_sync once per shape.
type fitObs struct {
	local, shape int
	logAccum     float64
	logOptim     float64
}

// fitShape is a distinct sync shape: T_sync = c + Σ coef[j]·θ[iAlphaR+j].
// key identifies it: {0, 0} for one replica, {1, K} within a node,
// {2, K} for the multi-node ring, {N, K} for the tree over N ≥ 3 nodes.
type fitShape struct {
	key  [2]int
	c    float64
	coef [nSync]float64
}

// shapeKey is fitShape.key for a shape.
func shapeKey(tree bool, nodes, replicas int) [2]int {
	switch {
	case replicas <= 1:
		return [2]int{}
	case nodes <= 1:
		return [2]int{1, replicas}
	case nodes > 2 && tree:
		return [2]int{nodes, replicas}
	}
	return [2]int{2, replicas}
}

// problem is the objective of one fit.
type problem struct {
	obs    []fitObs
	locals []float64  // distinct per-GPU batches
	shapes []fitShape // distinct sync shapes
	form   Form
	fixed  [nParams]float64 // values of pinned parameters
	ratios [][2]int         // penalised ratios θ[a]/θ[b]
	free   []int            // indices of free parameters, in order
	theta  [nParams]float64 // scratch
	// scale[j] preconditions free parameter j: the optimiser sees
	// u[j] = scale[j]·w[j], where w[j] is the log (or logit) of the
	// parameter, so that the objective's curvature is about 1 in every
	// direction at the start.
	scale []float64
	// natural is each parameter's natural scale, for the stopping rule
	// (see setNatural).
	natural [nParams]float64
	dtheta  [nParams]float64 // scratch: d loss / d θ
	evals   int

	// per-evaluation scratch, one entry per distinct batch / shape
	tg, ltg, accG, accR, pg []float64
	ts, lts, accS, ps       []float64

	// cache of the last evaluation: gonum asks for the value and the
	// gradient at the same point in separate calls.
	lastU    []float64
	lastLoss float64
	lastGrad []float64
	haveLast bool
}

// addObs preprocesses one observation.
func (pr *problem) addObs(tree bool, o Observation) {
	li := slices.Index(pr.locals, float64(o.Local))
	if li < 0 {
		li = len(pr.locals)
		pr.locals = append(pr.locals, float64(o.Local))
	}
	key := shapeKey(tree, o.Nodes, o.Replicas)
	si := slices.IndexFunc(pr.shapes, func(s fitShape) bool { return s.key == key })
	if si < 0 {
		c, coef := syncTerms(tree, o.Nodes, o.Replicas)
		si = len(pr.shapes)
		pr.shapes = append(pr.shapes, fitShape{key: key, c: c, coef: coef})
	}
	pr.obs = append(pr.obs, fitObs{local: li, shape: si,
		logAccum: math.Log(o.AccumSeconds), logOptim: math.Log(o.OptimSeconds)})
}

func (pr *problem) allocScratch() {
	nl, ns := len(pr.locals), len(pr.shapes)
	nf := len(pr.free)
	buf := make([]float64, 5*nl+4*ns+3*nf)
	pr.tg, pr.ltg, pr.accG, pr.accR, pr.pg = buf[:nl], buf[nl:2*nl], buf[2*nl:3*nl], buf[3*nl:4*nl], buf[4*nl:5*nl]
	buf = buf[5*nl:]
	pr.ts, pr.lts, pr.accS, pr.ps = buf[:ns], buf[ns:2*ns], buf[2*ns:3*ns], buf[3*ns:4*ns]
	buf = buf[4*ns:]
	pr.lastU, pr.lastGrad, pr.scale = buf[:nf], buf[nf:2*nf], buf[2*nf:3*nf]
	for j := range pr.scale {
		pr.scale[j] = 1
	}
}

// syncTerms returns T_sync's constant and its coefficient on each sync
// parameter (AlphaR, BetaR, AlphaN, BetaN, AlphaT, BetaT, DeltaT) for a
// shape; tree selects the tree term for 3 or more nodes (FormAllReduce).
func syncTerms(tree bool, nodes, replicas int) (c float64, coef [nSync]float64) {
	if replicas <= 1 {
		return MinCoef, coef
	}
	k := float64(replicas)
	switch {
	case nodes <= 1:
		coef[0], coef[1] = 1, math.Max(k-2, MinCoef)
	case nodes > 2 && tree:
		coef[4], coef[5], coef[6] = 1, math.Log2(k/2), k/float64(nodes)-1
	default:
		coef[2], coef[3] = 1, math.Max(k-2, MinCoef)
	}
	return 0, coef
}

// theta maps u (free, reparametrised) to the full parameter vector.
func (pr *problem) thetaOf(u []float64) {
	pr.theta = pr.fixed
	for j, i := range pr.free {
		w := u[j] / pr.scale[j]
		if i == iGamma {
			pr.theta[i] = MinGamma + (MaxGamma-MinGamma)*sigmoid(w)
		} else {
			pr.theta[i] = MinCoef + math.Exp(w)
		}
	}
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func logit(p float64) float64 { return math.Log(p / (1 - p)) }

// toU maps a full parameter vector to the free reparametrised vector,
// clamping into the open bounds.
func (pr *problem) toU(v [nParams]float64, u []float64) {
	for j, i := range pr.free {
		if i == iGamma {
			f := (v[i] - MinGamma) / (MaxGamma - MinGamma)
			f = math.Min(math.Max(f, 1e-6), 1-1e-6)
			u[j] = logit(f) * pr.scale[j]
		} else {
			u[j] = math.Log(math.Max(v[i]-MinCoef, 1e-12)) * pr.scale[j]
		}
	}
}

// value returns the objective at u, reusing the last evaluation when u
// has not changed.
func (pr *problem) value(u []float64) float64 {
	if !pr.haveLast || !slices.Equal(u, pr.lastU) {
		pr.lastLoss = pr.eval(u, pr.lastGrad)
		copy(pr.lastU, u)
		pr.haveLast = true
	}
	return pr.lastLoss
}

// gradient writes the objective's gradient at u into grad.
func (pr *problem) gradient(grad, u []float64) {
	pr.value(u)
	copy(grad, pr.lastGrad)
}

// eval returns the objective at u and, if grad is not nil, its gradient.
func (pr *problem) eval(u, grad []float64) float64 {
	pr.thetaOf(u)
	return pr.evalTheta(grad)
}

// evalTheta returns the objective at pr.theta and, if grad is not nil,
// its gradient with respect to the free reparametrised coordinates. A
// penalised ratio whose denominator is 0 (FormAllReduce's tree when it is
// unknown, AlphaT = 0) contributes nothing: the term does not exist.
func (pr *problem) evalTheta(grad []float64) float64 {
	pr.evals++
	th := &pr.theta
	gamma := th[iGamma]
	// T_grad and T_sync once per distinct batch and shape, with their
	// γ-powers relative to the largest log time ref: pg = (tg/e^ref)^γ,
	// ps = (ts/e^ref)^γ, all ≤ 1, so no overflow.
	ref := math.Inf(-1)
	for i, m := range pr.locals {
		t := th[iAlphaC] + th[iBetaC]*m
		l := math.Log(t)
		pr.tg[i], pr.ltg[i], pr.accG[i], pr.accR[i] = t, l, 0, 0
		ref = max(ref, l)
	}
	for i := range pr.shapes {
		sh := &pr.shapes[i]
		t := sh.c
		for j, c := range sh.coef {
			t += c * th[iAlphaR+j]
		}
		l := math.Log(t)
		pr.ts[i], pr.lts[i], pr.accS[i] = t, l, 0
		ref = max(ref, l)
	}
	for i, l := range pr.ltg {
		pr.pg[i] = math.Exp(gamma * (l - ref))
	}
	for i, l := range pr.lts {
		pr.ps[i] = math.Exp(gamma * (l - ref))
	}
	invGamma := 1 / gamma
	var s1, s2, dGamma float64
	for i := range pr.obs {
		o := &pr.obs[i]
		lg, ls := pr.ltg[o.local], pr.lts[o.shape]
		// lo = log((tg^γ + ts^γ)^(1/γ)); ws = ts^γ/(tg^γ + ts^γ), the
		// weight of T_sync in it.
		var lo, ws float64
		pg, ps := pr.pg[o.local], pr.ps[o.shape]
		if ps <= 0x1p-60*pg {
			// T_sync^γ below 1e-18 of T_grad^γ (one replica): invisible.
			lo = lg
		} else if sum := pg + ps; sum > 1e-290 {
			lo = ref + math.Log(sum)*invGamma
			ws = ps / sum
		} else {
			// both powers underflow far below ref: the log-sum-exp form.
			z := gamma * (ls - lg)
			if z <= 0 {
				e := math.Exp(z)
				lo, ws = lg+math.Log1p(e)/gamma, e/(1+e)
			} else {
				e := math.Exp(-z)
				lo, ws = ls+math.Log1p(e)/gamma, 1/(1+e)
			}
		}
		wg := 1 - ws
		r1 := lg - o.logAccum
		r2 := lo - o.logOptim
		s1 += r1 * r1
		s2 += r2 * r2
		if grad == nil {
			continue
		}
		pr.accR[o.local] += r1
		pr.accG[o.local] += r2 * wg
		pr.accS[o.shape] += r2 * ws
		dGamma += r2 * (wg*lg + ws*ls - lo) * invGamma
	}
	n := float64(len(pr.obs))
	e1, e2 := math.Sqrt(s1/n), math.Sqrt(s2/n)
	loss := e1 + e2 + 1e-3*(gamma-1)*(gamma-1)
	for _, rp := range pr.ratios {
		if th[rp[1]] == 0 {
			continue
		}
		r := th[rp[0]] / th[rp[1]]
		loss += 1e-2 * r * r
	}
	if grad == nil {
		return loss
	}
	dt := &pr.dtheta
	*dt = [nParams]float64{}
	if e1 > 0 {
		pr.addComputeGrad(pr.accR, 1/(n*e1))
	}
	if e2 > 0 {
		f := 1 / (n * e2)
		pr.addComputeGrad(pr.accG, f)
		for i := range pr.shapes {
			a := pr.accS[i] / pr.ts[i] * f
			for j, c := range pr.shapes[i].coef {
				dt[iAlphaR+j] += a * c
			}
		}
		dt[iGamma] += dGamma * f
	}
	dt[iGamma] += 2e-3 * (gamma - 1)
	for _, rp := range pr.ratios {
		if th[rp[1]] == 0 {
			continue
		}
		r := th[rp[0]] / th[rp[1]]
		dt[rp[0]] += 2e-2 * r / th[rp[1]]
		dt[rp[1]] -= 2e-2 * r * r / th[rp[1]]
	}
	for j, i := range pr.free {
		grad[j] = dt[i] * pr.dThetaDW(i) / pr.scale[j]
	}
	return loss
}

// addComputeGrad adds to dtheta the compute-time (AlphaC, BetaC) part of
// an error term's gradient: acc holds its residual sums per local batch,
// f its scale.
func (pr *problem) addComputeGrad(acc []float64, f float64) {
	for i, m := range pr.locals {
		a := acc[i] / pr.tg[i] * f
		pr.dtheta[iAlphaC] += a
		pr.dtheta[iBetaC] += a * m
	}
}

// Fit fits throughput parameters to observations by minimising Pollux's
// objective: the RMS log error of pass times (T_grad against
// AccumSeconds) plus that of optimizer-step times (T_optim against
// OptimSeconds) plus 1e-3·(γ−1)² plus 1e-2·((BetaN/AlphaN)² +
// (BetaR/AlphaR)²); FormAllReduce adds 1e-2·((BetaT/AlphaT)² +
// (DeltaT/AlphaT)²). It runs gonum's LBFGS with an analytic gradient over
// reparametrised parameters (coefficient = 1e-8 + exp(u), γ = 1 +
// 9·sigmoid(u)), so every coefficient stays ≥ 1e-8 and γ in [1, 10]; each
// u is scaled by the square root of the objective's Gauss-Newton
// curvature at the start (clamped to [0.1, 10]), which halves the
// evaluations without changing the optimum reached.
//
// Pollux's priors hold what the data cannot yet show, keeping the model
// optimistic about configurations the job has not run:
//   - one per-GPU batch size seen: AlphaC is fixed at mean(AccumSeconds)/2;
//   - no multi-node sample: AlphaN and BetaN stay at 1e-8 during the fit
//     and are then raised to at least 1.1× AlphaR and BetaR;
//   - no single-node multi-replica sample: AlphaR and BetaR stay at 1e-8;
//   - no sample with more than 2 replicas: BetaR and BetaN stay at 1e-8.
//
// FormAllReduce adds the same philosophy for its tree term: without a
// sample on 3 or more nodes the tree is unknown (AlphaT = BetaT = DeltaT =
// 0: the ring term applies everywhere); BetaT needs two replica counts
// there and DeltaT a sample with more than one replica per node, or they
// stay at 1e-8. Without a two-node sample the ring term is taken from the
// tree (AlphaN = AlphaT, BetaN = BetaT).
//
// An invalid observation is rejected with an error naming its index;
// nothing is fitted. Fit is safe for concurrent use.
func Fit(obs []Observation, opts FitOptions) (Params, FitResult, error) {
	var res FitResult
	if len(obs) == 0 {
		return Params{}, res, ErrNoObservations
	}
	if err := opts.Validate(); err != nil {
		return Params{}, res, fmt.Errorf("FitOptions: %w", err)
	}
	form := opts.Form.resolve()
	if opts.Init != nil {
		init := *opts.Init
		init.Form = form
		if err := init.Validate(); err != nil {
			return Params{}, res, fmt.Errorf("FitOptions.Init: %w", err)
		}
	}
	tree := form == FormAllReduce
	pr := &problem{form: form, obs: make([]fitObs, 0, len(obs)),
		locals: make([]float64, 0, min(len(obs), 32)), shapes: make([]fitShape, 0, min(len(obs), 64)),
		free: make([]int, 0, nParams)}
	res.Pinned = make([]string, 0, nParams)
	var (
		multiNode, ring2, intraMulti, over2 bool
		treeSeen, treeDense, treeTwoK       bool
		treeK                               = -1
		firstLocal                          = obs[0].Local
		singleLocal                         = true
		sumAccum                            float64
	)
	for i, o := range obs {
		if err := o.Validate(); err != nil {
			return Params{}, res, fmt.Errorf("observation %d: %w", i, err)
		}
		pr.addObs(tree, o)
		multiNode = multiNode || o.Nodes > 1
		ring2 = ring2 || o.Nodes == 2
		intraMulti = intraMulti || (o.Nodes == 1 && o.Replicas > 1)
		over2 = over2 || o.Replicas > 2
		if o.Nodes > 2 {
			treeSeen = true
			treeDense = treeDense || o.Replicas > o.Nodes
			if treeK >= 0 && treeK != o.Replicas {
				treeTwoK = true
			}
			treeK = o.Replicas
		}
		singleLocal = singleLocal && o.Local == firstLocal
		sumAccum += o.AccumSeconds
	}
	var pinned [nParams]bool
	for i := range nParams {
		pr.fixed[i] = MinCoef
	}
	pr.fixed[iGamma] = MinGamma
	if singleLocal {
		pinned[iAlphaC] = true
		pr.fixed[iAlphaC] = sumAccum / float64(len(obs)) / 2
	}
	if !multiNode {
		pinned[iAlphaN], pinned[iBetaN] = true, true
	}
	if !intraMulti {
		pinned[iAlphaR], pinned[iBetaR] = true, true
	}
	if !over2 {
		pinned[iBetaR], pinned[iBetaN] = true, true
	}
	pr.ratios = [][2]int{{iBetaN, iAlphaN}, {iBetaR, iAlphaR}}
	if tree {
		if treeSeen && !ring2 {
			pinned[iAlphaN], pinned[iBetaN] = true, true
		}
		if !treeSeen {
			pinned[iAlphaT], pinned[iBetaT], pinned[iDeltaT] = true, true, true
		}
		if !treeTwoK {
			pinned[iBetaT] = true
		}
		if !treeDense {
			pinned[iDeltaT] = true
		}
		pr.ratios = append(pr.ratios, [2]int{iBetaT, iAlphaT}, [2]int{iDeltaT, iAlphaT})
	} else {
		pinned[iAlphaT], pinned[iBetaT], pinned[iDeltaT] = true, true, true
		pr.fixed[iAlphaT], pr.fixed[iBetaT], pr.fixed[iDeltaT] = 0, 0, 0
	}
	for i := range nParams {
		if pinned[i] {
			res.Pinned = append(res.Pinned, paramNames[i])
		} else {
			pr.free = append(pr.free, i)
		}
	}

	if len(res.Pinned) == 0 {
		res.Pinned = nil // as before: nil when the priors pin nothing
	}
	pr.allocScratch()
	pr.setNatural()
	best := pr.fixed
	if len(pr.free) == 0 {
		res.Status = FitNoFreeParams
	} else {
		best, _ = pr.minimize(obs, opts, &res)
	}
	res.Evaluations = pr.evals
	if !multiNode {
		best[iAlphaN] = math.Max(best[iAlphaN], 1.1*best[iAlphaR])
		best[iBetaN] = math.Max(best[iBetaN], 1.1*best[iBetaR])
	}
	if tree {
		if !treeSeen {
			best[iAlphaT], best[iBetaT], best[iDeltaT] = 0, 0, 0
		} else if !ring2 {
			best[iAlphaN], best[iBetaN] = best[iAlphaT], best[iBetaT]
		}
	}
	// The loss of what is returned: after the priors above, which move
	// the regularised ratios of parameters the data did not constrain.
	pr.theta = best
	res.Loss = pr.evalTheta(nil)
	return fromVec(best, form), res, nil
}

// minimize runs LBFGS from every start and keeps the best finite result.
func (pr *problem) minimize(obs []Observation, opts FitOptions, res *FitResult) ([nParams]float64, float64) {
	starts := pr.starts(obs, opts)
	maxIter := opts.MaxIterations
	if maxIter == 0 {
		maxIter = 200
	}
	thr := opts.GradientThreshold
	if thr == 0 {
		thr = 1e-5
	}
	n := len(pr.free)
	u := make([]float64, n)
	g := make([]float64, n)
	conv := &fitConverger{pr: pr, thr: thr}
	best := starts[0]
	bestLoss := math.Inf(1)
	for _, s := range starts {
		pr.precondition(s)
		pr.haveLast = false
		pr.toU(s, u)
		res.Starts++
		var (
			status FitStatus
			loss   float64
		)
		// LBFGS's line search sometimes gives up far from an optimum;
		// restarting from where it stopped (fresh curvature memory) fixes
		// that. A restart counts as part of the same start.
		for try := 0; try < 3; try++ {
			st, err := pr.lbfgs(u, maxIter, conv)
			if !allFinite(u) {
				status, loss = FitLineSearchStopped, math.Inf(1)
				break
			}
			loss = pr.value(u)
			pr.unscale(g, pr.lastGrad)
			switch {
			case err != nil || st == optimize.Failure:
				status = FitLineSearchStopped
			case st == optimize.IterationLimit || st == optimize.FunctionEvaluationLimit:
				status = FitIterationLimit
			default:
				status = FitConverged
			}
			if status != FitLineSearchStopped || norm(g) <= 100*thr {
				break
			}
		}
		if !finite(loss) || loss >= bestLoss {
			continue
		}
		bestLoss = loss
		pr.thetaOf(u)
		best = pr.theta
		res.GradNorm = norm(g)
		res.Status = status
	}
	if !finite(bestLoss) {
		// No start produced a finite point: keep the first start, which is
		// finite by construction.
		pr.toU(best, u)
		bestLoss = pr.eval(u, nil)
		res.Status = FitLineSearchStopped
	}
	return best, bestLoss
}

// lbfgsStore is LBFGS's memory: twice the most free parameters, so a
// typical fit (20–40 iterations) keeps nearly its whole curvature history
// (on the six Pollux profiles: about 15% fewer evaluations than 10 pairs,
// same optima).
const lbfgsStore = 2 * nParams

// lbfgs runs gonum's LBFGS (lbfgsStore pairs, Moré–Thuente line search)
// from u and leaves the best point it reached in u. It drives the method
// synchronously, through the same optimize.LinesearchMethod (with the
// LBFGS as its NextDirectioner) that LBFGS.Run drives, following Run's
// protocol step for step: the start is evaluated and checked, announced
// as a major iteration, then each operation the method asks for is
// answered in turn. That gives the same iterates as optimize.Minimize or
// LBFGS.Run without their goroutine and channel hand-offs (two per
// evaluation, about a fifth of a fit's time). It stops on conv (gradient
// threshold or flat objective), after maxIter major iterations or
// 20·maxIter + 100 evaluations, or when the method ends itself (gonum's
// own gradient threshold, 1e-12 in max norm, or a line-search failure,
// reported as optimize.Failure with its error).
func (pr *problem) lbfgs(u []float64, maxIter int, conv *fitConverger) (optimize.Status, error) {
	// gonum's default gradient threshold for a method whose
	// GradStopThreshold is 0 (optimize's defaultGradientAbsTol).
	const gonumGradThreshold = 1e-12
	// Moré–Thuente's line search needs about 10% fewer evaluations than
	// gonum's default Bisection here, reaching the same optima.
	mt := &optimize.MoreThuente{}
	dir := &optimize.LBFGS{Store: lbfgsStore, Linesearcher: mt}
	ls := &optimize.LinesearchMethod{Linesearcher: mt, NextDirectioner: dir}
	conv.Init(len(u))
	loc := &optimize.Location{X: slices.Clone(u), Gradient: make([]float64, len(u))}
	var (
		bestF    = math.Inf(1)
		iters    int
		evals    = 1
		maxEvals = 20*maxIter + 100
	)
	// major records a major iteration at loc; it reports a status other
	// than NotTerminated when the run ends there.
	major := func() optimize.Status {
		if loc.F <= bestF {
			bestF = loc.F
			copy(u, loc.X)
		}
		iters++
		if s := conv.Converged(loc); s != optimize.NotTerminated {
			return s
		}
		if iters >= maxIter {
			return optimize.IterationLimit
		}
		return optimize.NotTerminated
	}
	// the start: value and gradient, checked as gonum checks them
	loc.F = pr.value(loc.X)
	pr.gradient(loc.Gradient, loc.X)
	if math.IsInf(loc.F, 1) || math.IsNaN(loc.F) {
		return optimize.Failure, optimize.ErrFunc(loc.F)
	}
	for i, g := range loc.Gradient {
		if math.IsInf(g, 0) || math.IsNaN(g) {
			return optimize.Failure, optimize.ErrGrad{Grad: g, Index: i}
		}
	}
	if floats.Norm(loc.Gradient, math.Inf(1)) < gonumGradThreshold {
		return optimize.GradientThreshold, nil
	}
	if s := major(); s != optimize.NotTerminated {
		return s, nil
	}
	op, err := ls.Init(loc)
	for {
		if err != nil {
			return optimize.Failure, err
		}
		switch {
		case op&(optimize.FuncEvaluation|optimize.GradEvaluation) != 0:
			if evals++; evals > maxEvals {
				// a line search that never ends (never seen; a guard)
				return optimize.FunctionEvaluationLimit, nil
			}
			if op&optimize.FuncEvaluation != 0 {
				loc.F = pr.value(loc.X)
				if !finite(loc.F) {
					// A trial step overflowed (a ratio regulariser of a
					// coefficient e^700 away). gonum's line search turns
					// that into NaN steps it never leaves: end the run at
					// the best point, which minimize restarts from.
					return optimize.Failure, optimize.ErrFunc(loc.F)
				}
			}
			if op&optimize.GradEvaluation != 0 {
				pr.gradient(loc.Gradient, loc.X)
			}
		case op == optimize.MajorIteration:
			if s := major(); s != optimize.NotTerminated {
				return s, nil
			}
			if floats.Norm(loc.Gradient, math.Inf(1)) < gonumGradThreshold {
				return optimize.GradientThreshold, nil
			}
		}
		op, err = ls.Iterate(loc)
	}
}

// unscale writes the gradient in the log/logit coordinates (the space
// GradientThreshold and FitResult.GradNorm refer to) from the optimiser's
// preconditioned gradient gu.
func (pr *problem) unscale(dst, gu []float64) {
	for j, g := range gu {
		dst[j] = g * pr.scale[j]
	}
}

// fitConverger ends a start when the gradient is below the threshold
// (max norm, as gonum's Settings.GradientThreshold), or when the objective
// has improved by less than 1e-9 relative (plus 1e-12 absolute) over
// fitFlatIterations iterations in a row. The gradient is measured in the
// log/logit coordinates, except for a parameter whose raw gradient pulls
// it away from its nearer bound: there the log/logit derivative shrinks
// with the distance to the bound (γ = 1.001 scales dL/dγ by 0.001), so the
// raw gradient is measured over the parameter's natural scale instead
// (pr.natural), and a start cannot end on a bound it is being pulled off.
type fitConverger struct {
	pr   *problem
	thr  float64
	best float64
	flat int
}

// fitFlatIterations is how many iterations in a row must be flat.
const fitFlatIterations = 3

// Init resets the converger for a new start.
func (c *fitConverger) Init(int) { c.best, c.flat = math.Inf(1), 0 }

// Converged implements optimize.Converger.
func (c *fitConverger) Converged(loc *optimize.Location) optimize.Status {
	if loc.Gradient != nil && c.pr.stationary(loc.X, loc.Gradient) < c.thr {
		return optimize.GradientThreshold
	}
	f := loc.F
	if c.best-f > 1e-9*math.Abs(f)+1e-12 {
		c.best, c.flat = f, 0
		return optimize.NotTerminated
	}
	c.best = math.Min(c.best, f)
	c.flat++
	if c.flat >= fitFlatIterations {
		return optimize.FunctionConvergence
	}
	return optimize.NotTerminated
}

// stationary is the stopping measure at u with the optimiser's gradient
// gu (see fitConverger): per free parameter, the gradient in its log/logit
// coordinate, or, where the raw gradient points away from the nearer
// bound, the raw gradient times max(the coordinate's derivative, the
// parameter's natural scale); the largest of them.
func (pr *problem) stationary(u, gu []float64) float64 {
	pr.thetaOf(u)
	var m float64
	for j, i := range pr.free {
		gw := gu[j] * pr.scale[j]
		d := pr.dThetaDW(i)
		v := math.Abs(gw)
		if d > 0 {
			raw := gw / d
			inward := raw < 0 // a coefficient's only bound is below
			if i == iGamma && pr.theta[i] > (MinGamma+MaxGamma)/2 {
				inward = raw > 0
			}
			if inward && d < pr.natural[i] {
				v = math.Abs(raw) * pr.natural[i]
			}
		}
		m = math.Max(m, v)
	}
	return m
}

// setNatural sets the natural scale of every parameter for stationary: 1
// for γ; for a time coefficient, 1% of the mean measured pass time divided
// by the coefficient's mean multiplier in the observations (1 for an α, the
// mean per-GPU batch for BetaC, the mean K−2, log₂(K/2) or K/N−1 of the
// shapes it applies to for a sync β), so the measure is the loss change
// per 1% of a pass.
func (pr *problem) setNatural() {
	var pass, n float64
	var mult, cnt [nParams]float64
	for _, o := range pr.obs {
		pass += math.Exp(o.logAccum)
		n++
		mult[iAlphaC]++
		cnt[iAlphaC]++
		mult[iBetaC] += pr.locals[o.local]
		cnt[iBetaC]++
		for j, c := range pr.shapes[o.shape].coef {
			if c != 0 {
				mult[iAlphaR+j] += c
				cnt[iAlphaR+j]++
			}
		}
	}
	for i := range nParams {
		m := 1.0
		if cnt[i] > 0 && mult[i] > 0 {
			m = mult[i] / cnt[i]
		}
		pr.natural[i] = 1e-2 * pass / math.Max(n, 1) / m
	}
	pr.natural[iGamma] = 1
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if !finite(x) {
			return false
		}
	}
	return true
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// startGammas are the overlaps the data-derived start is screened at.
var startGammas = [...]float64{1.001, 1.5, 2, 3, 5}

// starts returns the starting points: the warm start if any; the
// data-derived start (the best by objective value of dataStart at each of
// startGammas, which costs a few objective evaluations, no optimisation);
// then Pollux's start; then the other screened data starts, best first.
func (pr *problem) starts(obs []Observation, opts FitOptions) [][nParams]float64 {
	out := make([][nParams]float64, 0, 1+min(max(opts.Starts, 1), MaxStarts))
	clampFixed := func(v [nParams]float64) [nParams]float64 {
		for i := range nParams {
			if !pr.isFree(i) {
				v[i] = pr.fixed[i]
			}
		}
		return v
	}
	if opts.Init != nil {
		out = append(out, clampFixed(toVec(*opts.Init)))
	}
	type cand struct {
		v    [nParams]float64
		loss float64
	}
	cands := make([]cand, 0, len(startGammas))
	u := make([]float64, len(pr.free))
	sd := newStartData(pr, obs)
	for _, g := range startGammas {
		v := clampFixed(sd.dataStart(pr.form, g))
		pr.toU(v, u)
		loss := pr.eval(u, nil)
		if !finite(loss) {
			loss = math.Inf(1)
		}
		cands = append(cands, cand{v, loss})
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.loss, b.loss) })
	out = append(out, cands[0].v)
	for s := 1; s < max(opts.Starts, 1); s++ {
		if s == 1 {
			out = append(out, clampFixed([nParams]float64{0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 0.01, 1.001}))
		} else if s-1 < len(cands) {
			out = append(out, cands[s-1].v)
		}
	}
	return out
}

func (pr *problem) isFree(i int) bool {
	for _, j := range pr.free {
		if j == i {
			return true
		}
	}
	return false
}

// startData is what dataStart needs from the observations, computed once
// for all the overlaps screened: the compute line and, per multi-replica
// observation, its sync group, terms and log times.
type startData struct {
	alphaC, betaC, floor float64
	sync                 []startObs
}

type startObs struct {
	group        int
	coef         [nSync]float64
	optim, ratio float64 // OptimSeconds and AccumSeconds/OptimSeconds
}

// powGamma is x^γ for x in [0, 1], exact arithmetic for the overlaps
// startGammas screens (no math.Pow: the start is part of every fit).
func powGamma(x, gamma float64) float64 {
	switch gamma {
	case 1.5:
		return x * math.Sqrt(x)
	case 2:
		return x * x
	case 3:
		return x * x * x
	case 5:
		x2 := x * x
		return x2 * x2 * x
	}
	if x <= 0 {
		return 0
	}
	return math.Exp(gamma * math.Log(x))
}

// rootGamma is x^(1/γ) for x in [0, 1], as powGamma.
func rootGamma(x, gamma float64) float64 {
	switch gamma {
	case 1.5:
		c := math.Cbrt(x)
		return c * c
	case 2:
		return math.Sqrt(x)
	case 3:
		return math.Cbrt(x)
	}
	if x <= 0 {
		return 0
	}
	return math.Exp(math.Log(x) / gamma)
}

// newStartData fits pass time against per-GPU batch by least squares and
// collects the multi-replica observations' sync terms for form.
func newStartData(pr *problem, obs []Observation) startData {
	tree := pr.form == FormAllReduce
	var sd startData
	// compute: accum = αc + βc·m
	var sx, sy, sxx, sxy, n float64
	for _, o := range obs {
		x, y := float64(o.Local), o.AccumSeconds
		sx, sy, sxx, sxy, n = sx+x, sy+y, sxx+x*x, sxy+x*y, n+1
	}
	mx, my := sx/n, sy/n
	varx := sxx/n - mx*mx
	beta := 0.0
	if varx > 1e-12*mx*mx && varx > 0 {
		beta = (sxy/n - mx*my) / varx
	}
	if beta <= 0 {
		beta = 0.5 * my / math.Max(mx, 1)
	}
	alpha := my - beta*mx
	if alpha <= 0.05*my {
		alpha = 0.05 * my
	}
	sd.alphaC, sd.betaC, sd.floor = alpha, beta, 1e-3*my
	for i, o := range obs {
		if o.Replicas <= 1 {
			continue
		}
		_, coef := syncTerms(tree, o.Nodes, o.Replicas)
		gi := 1
		switch {
		case o.Nodes == 1:
			gi = 0
		case o.Nodes > 2 && tree:
			gi = 2
		}
		if sd.sync == nil {
			sd.sync = make([]startObs, 0, len(obs)-i)
		}
		sd.sync = append(sd.sync, startObs{group: gi, coef: coef,
			optim: o.OptimSeconds, ratio: o.AccumSeconds / o.OptimSeconds})
	}
	return sd
}

// dataStart estimates parameters directly from the data for overlap γ:
// the least-squares compute line, and the sync time each optimizer step
// implies, (optim^γ − pass^γ)^(1/γ), regressed on the form's terms.
func (sd *startData) dataStart(form Form, gamma float64) [nParams]float64 {
	tree := form == FormAllReduce
	var v [nParams]float64
	v[iAlphaC], v[iBetaC] = sd.alphaC, sd.betaC
	floor := sd.floor
	// sync: least squares on the shape's terms, per link kind (intra-node
	// ring, two-node ring, tree), via normal equations with a small ridge.
	groups := [3][]int{{0, 1}, {2, 3}, {4, 5, 6}}
	var ne [3][3][4]float64 // per group: [row][col | rhs]
	for i := range sd.sync {
		so := &sd.sync[i]
		// (optim^γ − accum^γ)^(1/γ) = optim·(1 − (accum/optim)^γ)^(1/γ),
		// from the cached logs: no math.Pow.
		y := 0.0
		if so.ratio < 1 {
			y = so.optim * rootGamma(1-powGamma(so.ratio, gamma), gamma)
		}
		y = math.Max(y, floor)
		idx := groups[so.group]
		a := &ne[so.group]
		for r, ii := range idx {
			for c, jj := range idx {
				a[r][c] += so.coef[ii] * so.coef[jj]
			}
			a[r][3] += so.coef[ii] * y
		}
	}
	var sol [3][3]float64
	for gi, idx := range groups {
		a := &ne[gi]
		m := len(idx)
		for i := range m {
			a[i][i] += 1e-9 + 1e-6*a[i][i]
		}
		for c := range m { // Gauss-Jordan; the ridge keeps pivots positive
			p := a[c][c]
			for j := c; j < m; j++ {
				a[c][j] /= p
			}
			a[c][3] /= p
			for r := range m {
				if r != c && a[r][c] != 0 {
					f := a[r][c]
					for j := c; j < m; j++ {
						a[r][j] -= f * a[c][j]
					}
					a[r][3] -= f * a[c][3]
				}
			}
		}
		for i := range m {
			sol[gi][i] = a[i][3]
		}
	}
	v[iAlphaR], v[iBetaR] = math.Max(sol[0][0], floor), math.Max(sol[0][1], 1e-3*floor)
	v[iAlphaN], v[iBetaN] = math.Max(sol[1][0], floor), math.Max(sol[1][1], 1e-3*floor)
	if tree {
		v[iAlphaT], v[iBetaT], v[iDeltaT] = math.Max(sol[2][0], floor), math.Max(sol[2][1], 1e-3*floor), math.Max(sol[2][2], 1e-3*floor)
	}
	v[iGamma] = gamma
	return v
}

// dThetaDW is dθ/dw for parameter i at pr.theta, where w is the log (or,
// for γ, the logit) coordinate.
func (pr *problem) dThetaDW(i int) float64 {
	th := pr.theta[i]
	if i == iGamma {
		return (th - MinGamma) * (MaxGamma - th) / (MaxGamma - MinGamma)
	}
	return th - MinCoef
}

// precondition sets pr.scale from the Gauss-Newton curvature of the
// objective at v: scale[j] is the square root of the Hessian's diagonal
// in the log/logit coordinate, so one unit of u moves the objective by
// about the same amount in every direction. Directions the data do not
// constrain keep scale 1. The scale is clamped to [0.1, 10]: a tighter
// clamp leaves the fit slow, a looser one lets LBFGS leap from the data
// start into distant, poorly conditioned basins (seen on deepspeech2 and
// imagenet with FormAllReduce, where they also extrapolate differently).
func (pr *problem) precondition(v [nParams]float64) {
	for j := range pr.scale {
		pr.scale[j] = 1
	}
	pr.theta = v
	th := &pr.theta
	gamma := th[iGamma]
	// T_grad and T_sync and their logs once per distinct batch and shape
	// (eval's scratch: eval recomputes it).
	for i, m := range pr.locals {
		t := th[iAlphaC] + th[iBetaC]*m
		pr.tg[i], pr.ltg[i] = t, math.Log(t)
	}
	for i := range pr.shapes {
		sh := &pr.shapes[i]
		t := sh.c
		for j, c := range sh.coef {
			t += c * th[iAlphaR+j]
		}
		pr.ts[i], pr.lts[i] = t, math.Log(t)
	}
	var d1, d2 [nParams]float64
	var s1, s2 float64
	for _, o := range pr.obs {
		m := pr.locals[o.local]
		sh := &pr.shapes[o.shape]
		tg, ts := pr.tg[o.local], pr.ts[o.shape]
		lg, ls := pr.ltg[o.local], pr.lts[o.shape]
		// lo and ws as in eval, in the log-sum-exp form.
		z := gamma * (ls - lg)
		var lo, ws float64
		switch {
		case z < -41: // T_sync^γ below 1e-18 of T_grad^γ
			lo = lg
		case z <= 0:
			e := math.Exp(z)
			lo, ws = lg+math.Log1p(e)/gamma, e/(1+e)
		default:
			e := math.Exp(-z)
			lo, ws = ls+math.Log1p(e)/gamma, 1/(1+e)
		}
		wg := 1 - ws
		r1, r2 := lg-o.logAccum, lo-o.logOptim
		s1 += r1 * r1
		s2 += r2 * r2
		d1[iAlphaC] += 1 / (tg * tg)
		d1[iBetaC] += m * m / (tg * tg)
		d2[iAlphaC] += wg * wg / (tg * tg)
		d2[iBetaC] += wg * wg * m * m / (tg * tg)
		for j, c := range sh.coef {
			if c != 0 {
				a := ws * c / ts
				d2[iAlphaR+j] += a * a
			}
		}
		dg := (wg*lg + ws*ls - lo) / gamma
		d2[iGamma] += dg * dg
	}
	n := float64(len(pr.obs))
	e1, e2 := math.Sqrt(s1/n), math.Sqrt(s2/n)
	var h [nParams]float64
	for i := range nParams {
		if e1 > 0 {
			h[i] += d1[i] / (n * e1)
		}
		if e2 > 0 {
			h[i] += d2[i] / (n * e2)
		}
	}
	h[iGamma] += 2e-3
	for _, rp := range pr.ratios {
		b := th[rp[1]]
		h[rp[0]] += 2e-2 / (b * b)
	}
	for j, i := range pr.free {
		d := pr.dThetaDW(i)
		c := h[i] * d * d
		if finite(c) && c > 1e-12 {
			pr.scale[j] = math.Min(math.Max(math.Sqrt(c), 0.1), 10)
		}
	}
}
