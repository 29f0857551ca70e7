package gavel

import (
	"context"
	"math"
	"slices"
)

// engine solves one structured LP by column generation over device prices:
//
//	maximise  θ·[useTheta] + Σ_m Σ_j v[m][j]·x[m][j]
//	s.t.      Σ_j a[m][j]·x[m][j] ≥ F[m] + θ·D[m]      (demand of job m)
//	          Σ_j x[m][j] ≤ 1,  x ≥ 0                    (time of job m)
//	          Σ_m s[m]·x[m][j] ≤ cap[j]                  (devices of type j)
//	          θ ≥ 0
//
// Only the K capacity rows couple the jobs. For device prices λ ≥ 0 each
// job's cheapest way to meet a demand d is read off the lower convex hull
// of the points (a[m][j], λ_j·s[m] − v[m][j]) and the origin, so the
// Lagrangian L(λ) = λ·cap + max_θ [θ − Σ_m h_m(F[m]+θ·D[m])] is exact and
// cheap (a sweep over the hull breakpoints), and every L(λ) is a proven
// upper bound. The restricted master keeps convex combinations of the
// priced responses (K+1 rows), whose value is a feasible lower bound; its
// duals give the next prices (Kelley's cutting planes on L).
type engine struct {
	n, k     int
	a        []float64 // n*k
	s        []float64 // n
	capac    []float64 // k
	v        []float64 // n*k or nil
	f, d     []float64 // n
	useTheta bool

	// Jobs with the same throughputs, scale and values have the same cost
	// curve at any prices: cls maps a job to its class, rep a class to
	// its first job (see classify). Trace workloads have a few dozen
	// classes among tens of thousands of jobs.
	cls []int32
	rep []int32

	// hull scratch: per class up to k+1 vertices.
	hn  []int32
	ht  []float64
	hc  []float64
	hty []int32
	ev  []event

	order  []int32 // per class, k: usable types by throughput
	norder []int32

	// Jobs of one class with bitwise equal F and D also respond alike at
	// any prices and level: grp maps a job to its group and grpRep a group
	// to its first job, so that each pricing computes a group's response
	// once and every job reuses it, in job order, with the same arithmetic
	// (nil grp: groups do not pay, every job is computed on its own).
	grp    []int32
	grpRep []int32
	gterms []levelTerms // per group: maxTheta's terms
	gev    []event      // the groups' events, end to end
	greply []reply      // per group: the response at the level priced
}

type event struct {
	theta, delta float64
}

// levelTerms is one job's part of maxTheta: the level at which its demand
// leaves its hull (limit), the slope its cost adds at θ = 0 (when
// hasSlope) and its events (gev[lo:hi] for a group).
type levelTerms struct {
	limit, slope float64
	hasSlope     bool
	lo, hi       int32
}

// reply is one job's cheapest mix for a demand (respond without the cost).
type reply struct {
	j1, j2 int32
	f1, f2 float64
}

func newEngine(n, k int, a, s, capac, v, f, d []float64, useTheta bool) *engine {
	return &engine{n: n, k: k, a: a, s: s, capac: capac, v: v, f: f, d: d, useTheta: useTheta}
}

// classifySample is how many jobs classify looks at before it decides
// whether classes pay.
const classifySample = 512

