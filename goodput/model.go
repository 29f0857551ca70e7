package goodput

import (
	"fmt"
	"math"
)

// Candidates is the number of geometrically spaced total batch sizes that
// Optimize tries, as in Pollux.
const Candidates = 50

// Model is a job's goodput model on one accelerator type: its throughput
// parameters, its latest gradient statistics and its batch-size limits.
// A Model is a plain value, safe for concurrent use by readers.
type Model struct {
	Params
	Grad GradStats `json:"grad"`
	Limits
}

// Validate checks the parameters, gradient statistics and limits.
func (m Model) Validate() error {
	if err := m.Params.Validate(); err != nil {
		return err
	}
	if err := m.Grad.Validate(); err != nil {
		return err
	}
	return m.Limits.Validate()
}

// Efficiency is the statistical efficiency of total batch size batch
// relative to InitBatch: (φ+M0)/(φ+M) with φ the gradient noise scale,
// computed as Pollux does (gain/scale). It applies to every job, as in
// AdaptDL: a job that does not adapt its batch still pays for the samples
// its per-GPU rounding adds (InitBatch 128 on 48 GPUs runs 3 per GPU, 144
// in all). It is 1 at InitBatch and when no gradient statistics are known.
func (m Model) Efficiency(batch int) float64 {
	return m.efficiencyFunc().at(batch)
}

// Throughput is the predicted training throughput in samples per second
// with replicas replicas over nodes nodes, per-GPU batch local and accum
// accumulation steps. It is 0 for impossible shapes.
func (m Model) Throughput(nodes, replicas, local, accum int) float64 {
	if nodes < 1 || replicas < nodes || local < 1 || accum < 0 {
		return 0
	}
	t := m.StepSeconds(nodes, replicas, local, accum)
	if !(t > 0) || math.IsInf(t, 0) {
		return 0
	}
	return float64(replicas*local*(accum+1)) / t
}

// Goodput is Throughput × Efficiency of the resulting total batch.
func (m Model) Goodput(nodes, replicas, local, accum int) float64 {
	return m.Throughput(nodes, replicas, local, accum) * m.Efficiency(replicas*local*(accum+1))
}

// Optimize chooses the total batch size, per-GPU batch and accumulation
// steps with the best goodput on replicas replicas over nodes nodes, as
// AdaptDL does: Candidates total batch sizes spaced geometrically from
// max(InitBatch, MinLocal·replicas) to MaxBatch; for each, the per-GPU
// batch local = M/replicas is split into passes of at most MaxLocal when
// Accumulation is on (and into at least two passes on a single replica
// whose local batch exceeds InitBatch, so gradient statistics stay
// measurable); a single replica without accumulation trains at InitBatch.
// The per-GPU batch is rounded up; for a job that adapts its batch it is
// then rounded down where needed so that the total never exceeds MaxBatch
// (a real limit of the job). A job that does not adapt trains at
// InitBatch split over the replicas and rounded up per GPU, as AdaptDL's
// data loader runs it (ceil(InitBatch/replicas) each, so its total may
// exceed InitBatch; Efficiency charges for that). A per-GPU batch outside
// [MinLocal, MaxLocal] is clamped to the nearer bound, as AdaptDL clamps
// it; a candidate whose total then falls below InitBatch (or, adapting,
// above MaxBatch) is infeasible. With accumulation, bound candidates of
// MaxLocal per pass are added where the grid's accumulation count rises,
// for the previous count and for one pass fewer than the new one (the
// largest batches with those counts, which geometric spacing steps
// over). Ties keep the smaller batch. It returns
// the zero BatchPlan when no candidate is feasible. Optimize does not
// allocate.
func (m Model) Optimize(nodes, replicas int) BatchPlan {
	var best BatchPlan
	if nodes < 1 || replicas < nodes || m.InitBatch < 1 {
		return best
	}
	k := float64(replicas)
	m0 := m.InitBatch
	minLocal, maxLocal := m.minLocal(), m.maxLocal()
	if minLocal > maxLocal {
		return best // a MinLocal above the default MaxLocal: no per-GPU batch fits
	}
	adaptive := m.Adaptive()
	lo := float64(max(m0, minLocal*replicas))
	hi := float64(m.maxBatch())
	maxTotal := m.maxBatch()
	n := Candidates
	if !adaptive {
		lo, hi, n = float64(m0), float64(m0), 1
	} else if lo > hi {
		return best
	}
	ratio := 1.0
	if n > 1 && hi > lo {
		ratio = math.Pow(hi/lo, 1/float64(n-1))
	}
	ts := m.SyncSeconds(nodes, replicas)
	ov := newOverlap(m.Gamma, ts)
	eff := m.efficiencyFunc()
	const eps = 1e-8
	// Pass 1: the distinct feasible candidates and an upper bound on each
	// one's goodput, from T_optim ≥ max(T_grad, T_sync) and, by the power
	// mean inequality, T_optim ≥ 2^(1/γ−1)·(T_grad + T_sync). No
	// transcendental functions per candidate, and one division: the
	// efficiency is taken as effNum/(effA + effB·M), its value rearranged,
	// and the bound widened by boundSlack, far more than the rounding
	// errors of either form, so that it stays an upper bound of the goodput
	// pass 2 computes.
	pm := math.Exp2(1/m.Gamma - 1)
	effNum, effA, effB := 1.0, 1.0, 0.0
	if !eff.one {
		effNum, effA, effB = (eff.vr+eff.sqr)*eff.m0, eff.vr*eff.m0, eff.sqr
	}
	const boundSlack = 1 + 1e-12
	type candidate struct {
		local, accum int
		ub           float64
	}
	// At most Candidates from the grid and two bound candidates where the
	// grid's accumulation count rises.
	var cands [3 * Candidates]candidate
	nc, top := 0, -1
	prevLocal, prevAccum := -1, -1
	add := func(atomic, accum int) {
		if adaptive {
			// Rounding up must not push the total past MaxBatch (Pollux's
			// simulator clamps the same way).
			atomic = min(atomic, maxTotal/(replicas*(accum+1)))
		}
		atomic = min(max(atomic, minLocal), maxLocal)
		if atomic == prevLocal && accum == prevAccum {
			return
		}
		prevLocal, prevAccum = atomic, accum
		total := replicas * atomic * (accum + 1)
		if total < m0 || (adaptive && total > maxTotal) {
			return
		}
		tg := m.GradSeconds(atomic)
		ub := float64(total) * effNum * boundSlack / ((effA + effB*float64(total)) * (float64(accum)*tg + max(tg, ts, pm*(tg+ts))))
		cands[nc] = candidate{atomic, accum, ub}
		if top < 0 || ub > cands[top].ub {
			top = nc
		}
		nc++
	}
	batch := lo
	for i := range n {
		if i == n-1 {
			batch = hi
		} else if i > 0 {
			batch *= ratio
		}
		local := batch / k
		accum := 0
		var atomic int
		switch {
		case m.Accumulation:
			accum = int(math.Ceil(local/float64(maxLocal)-eps)) - 1
			if replicas == 1 && local > float64(m0)+eps {
				accum = max(accum, 1)
			}
			accum = max(accum, 0)
			atomic = int(math.Ceil(local/float64(accum+1) - eps))
			if prevAccum >= 0 && accum > prevAccum {
				// The bound candidates: the largest batches with the
				// previous accumulation count and with one pass fewer
				// than this one, MaxLocal per pass, which the grid steps
				// over (the second also where MaxBatch leaves less than
				// MinLocal per pass at this count). One replica trains
				// above InitBatch only with accumulation.
				b := maxLocal
				if replicas == 1 && prevAccum == 0 {
					b = min(b, m0)
				}
				add(b, prevAccum)
				if accum-1 > prevAccum {
					add(maxLocal, accum-1)
				}
			}
		case replicas == 1:
			atomic = m0
		default:
			atomic = int(math.Ceil(local - eps))
		}
		add(atomic, accum)
	}
	if nc == 0 {
		return best
	}
	// Pass 2: evaluate the most promising candidate exactly, then only
	// those whose bound beats the best so far. Ties keep the earlier
	// (smaller) candidate, as a plain argmax in order would.
	bestIdx := -1
	eval := func(i int) {
		c := cands[i]
		tg := m.GradSeconds(c.local)
		total := replicas * c.local * (c.accum + 1)
		g := float64(total) / (float64(c.accum)*tg + ov.optim(tg)) * eff.at(total)
		if g > best.Goodput || (g == best.Goodput && g > 0 && i < bestIdx) {
			best = BatchPlan{Batch: total, Local: c.local, Accum: c.accum, Goodput: g}
			bestIdx = i
		}
	}
	eval(top)
	for i := range nc {
		if i != top && cands[i].ub >= best.Goodput {
			eval(i)
		}
	}
	return best
}

