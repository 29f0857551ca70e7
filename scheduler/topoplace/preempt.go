package topoplace

import (
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
)

// candidate is a job that may be evicted: its slot, cost and devices.
type candidate struct {
	slot int
	cost float64
	devs []int32
}

// cheapest returns the domain at depth d and the candidates (indices into
// cands) of least total cost, then fewest, whose eviction leaves k free
// devices of type t in that domain; -1 when none does. Exact: a 0/1
// knapsack over freed device counts per domain.
func (w *work) cheapest(t int, k int32, d int, cands []candidate) (int32, []int, float64) {
	m := w.m
	bestDom, bestCost, bestN := int32(-1), math.Inf(1), 0
	var bestSet []int
	// Per candidate, its devices of type t per domain at depth d.
	per := make([]map[int32]int32, len(cands))
	for i, c := range cands {
		per[i] = map[int32]int32{}
		for _, g := range c.devs {
			if int(m.typeOf[g]) != t {
				continue
			}
			if a := m.ancestorAt(m.nodeOf[g], d); a >= 0 {
				per[i][a]++
			}
		}
	}
	for _, dom := range m.atLvl[d] {
		need := k - w.free[t][dom]
		if need <= 0 {
			continue // fits already (the caller asked because slices did not)
		}
		var items []int
		var have int32
		for i := range cands {
			if x := per[i][dom]; x > 0 {
				items = append(items, i)
				have += x
			}
		}
		if have < need {
			continue
		}
		// best[i][x]: least (cost, count) freeing at least x (capped at
		// need) with the first i items.
		type val struct {
			cost float64
			n    int
		}
		less := func(a, b val) bool { return a.cost < b.cost || a.cost == b.cost && a.n < b.n }
		inf := val{math.Inf(1), 0}
		best := make([][]val, len(items)+1)
		best[0] = make([]val, need+1)
		for x := range best[0] {
			best[0][x] = inf
		}
		best[0][0] = val{}
		for i, it := range items {
			prev, cur := best[i], make([]val, need+1)
			copy(cur, prev)
			wgt, c := per[it][dom], cands[it].cost
			for x := int32(0); x <= need; x++ {
				if math.IsInf(prev[x].cost, 1) {
					continue
				}
				y := min(need, x+wgt)
				if v := (val{prev[x].cost + c, prev[x].n + 1}); less(v, cur[y]) {
					cur[y] = v
				}
			}
			best[i+1] = cur
		}
		got := best[len(items)][need]
		if math.IsInf(got.cost, 1) {
			continue
		}
		if bestDom >= 0 && !less(val{got.cost, got.n}, val{bestCost, bestN}) {
			continue
		}
		// Walk back: item i was taken iff the value came from it.
		var set []int
		x := need
		for i := len(items); i > 0; i-- {
			if best[i][x] == best[i-1][x] {
				continue
			}
			it := items[i-1]
			wgt := per[it][dom]
			// find the predecessor x' with min(need, x'+wgt) == x
			for xp := int32(0); xp <= need; xp++ {
				if min(need, xp+wgt) == x && best[i-1][xp].n+1 == best[i][x].n && best[i-1][xp].cost+cands[it].cost == best[i][x].cost {
					x = xp
					break
				}
			}
			set = append(set, it)
		}
		slices.Sort(set)
		bestDom, bestCost, bestN, bestSet = dom, got.cost, got.n, set
	}
	return bestDom, bestSet, bestCost
}