// classify groups the jobs whose throughputs, scale and values are
// bitwise equal (so that their hulls are computed once per class, with
// the very same arithmetic) and sizes the hull scratch per class. When
// more than half of the first classifySample jobs are distinct, every job
// is its own class.
func (e *engine) classify() {
	k := e.k
	e.cls = make([]int32, e.n)
	e.rep = e.rep[:0]
	bits := func(m int) []float64 { return e.a[m*k : m*k+k] }
	same := func(m1, m2 int) bool {
		if math.Float64bits(e.s[m1]) != math.Float64bits(e.s[m2]) {
			return false
		}
		for j := range k {
			if math.Float64bits(e.a[m1*k+j]) != math.Float64bits(e.a[m2*k+j]) {
				return false
			}
			if e.v != nil && math.Float64bits(e.v[m1*k+j]) != math.Float64bits(e.v[m2*k+j]) {
				return false
			}
		}
		return true
	}
	head := make(map[uint64]int32) // hash → newest class with it
	var next []int32               // per class: an older class with the same hash, or −1
	for m := range e.n {
		h := uint64(14695981039346656037)
		mix := func(x float64) { h = (h ^ math.Float64bits(x)) * 1099511628211 }
		mix(e.s[m])
		for j, x := range bits(m) {
			mix(x)
			if e.v != nil {
				mix(e.v[m*k+j])
			}
		}
		c, ok := head[h]
		for ok && c >= 0 && !same(int(e.rep[c]), m) {
			c = next[c]
		}
		if !ok || c < 0 {
			c = int32(len(e.rep))
			e.rep = append(e.rep, int32(m))
			older := int32(-1)
			if ok {
				older = head[h]
			}
			next = append(next, older)
			head[h] = c
		}
		e.cls[m] = c
		if m+1 == classifySample && len(e.rep) > classifySample/2 && e.n > 2*classifySample {
			// Mostly distinct jobs (random instances): hashing the rest
			// would cost more than the hulls it saves. One class per job.
			e.rep = e.rep[:0]
			for m := range e.n {
				e.cls[m] = int32(m)
				e.rep = append(e.rep, int32(m))
			}
			break
		}
	}
	nc := len(e.rep)
	e.hn, e.ht, e.hc, e.hty = make([]int32, nc), make([]float64, nc*(k+1)), make([]float64, nc*(k+1)), make([]int32, nc*(k+1))
}

// sortTypes records, per class, its usable types in order of throughput
// (then type index): the order the hull sweep visits them. It does not
// depend on prices, so it is computed once per engine.
func (e *engine) sortTypes() {
	k := e.k
	e.classify()
	nc := len(e.rep)
	e.order = make([]int32, nc*k)
	e.norder = make([]int32, nc)
	for c, m := range e.rep {
		row := e.a[int(m)*k : int(m)*k+k]
		o := e.order[c*k : c*k+k]
		n := 0
		for j, t := range row {
			if t > 0 {
				o[n] = int32(j)
				n++
			}
		}
		for i := 1; i < n; i++ {
			for j := i; j > 0 && (row[o[j]] < row[o[j-1]] || row[o[j]] == row[o[j-1]] && o[j] < o[j-1]); j-- {
				o[j], o[j-1] = o[j-1], o[j]
			}
		}
		e.norder[c] = int32(n)
	}
	e.group()
}

// group sets grp and grpRep when classes pay: jobs of a class with the
// same F and D bits share a group. It gives up (nil grp) when more than
// half the jobs would be alone.
func (e *engine) group() {
	e.grp, e.grpRep = nil, nil
	if len(e.rep) > e.n/2 {
		return
	}
	type key struct {
		cls  int32
		f, d uint64
	}
	at := make(map[key]int32, len(e.rep))
	grp := make([]int32, e.n)
	var reps []int32
	for m := range e.n {
		k := key{e.cls[m], math.Float64bits(e.f[m]), math.Float64bits(e.d[m])}
		g, ok := at[k]
		if !ok {
			g = int32(len(reps))
			at[k] = g
			reps = append(reps, int32(m))
		}
		grp[m] = g
	}
	if len(reps) > e.n/2 {
		return
	}
	e.grp, e.grpRep = grp, reps
	e.gterms, e.greply = make([]levelTerms, len(reps)), make([]reply, len(reps))
}