// Switch reports whether a job now running with plan cur should adopt
// plan next: only when next's goodput beats cur's by more than
// SwitchThreshold (Pollux's 5% hysteresis), or when cur is infeasible.
func Switch(cur, next BatchPlan) bool {
	if !(cur.Goodput > 0) {
		return next.Goodput > 0
	}
	return next.Goodput > SwitchThreshold*cur.Goodput
}

// SwitchThreshold is the goodput ratio above which a new batch plan is
// adopted (Pollux's _speedup_threshold).
const SwitchThreshold = 1.05

// String formats the plan for logs.
func (b BatchPlan) String() string {
	return fmt.Sprintf("batch %d = local %d × (accum %d + 1) × replicas, goodput %.4g/s", b.Batch, b.Local, b.Accum, b.Goodput)
}

// overlap evaluates (tg^γ + ts^γ)^(1/γ) for a fixed ts and γ with exp/log
// instead of two math.Pow calls: tg·exp(log1p(exp(γ·(ln ts − ln tg)))/γ).
type overlap struct {
	gamma, invGamma, logTs, ts float64
	sum                        bool // γ = 1: plain sum
}

func newOverlap(gamma, ts float64) overlap {
	return overlap{gamma: gamma, invGamma: 1 / gamma, logTs: math.Log(ts), ts: ts, sum: gamma == 1}
}

func (o overlap) optim(tg float64) float64 {
	if o.sum {
		return tg + o.ts
	}
	z := o.gamma * (o.logTs - math.Log(tg))
	switch {
	case z < -40: // (ts/tg)^γ < 4e-18: no visible sync
		return tg
	case z > 40: // sync dominates
		return o.ts * math.Exp(math.Log1p(math.Exp(-z))*o.invGamma)
	}
	return tg * math.Exp(math.Log1p(math.Exp(z))*o.invGamma)
}

// efficiency computes Efficiency with its per-model constants hoisted
// (Optimize evaluates it once per candidate).
type efficiency struct {
	one     bool
	m0      float64
	sqr, vr float64
}

func (m Model) efficiencyFunc() efficiency {
	e := efficiency{m0: float64(m.InitBatch), sqr: m.Grad.Sqr, vr: m.Grad.Var}
	e.one = m.InitBatch <= 0 || (e.sqr <= 0 && e.vr <= 0)
	return e
}

func (e efficiency) at(batch int) float64 {
	if e.one || batch <= 0 {
		return 1
	}
	scale := float64(batch) / e.m0
	den := e.vr/scale + e.sqr
	if den <= 0 {
		return 1 / scale
	}
	return (e.vr + e.sqr) / den / scale
}
