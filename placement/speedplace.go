package placement

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Speed-aware placement: what RoundPlacer does when PlaceInput.Speeds is
// set. A device avoidSlower times slower than the fastest of its type
// (for no particular job: Speeds.Slowdown with job "") is slow. The round
// is placed twice: first with every free slow device held back, so the
// gangs (largest first, as the round places them) land on fast devices;
// then, the slow devices released, what did not fit is placed on them.
// A synchronous gang runs at the speed of its slowest device, so slow
// devices go to the gangs that fit on them whole, not to a large gang
// that would run at their speed. A running gang whose slowest device is
// evictSlower times slower than the fastest of its type moves, when it
// lands on fast devices (taking those of smaller gangs, which take its
// slow ones, when none is free); failing that, the slow gangs are placed
// again together, largest first, when that gets one of them off slow
// devices (the others take the slow ones). Smaller differences move
// nothing. A round that
// leaves more targets unplaced than placing without speed data is placed
// without it.
const (
	// avoidSlower is how many times slower than its type's fastest a
	// device must be for new gangs to avoid it: 1.2, above the spread of
	// healthy GPUs of one type that PAL measured (8–22%, most within
	// ±10% of the median), so it is episodes of interference that count.
	avoidSlower = 1.2
	// evictSlower is how many times slower than its type's fastest a
	// running gang's slowest device must be for the gang to move: 1.5, as
	// package palplace's Evict in examples/simulate; a move costs a
	// restart.
	evictSlower = 1.5
)

// heldBack is the prefix of the placement jobs that hold devices back
// during a speed-aware round (one per node, "\x00slow/" + node); no job ID
// starts with a NUL.
const heldBack = "\x00slow/"

// speedDevice is a usable device of the index, in numbers.
type speedDevice struct {
	id   string
	num  int // its number in the index
	node int
	typ  int
}

// speedLayoutKey is the Index.Derived key of the index's usable
// devices.
type speedLayoutKey struct{}

func speedLayout(x *Index) []speedDevice {
	return x.Derived(speedLayoutKey{}, func() any {
		var out []speedDevice
		for n := range x.Nodes() {
			_, devs := x.Node(n)
			for _, d := range devs {
				t, ok := x.TypeIndex(d.Type)
				r, known := x.Ref(d.ID)
				if ok && known && d.Usable() {
					out = append(out, speedDevice{id: d.ID, num: r.Num, node: n, typ: t})
				}
			}
		}
		slices.SortFunc(out, func(a, b speedDevice) int { return cmp.Compare(a.num, b.num) })
		return out
	}).([]speedDevice)
}