// hulls computes every class's cost curve for prices lambda.
func (e *engine) hulls(lambda []float64) {
	k := e.k
	if e.order == nil {
		e.sortTypes()
	}
	for cl, rep := range e.rep {
		m := int(rep)
		row := e.a[m*k : m*k+k]
		o := e.order[cl*k : cl*k+int(e.norder[cl])]
		sm := e.s[m]
		var vrow []float64
		if e.v != nil {
			vrow = e.v[m*k : m*k+k]
		}
		cost := func(j int32) float64 {
			c := lambda[j] * sm
			if vrow != nil {
				c -= vrow[j]
			}
			return c
		}
		// The cheapest point (ties: larger throughput, then lower index).
		bt, bc, bj := 0.0, 0.0, int32(-1)
		for _, j := range o {
			if c := cost(j); c < bc || c == bc && row[j] > bt {
				bt, bc, bj = row[j], c, j
			}
		}
		base := cl * (k + 1)
		ht, hc, hty := e.ht[base:base+k+1], e.hc[base:base+k+1], e.hty[base:base+k+1]
		ht[0], hc[0], hty[0] = bt, bc, bj
		L := 1
		for _, j := range o {
			qt := row[j]
			if qt <= bt {
				continue
			}
			qc := cost(j)
			if L >= 2 && qt == ht[L-1] {
				if qc >= hc[L-1] {
					continue // same throughput, not cheaper
				}
				L--
			}
			for L >= 2 {
				t1, c1, t2, c2 := ht[L-2], hc[L-2], ht[L-1], hc[L-1]
				if (c2-c1)*(qt-t2) >= (qc-c2)*(t2-t1) {
					L--
					continue
				}
				break
			}
			ht[L], hc[L], hty[L] = qt, qc, j
			L++
		}
		e.hn[cl] = int32(L)
	}
}

// respond returns job m's cheapest mix for demand dm: up to two types with
// their time fractions (type −1 = none), and its cost.
func (e *engine) respond(m int, dm float64) (j1 int32, f1 float64, j2 int32, f2 float64, cost float64) {
	cl := int(e.cls[m])
	base := cl * (e.k + 1)
	L := int(e.hn[cl])
	ht, hc, hty := e.ht[base:base+L], e.hc[base:base+L], e.hty[base:base+L]
	if dm <= ht[0] {
		switch {
		case hty[0] < 0 || dm <= 0 && hc[0] >= 0:
			return -1, 0, -1, 0, 0
		case hc[0] < 0:
			return hty[0], 1, -1, 0, hc[0]
		default:
			return hty[0], dm / ht[0], -1, 0, 0
		}
	}
	i := 1
	for i < L-1 && dm > ht[i] {
		i++
	}
	if i >= L { // only the cheapest point exists: clamp
		return hty[0], 1, -1, 0, hc[0]
	}
	al := (dm - ht[i-1]) / (ht[i] - ht[i-1])
	al = min(max(al, 0), 1)
	cost = (1-al)*hc[i-1] + al*hc[i]
	if hty[i-1] < 0 {
		return hty[i], al, -1, 0, cost
	}
	return hty[i-1], 1 - al, hty[i], al, cost
}

// maxTheta returns the level θ ≥ 0 that maximises θ − Σ_m h_m(F[m]+θ·D[m])
// for the hulls last computed.
func (e *engine) maxTheta() float64 {
	if !e.useTheta {
		return 0
	}
	ev := e.ev[:0]
	slope := 0.0
	thMax := math.Inf(1)
	if e.grp != nil {
		gev := e.gev[:0]
		for g, m := range e.grpRep {
			if e.d[m] > 0 {
				lo := len(gev)
				t := &e.gterms[g]
				t.limit, t.slope, t.hasSlope, gev = e.levelTerms(int(m), gev)
				t.lo, t.hi = int32(lo), int32(len(gev))
			}
		}
		e.gev = gev
	}
	for m := range e.n {
		if e.d[m] <= 0 {
			continue
		}
		var t levelTerms
		if e.grp != nil {
			t = e.gterms[e.grp[m]]
			ev = append(ev, e.gev[t.lo:t.hi]...)
		} else {
			t.limit, t.slope, t.hasSlope, ev = e.levelTerms(m, ev)
		}
		thMax = min(thMax, t.limit)
		if t.hasSlope {
			slope += t.slope
		}
	}
	e.ev = ev
	if slope >= 1 || thMax <= 0 || math.IsInf(thMax, 1) { // +Inf: no job has a level-dependent demand
		return 0
	}
	return crossing(ev, slope, thMax)
}