// preemptFor returns the jobs (slots) target i evicts, and the domain,
// or nothing.
func (w *work) preemptFor(i int, r *request, targets []placement.Target, held [][]int32, pre *Preemption) ([]int, int32) {
	prio := pre.Priority(targets[i].Job)
	var cands []candidate
	for j := range targets {
		if j == i || len(held[j]) == 0 || pre.Priority(targets[j].Job) >= prio {
			continue
		}
		cost := float64(len(held[j]))
		if pre.DeviceSeconds != nil {
			cost = pre.DeviceSeconds(targets[j].Job)
		}
		if math.IsNaN(cost) || cost < 0 {
			continue // a cost that cannot be compared: never a victim
		}
		cands = append(cands, candidate{slot: j, cost: cost, devs: held[j]})
	}
	dom, set, _ := w.cheapest(r.t, int32(r.k), r.c.required, cands)
	if dom < 0 {
		return nil, -1
	}
	out := make([]int, len(set))
	for k, s := range set {
		out[k] = cands[s].slot
	}
	return out, dom
}

// Candidate is a running job that may be evicted, with what evicting it
// costs.
type Candidate struct {
	// Job names a job of the current assignments.
	Job string
	// DeviceSeconds is the work evicting it loses (≥ 0, finite).
	DeviceSeconds float64
}

// Choice is the answer of Victims.
type Choice struct {
	// Domain is the domain of the level that will hold the gang; "" when
	// no eviction makes room.
	Domain string
	// Jobs are the victims, sorted; DeviceSeconds their total cost.
	Jobs          []string
	DeviceSeconds float64
}

// Victims answers topology-aware preemption (kueue#12478,
// volcano#4374): given the assignments in effect and the jobs that may be
// evicted, the set of candidates with the least total device-seconds
// (then the fewest jobs, then the first domain by name) whose devices,
// with the free ones, make one domain of level hold count usable devices
// of type typ. Only the candidates' devices inside that domain count
// toward it, but a victim loses all its devices. A domain that already
// holds count free devices needs no victim (an empty Jobs). Errors: no
// topology (ErrInvalid), an unknown level (topology.ErrUnknownLevel), a
// candidate that holds no devices, a negative or NaN cost, or a count < 1
// (ErrInvalid).
func Victims(x *placement.Index, top *topology.Topology, current []placement.Assignment, cands []Candidate, typ accel.TypeKey, count int, level string) (Choice, error) {
	if top == nil {
		return Choice{}, fmt.Errorf("%w: no topology", ErrInvalid)
	}
	if count < 1 {
		return Choice{}, fmt.Errorf("%w: count %d < 1", ErrInvalid, count)
	}
	m := modelFor(x, top)
	d, err := levelOf(m.levels, level)
	if err != nil {
		return Choice{}, err
	}
	w := newWork(m)
	defer putWork(w)
	byJob := map[string][]int32{}
	for si, a := range current {
		for _, id := range a.Devices {
			if g, ok := m.devNum[id]; ok && w.owner[g] == 0 {
				w.take(g, si)
				byJob[a.Job] = append(byJob[a.Job], g)
			}
		}
	}
	t, ok := m.types[string(typ)]
	if !ok {
		return Choice{}, nil
	}
	for _, dom := range m.atLvl[d] {
		if w.free[t][dom] >= int32(count) {
			return Choice{Domain: m.name[dom]}, nil
		}
	}
	cs := make([]candidate, len(cands))
	for i, c := range cands {
		if math.IsNaN(c.DeviceSeconds) || math.IsInf(c.DeviceSeconds, 0) || c.DeviceSeconds < 0 {
			return Choice{}, fmt.Errorf("%w: candidate %q: DeviceSeconds %v", ErrInvalid, c.Job, c.DeviceSeconds)
		}
		devs, ok := byJob[c.Job]
		if !ok {
			return Choice{}, fmt.Errorf("%w: candidate %q holds no devices", ErrInvalid, c.Job)
		}
		cs[i] = candidate{slot: i, cost: c.DeviceSeconds, devs: devs}
	}
	dom, set, cost := w.cheapest(t, int32(count), d, cs)
	if dom < 0 {
		return Choice{}, nil
	}
	ch := Choice{Domain: m.name[dom], DeviceSeconds: cost}
	for _, s := range set {
		ch.Jobs = append(ch.Jobs, cands[s].Job)
	}
	slices.Sort(ch.Jobs)
	return ch, nil
}