// placeBySpeed is RoundPlacer.Place with speed data, on st (the usage of
// in.Current, which it may change).
func (p RoundPlacer) placeBySpeed(st *State, in PlaceInput) (PlaceResult, error) {
	x := in.Cluster
	sp := speedView{devs: speedLayout(x)}
	sp.slow = make([]float64, len(sp.devs))
	sp.fastest = make([]float64, len(x.Types()))
	for t := range sp.fastest {
		sp.fastest[t] = math.Inf(1)
	}
	for i, d := range sp.devs {
		sp.slow[i] = in.Speeds.Slowdown("", d.id)
		sp.fastest[d.typ] = min(sp.fastest[d.typ], sp.slow[i])
	}
	targeted := make(map[string]bool, len(in.Targets))
	for _, t := range in.Targets {
		targeted[t.Job] = t.Count > 0
	}
	// plain is st as it came, for the last fallback: cloned only before
	// st first changes, here or before the last fastFirst.
	var plain *State
	// Jobs without a target stop: free their devices now so that they
	// can be held back.
	for _, a := range st.Assignments() {
		if !targeted[a.Job] {
			if plain == nil {
				plain = st.Clone()
			}
			st.Release(a.Job)
		}
	}
	// Moves: the running gangs on devices evictSlower times slower, the
	// largest first. Each needs as many fast devices as it holds slow
	// ones: free ones, else those of smaller gangs on fast devices
	// (at most half its size each, the smallest first), which then take
	// the slow devices it leaves: a gang runs at the speed of its slowest
	// device, so a slow node costs a small gang on it less than a large
	// gang that spans it.
	type running struct {
		job         string
		typ, count  int
		worst       float64
		slowDevices int
	}
	var gangs []running
	freeFast := make([]int, len(sp.fastest))
	for i, d := range sp.devs {
		if _, held := st.Owner(d.id); !held && sp.slow[i] < sp.fastest[d.typ]*avoidSlower {
			freeFast[d.typ]++
		}
	}
	for _, t := range in.Targets {
		a, ok := st.Assignment(t.Job)
		if !ok || len(a.Devices) != t.Count {
			continue // not kept as it is: the round places it anyway
		}
		g := running{job: t.Job, count: t.Count, typ: -1}
		for _, id := range a.Devices {
			i, ok := sp.find(x, id)
			if !ok {
				g.typ = -1
				break
			}
			f := sp.slow[i] / sp.fastest[sp.devs[i].typ]
			g.worst, g.typ = max(g.worst, f), sp.devs[i].typ
			if f >= avoidSlower {
				g.slowDevices++
			}
		}
		if g.typ >= 0 {
			gangs = append(gangs, g)
		}
	}
	slices.SortStableFunc(gangs, func(a, b running) int { return cmp.Compare(b.count, a.count) })
	moved := st.Clone()
	movedJobs := map[string]bool{} // the slow gangs moved (their partners are not)
	taken := map[string]bool{}
	for _, g := range gangs {
		if g.worst < evictSlower || taken[g.job] {
			continue
		}
		var partners []string
		if deficit := g.slowDevices - freeFast[g.typ]; deficit > 0 {
			var small []running
			for _, o := range gangs {
				if o.typ == g.typ && o.worst < avoidSlower && 2*o.count <= g.count && !taken[o.job] {
					small = append(small, o)
				}
			}
			slices.SortStableFunc(small, func(a, b running) int { return cmp.Compare(a.count, b.count) })
			got := 0
			for _, o := range small {
				if got >= deficit {
					break
				}
				partners = append(partners, o.job)
				got += o.count
			}
			if got < deficit {
				continue
			}
			freeFast[g.typ] += got
		}
		freeFast[g.typ] -= g.slowDevices
		for _, j := range append(partners, g.job) {
			taken[j] = true
			moved.Release(j)
		}
		movedJobs[g.job] = true
	}
	if len(movedJobs) > 0 {
		res, unplaced, err := p.fastFirst(moved, in, &sp)
		if err != nil {
			return PlaceResult{}, err
		}
		landed := unplaced == 0
		for _, a := range res.Assignments {
			if landed && movedJobs[a.Job] && sp.worst(x, a.Devices) >= avoidSlower {
				landed = false // it would move to slow devices again: keep it
			}
		}
		if landed {
			return res, nil
		}
	}
	// Else all the slow gangs at once, when that gets one of them off slow
	// devices: the largest land on fast devices, the rest share the slow
	// ones (a restart costs each gang once; 2× slower steps cost it half
	// its progress for the rest of the episode).
	regroup := st.Clone()
	slowCount := map[string]int{} // the slow gangs' sizes
	nSlow := 0
	for _, g := range gangs {
		if g.worst >= evictSlower {
			regroup.Release(g.job)
			slowCount[g.job] = g.count
			nSlow++
		}
	}
	if nSlow > 1 {
		res, unplaced, err := p.fastFirst(regroup, in, &sp)
		if err != nil {
			return PlaceResult{}, err
		}
		gain := 0 // devices of slow gangs that end up fast
		for _, a := range res.Assignments {
			if n, slow := slowCount[a.Job]; slow && sp.worst(x, a.Devices) < evictSlower {
				gain += n
			}
		}
		if unplaced == 0 && gain > 0 {
			return res, nil
		}
	}
	if plain == nil {
		plain = st.Clone()
	}
	res, unplaced, err := p.fastFirst(st, in, &sp)
	if err != nil || unplaced == 0 {
		return res, err
	}
	blind, err := p.round(plain, in)
	if err != nil || len(blind.Unplaced) < unplaced {
		return blind, err
	}
	return res, nil
}

// speedView is the usable devices of an index with their slowdowns for no
// particular job, and the fastest per type.
type speedView struct {
	devs    []speedDevice
	slow    []float64
	fastest []float64 // by type position
}

// find returns the position of the device with the given ID.
func (sp *speedView) find(x *Index, id string) (int, bool) {
	r, ok := x.Ref(id)
	if !ok {
		return 0, false
	}
	return slices.BinarySearchFunc(sp.devs, r.Num, func(d speedDevice, n int) int { return cmp.Compare(d.num, n) })
}