// levelTerms returns job m's terms of maxTheta (D[m] > 0), appending its
// events to ev: the vertices of its hull beyond F[m], where its slope
// changes. Hull throughputs rise strictly, so at most one hull segment
// holds F[m] and gives the slope at θ = 0.
func (e *engine) levelTerms(m int, ev []event) (limit, slope float64, hasSlope bool, out []event) {
	dm := e.d[m]
	cl := int(e.cls[m])
	base := cl * (e.k + 1)
	L := int(e.hn[cl])
	ht, hc := e.ht[base:base+L], e.hc[base:base+L]
	f := e.f[m]
	limit = max((ht[L-1]-f)/dm, 0)
	prev := 0.0 // slope left of vertex i
	for i := range L - 1 {
		next := (hc[i+1] - hc[i]) / (ht[i+1] - ht[i])
		if ht[i] <= f { // vertex already passed at θ = 0
			if ht[i+1] > f {
				slope, hasSlope = dm*next, true
			}
		} else {
			ev = append(ev, event{theta: (ht[i] - f) / dm, delta: dm * (next - prev)})
		}
		prev = next
	}
	return limit, slope, hasSlope, ev
}

// replies returns, per group, the response at level th (nil when jobs
// are not grouped).
func (e *engine) replies(th float64) []reply {
	if e.grp == nil {
		return nil
	}
	for g, m := range e.grpRep {
		e.greply[g] = e.reply(int(m), th)
	}
	return e.greply
}

// replyOf is job m's response at level th: its group's in rs (from
// replies), or computed when jobs are not grouped (rs nil).
func (e *engine) replyOf(rs []reply, m int, th float64) reply {
	if rs != nil {
		return rs[e.grp[m]]
	}
	return e.reply(m, th)
}

// reply is job m's response at level th.
func (e *engine) reply(m int, th float64) reply {
	var r reply
	r.j1, r.f1, r.j2, r.f2, _ = e.respond(m, e.f[m]+th*e.d[m])
	return r
}

// crossing returns the smallest event θ below thMax at which slope plus
// the deltas of all events at or before θ reaches 1, or thMax if none
// does. It selects in expected linear time (three-way quickselect on θ
// weighted by delta) instead of sorting; the answer does not depend on the
// order of events. It reorders ev.
func crossing(ev []event, slope, thMax float64) float64 {
	w := 0
	for _, q := range ev {
		if q.theta < thMax {
			ev[w] = q
			w++
		}
	}
	ev = ev[:w]
	for len(ev) > 0 {
		a, b, c := ev[0].theta, ev[len(ev)/2].theta, ev[len(ev)-1].theta
		piv := max(min(a, b), min(max(a, b), c)) // median of three
		// Partition into [< piv | == piv | > piv].
		lt, i, gt := 0, 0, len(ev)
		var sumLT, sumEQ float64
		for i < gt {
			switch q := ev[i]; {
			case q.theta < piv:
				ev[lt], ev[i] = ev[i], ev[lt]
				sumLT += q.delta
				lt++
				i++
			case q.theta > piv:
				gt--
				ev[gt], ev[i] = ev[i], ev[gt]
			default:
				sumEQ += q.delta
				i++
			}
		}
		switch {
		case slope+sumLT >= 1:
			ev = ev[:lt]
		case slope+sumLT+sumEQ >= 1:
			return piv
		default:
			slope += sumLT + sumEQ
			ev = ev[gt:]
		}
	}
	return thMax
}

// price computes the best response column for prices lambda: its level,
// objective and device use, and the Lagrangian term phi = obj − λ·use.
func (e *engine) price(lambda []float64) (c column, phi float64) {
	e.hulls(lambda)
	th := e.maxTheta()
	c = column{theta: th, use: make([]float64, e.k), lambda: slices.Clone(lambda)}
	if e.useTheta {
		c.obj = th
	}
	rs := e.replies(th)
	for m := range e.n {
		r := e.replyOf(rs, m, th)
		j1, f1, j2, f2 := r.j1, r.f1, r.j2, r.f2
		if j1 >= 0 {
			c.use[j1] += e.s[m] * f1
			if e.v != nil {
				c.obj += e.v[m*e.k+int(j1)] * f1
			}
		}
		if j2 >= 0 {
			c.use[j2] += e.s[m] * f2
			if e.v != nil {
				c.obj += e.v[m*e.k+int(j2)] * f2
			}
		}
	}
	phi = c.obj
	for j, u := range c.use {
		phi -= lambda[j] * u
	}
	return c, phi
}

// addX adds mu times column c's allocation into x (n*k).
func (e *engine) addX(c *column, mu float64, x []float64) {
	if c.x != nil {
		for i, v := range c.x {
			x[i] += mu * v
		}
		return
	}
	if c.lambda == nil {
		return // the zero column
	}
	e.hulls(c.lambda)
	rs := e.replies(c.theta)
	for m := range e.n {
		r := e.replyOf(rs, m, c.theta)
		j1, f1, j2, f2 := r.j1, r.f1, r.j2, r.f2
		if j1 >= 0 {
			x[m*e.k+int(j1)] += mu * f1
		}
		if j2 >= 0 {
			x[m*e.k+int(j2)] += mu * f2
		}
	}
}

// explicitColumn wraps an allocation x (n*k) that meets the demand rows at
// level theta as a master column.
func (e *engine) explicitColumn(x []float64, theta float64) column {
	c := column{x: x, theta: theta, use: make([]float64, e.k)}
	if e.useTheta {
		c.obj = theta
	}
	for m := range e.n {
		for j := range e.k {
			v := x[m*e.k+j]
			c.use[j] += e.s[m] * v
			if e.v != nil {
				c.obj += e.v[m*e.k+j] * v
			}
		}
	}
	return c
}

// cgResult is the outcome of one column-generation run.
type cgResult struct {
	x      []float64 // n*k
	lb, ub float64   // feasible value of x's master point; proven bound
	lambda []float64 // prices at the best bound
	iters  int
}

// cgOptions bounds one run.
type cgOptions struct {
	tol       float64 // relative gap to stop at
	maxIter   int
	stopAbove float64 // stop once lb ≥ stopAbove (feasibility tests)
	stopBelow float64 // stop once ub < stopBelow
}

// run performs column generation from the given starting columns (the
// first must fit capacity).
func (e *engine) run(ctx context.Context, init []column, o cgOptions) (cgResult, error) {
	ms := newMaster(e.capac, init[0])
	for _, c := range init[1:] {
		ms.add(c)
	}
	lambda := make([]float64, e.k)
	prev := make([]float64, e.k)
	restarts := 0
	res := cgResult{ub: math.Inf(1), lambda: make([]float64, e.k)}
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := ms.solve(); err != nil {
			return res, err
		}
		if ms.negativePrice() {
			// A slack the master set aside (an unsafe pivot) would still
			// improve it, so its duals are no prices: solve it again from
			// the slack basis, with every column.
			fresh := newMaster(e.capac, ms.cols[0])
			for _, c := range ms.cols[1:] {
				fresh.add(c)
			}
			if err := fresh.solve(); err == nil && fresh.value() >= ms.value()-1e-12*ms.scale {
				ms = fresh
			}
		}
		res.iters = it
		res.lb = ms.value()
		sigma := ms.prices(lambda)
		col, phi := e.price(lambda)
		var ub float64
		for j, l := range lambda {
			ub += l * e.capac[j]
		}
		ub += phi
		if ub < res.ub {
			res.ub = ub
			copy(res.lambda, lambda)
		}
		gap := res.ub - res.lb
		// The same prices as the previous round mean the master could not
		// use the last column (its pivot was numerically unsafe): pricing
		// again would return it again.
		stalled := it > 1 && slices.Equal(lambda, prev)
		if gap <= o.tol*max(math.Abs(res.ub), math.Abs(res.lb), 1e-300) ||
			res.lb >= o.stopAbove || res.ub < o.stopBelow ||
			phi-sigma <= 1e-10*ms.scale || it >= o.maxIter || stalled && restarts >= 20 {
			break
		}
		if stalled {
			// Condense: restart the master from its current point as one
			// explicit column, which drops the nearly parallel columns that
			// made the basis ill-conditioned.
			restarts++
			x := make([]float64, e.n*e.k)
			for i, mu := range ms.weights() {
				if mu > 0 {
					e.addX(&ms.cols[i], mu, x)
				}
			}
			th := 0.0
			if e.useTheta && e.v == nil {
				th = res.lb
			}
			ms = newMaster(e.capac, e.explicitColumn(x, th))
		}
		copy(prev, lambda)
		ms.add(col)
	}
	res.ub = max(res.ub, res.lb)
	res.x = make([]float64, e.n*e.k)
	for i, mu := range ms.weights() {
		if mu > 0 {
			e.addX(&ms.cols[i], mu, res.x)
		}
	}
	return res, nil
}