// worst is the largest slowdown of the devices against the fastest of
// their type (0 for an unknown device).
func (sp *speedView) worst(x *Index, ids []string) float64 {
	w := 0.0
	for _, id := range ids {
		i, ok := sp.find(x, id)
		if !ok {
			return 0
		}
		w = max(w, sp.slow[i]/sp.fastest[sp.devs[i].typ])
	}
	return w
}

// fastFirst places in's targets on st twice: with every free slow device
// held back, then, those released, what did not fit. It reports how many
// targets it left unplaced.
func (p RoundPlacer) fastFirst(st *State, in PlaceInput, sp *speedView) (PlaceResult, int, error) {
	byNode := map[int][]int{}
	var nodes []int
	for i, d := range sp.devs {
		if _, held := st.Owner(d.id); !held && sp.slow[i] >= sp.fastest[d.typ]*avoidSlower {
			if byNode[d.node] == nil {
				nodes = append(nodes, d.node)
			}
			byNode[d.node] = append(byNode[d.node], i)
		}
	}
	if len(nodes) == 0 {
		res, err := p.round(st, in)
		return res, len(res.Unplaced), err
	}
	types := in.Cluster.Types()
	var extra []Target
	for _, n := range nodes {
		name, _ := in.Cluster.Node(n)
		byType := map[int][]string{} // one held-back job per node and type
		for _, i := range byNode[n] {
			byType[sp.devs[i].typ] = append(byType[sp.devs[i].typ], sp.devs[i].id)
		}
		for t, ids := range byType {
			job := heldBack + name + "/" + string(types[t])
			if err := st.Assign(Assignment{Job: job, Devices: ids}); err != nil {
				return PlaceResult{}, 0, err
			}
			extra = append(extra, Target{Job: job, Type: types[t], Count: len(ids), MaxNodes: 1})
		}
	}
	slices.SortFunc(extra, func(a, b Target) int { return cmp.Compare(a.Job, b.Job) })
	pl := p.chooser(in)
	rr, err := pl.Round(st, append(realTargets(in), extra...))
	if err != nil {
		return PlaceResult{}, 0, err
	}
	if len(rr.Unplaced) > 0 {
		// The slow devices released, place what did not fit.
		after := rr.State
		for _, t := range extra {
			after.Release(t.Job)
		}
		if rr, err = pl.Round(after, realTargets(in)); err != nil {
			return PlaceResult{}, 0, err
		}
	}
	res := roundResult(rr)
	res.Assignments = slices.DeleteFunc(res.Assignments, func(a Assignment) bool { return isHeldBack(a.Job) })
	res.Unplaced = slices.DeleteFunc(res.Unplaced, func(u Unplaced) bool { return isHeldBack(u.Target.Job) })
	if len(res.Assignments) == 0 {
		res.Assignments = nil
	}
	if len(res.Unplaced) == 0 {
		res.Unplaced = nil
	}
	return res, len(res.Unplaced), nil
}

func isHeldBack(job string) bool { return strings.HasPrefix(job, heldBack) }

// realTargets is in's targets with positive counts, for the round: in's
// own (clipped, so that appending copies) when all counts are positive.
func realTargets(in PlaceInput) []Target {
	for k, t := range in.Targets {
		if t.Count <= 0 { // rare: copy without the zero counts
			pts := slices.Clone(in.Targets[:k])
			for _, t := range in.Targets[k+1:] {
				if t.Count > 0 {
					pts = append(pts, t)
				}
			}
			return pts
		}
	}
	return slices.Clip(in.Targets)
}

// chooser is p's Chooser with in's interference setting.
func (p RoundPlacer) chooser(in PlaceInput) Chooser {
	c := p.Chooser
	c.AllowInterference = in.AllowInterference
	return c
}

// round is RoundPlacer's round on st for in's targets.
func (p RoundPlacer) round(st *State, in PlaceInput) (PlaceResult, error) {
	c := p.chooser(in)
	rr, err := c.Round(st, realTargets(in))
	if err != nil {
		return PlaceResult{}, err
	}
	return roundResult(rr), nil
}

// roundResult is a round's result as a Placer's.
func roundResult(rr RoundResult) PlaceResult {
	res := PlaceResult{Assignments: make([]Assignment, 0, len(rr.Decisions)), Unplaced: rr.Unplaced}
	for _, d := range rr.Decisions {
		if d.Action != Stop && len(d.Devices) > 0 {
			res.Assignments = append(res.Assignments, Assignment{Job: d.Job, Devices: d.Devices})
		}
	}
	if len(res.Assignments) == 0 {
		res.Assignments = nil
	}
	return res
}
