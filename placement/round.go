package placement

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// Action says what a round did to a job.
type Action int

// Actions, from the least to the most disruptive.
const (
	// Keep: the job keeps exactly its devices.
	Keep Action = iota
	// Grow: the job keeps its devices and gains more.
	Grow
	// Shrink: the job keeps some of its devices and loses the rest.
	Shrink
	// Move: the job loses devices it keeps no longer and gains others
	// (a restart on a new set).
	Move
	// Start: the job had no devices and now has some.
	Start
	// Stop: the job had devices and now has none.
	Stop
	// Queue: the job has no devices before or after (it waits). A round
	// lists only jobs that held or hold devices, so it never reports
	// Queue; a scheduler's plan, which has a decision for every job, does.
	Queue
)

var actionNames = [...]string{"keep", "grow", "shrink", "move", "start", "stop", "queue"}

// String returns the action's name.
func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// MarshalText writes the action's name (so JSON shows "grow", not 1).
func (a Action) MarshalText() ([]byte, error) {
	if a < 0 || int(a) >= len(actionNames) {
		return nil, fmt.Errorf("%w: action %d", ErrInvalid, int(a))
	}
	return []byte(actionNames[a]), nil
}

// UnmarshalText reads an action's name.
func (a *Action) UnmarshalText(b []byte) error {
	i := slices.Index(actionNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("%w: action %q", ErrInvalid, b)
	}
	*a = Action(i)
	return nil
}

// Decision is what a round did to one job that held devices before it or
// holds devices after it.
type Decision struct {
	// Job is the job decided on.
	Job string `json:"job"`
	// Action is what happened to it.
	Action Action `json:"action"`
	// Type is the device type of Devices (empty for Stop).
	Type accel.TypeKey `json:"type,omitempty"`
	// Devices are the job's devices after the round; Previous before it.
	// Both are sorted by node name then device index.
	Devices  []string `json:"devices,omitempty"`
	Previous []string `json:"previous,omitempty"`
	// Reason explains a Stop, a Move forced by a fault, or a target that
	// was not met (then the job also appears in RoundResult.Unplaced).
	Reason Reason `json:"reason"`
}

// Unplaced is a target the round could not meet, and why. A job that held
// devices keeps them (unless they include an unhealthy device); a new job
// gets none.
type Unplaced struct {
	// Target is the target not met.
	Target Target `json:"target"`
	// Reason says why.
	Reason Reason `json:"reason"`
}

// RoundResult is the outcome of a round: plain values plus the State
// after the round, which follows State's concurrency rules.
type RoundResult struct {
	// Decisions has one entry per job that held or holds devices, sorted
	// by job.
	Decisions []Decision `json:"decisions"`
	// Unplaced lists the targets not met, sorted by job.
	Unplaced []Unplaced `json:"unplaced,omitempty"`
	// State is the usage after the round (a clone: the input is unchanged).
	State *State `json:"-"`
}

// Count returns how many decisions have the action.
func (r RoundResult) Count(a Action) int {
	k := 0
	for _, d := range r.Decisions {
		if d.Action == a {
			k++
		}
	}
	return k
}

// Round realises one scheduling round on a clone of s with the default
// Chooser; see Chooser.Round.
func Round(s *State, targets []Target) (RoundResult, error) {
	var p Chooser
	return p.Round(s, targets)
}

// Round places a set of targets against the current usage s with the
// fewest moves, on a clone of s (s itself is left as it was, though Clone
// counts as a write on it):
//
//  1. Jobs in s without a target (or with Count 0) are stopped.
//  2. A job whose devices already meet its target (type, count, nodes, all
//     healthy) keeps them untouched.
//  3. Unhealthy devices are released; a job with more devices than its
//     target shrinks, keeping the devices on the nodes where it has most.
//  4. Jobs below their target grow next to the devices they hold (same
//     nodes first, then the fewest new nodes); then jobs on the wrong type,
//     on too many nodes or left with no healthy device are re-placed; then
//     jobs that could not grow try again and are re-placed as a last
//     resort. Each step goes largest target first.
//  5. New jobs are placed, largest target first.
//
// Ties are broken by job name, node name and device index, so the same
// input gives the same result. A target that cannot be met is a result
// (RoundResult.Unplaced with a reason), not an error: the job keeps the
// devices it held (a Keep or Shrink decision carrying the reason) unless
// one of them is unhealthy, in which case it is stopped. Malformed targets
// (empty or repeated job, negative count or max nodes, unknown type, more
// devices than the type could ever offer on MaxNodes nodes) are errors.
func (p *Chooser) Round(s *State, targets []Target) (RoundResult, error) {
	if !s.usable() {
		return RoundResult{}, errNoState
	}
	byJob := make(map[string]int, len(targets))
	typ := make([]int32, len(targets)) // by target: its type's number
	for i, tg := range targets {
		switch {
		case tg.Job == "":
			return RoundResult{}, fmt.Errorf("%w: targets[%d].job is empty", ErrInvalid, i)
		case tg.Count < 0:
			return RoundResult{}, fmt.Errorf("%w: targets[%d] (%q) count %d is negative", ErrInvalid, i, tg.Job, tg.Count)
		case tg.MaxNodes < 0:
			return RoundResult{}, fmt.Errorf("%w: targets[%d] (%q) max_nodes %d is negative", ErrInvalid, i, tg.Job, tg.MaxNodes)
		}
		if _, dup := byJob[tg.Job]; dup {
			return RoundResult{}, fmt.Errorf("%w: targets[%d] job %q is repeated", ErrInvalid, i, tg.Job)
		}
		byJob[tg.Job] = i
		if tg.Count == 0 {
			continue
		}
		t, ok := s.ix.typeNum[tg.Type]
		if !ok {
			return RoundResult{}, fmt.Errorf("%w: targets[%d] (%q) type %q", ErrUnknownType, i, tg.Job, tg.Type)
		}
		typ[i] = t
		r := Request{Job: tg.Job, Count: tg.Count, MaxNodes: tg.MaxNodes}
		if l := s.ix.limit(t, &r); tg.Count > l {
			return RoundResult{}, fmt.Errorf("%w: targets[%d] (%q) asks %d %s devices, at most %d fit on max_nodes %d", ErrImpossible, i, tg.Job, tg.Count, tg.Type, l, tg.MaxNodes)
		}
	}
	if p.Strategy < Pack || p.Strategy > Spread {
		return RoundResult{}, fmt.Errorf("%w: placer strategy %d", ErrInvalid, p.Strategy)
	}

	st := s.Clone()
	before := make([]jobUse, 0, st.jobs.Len())
	st.jobs.Ascend(func(j jobUse) bool {
		before = append(before, j)
		return true
	})
	reasons := make(map[string]Reason)
	unhealthy := make(map[string]bool)
	var unplaced []Unplaced
	var relocate, grow, start []int // target indices

	// Phase 1 to 3: stop, keep, release faulty devices, shrink.
	held := make([]bool, len(targets)) // by target: its job holds devices
	for _, j := range before {
		i, ok := byJob[j.job]
		if ok {
			held[i] = true
		}
		if !ok || targets[i].Count == 0 {
			st.releaseDevs(j, j.devs)
			reasons[j.job] = Reason{ReasonStopped, "no devices targeted this round"}
			continue
		}
		tg, t := targets[i], typ[i]
		var bad []int32
		wrongType := false
		var nu *nodeUse // the usage of node at, the node of the last device
		at := int32(-1)
		for _, g := range j.devs {
			d := &st.ix.devs[g]
			if d.typ != t {
				wrongType = true
			}
			if d.node != at {
				nu, at = st.node(d.node), d.node
			}
			if nu.bad[d.slot]&(1<<d.bit) != 0 {
				bad = append(bad, g)
			}
		}
		if len(bad) > 0 {
			unhealthy[j.job] = true
			reasons[j.job] = Reason{ReasonUnhealthy, fmt.Sprintf("held %d unhealthy devices", len(bad))}
		}
		if wrongType {
			relocate = append(relocate, i)
			continue
		}
		if len(bad) > 0 {
			st.releaseDevs(j, bad)
			j, _ = st.jobs.Get(jobUse{job: j.job})
		}
		if len(j.devs) > tg.Count {
			st.shrink(j, tg.Count)
			j, _ = st.jobs.Get(jobUse{job: j.job})
		}
		switch {
		case len(j.devs) == 0: // every device was faulty
			relocate = append(relocate, i)
		case tg.MaxNodes > 0 && int(j.nodes) > tg.MaxNodes:
			relocate = append(relocate, i)
		case len(j.devs) < tg.Count:
			grow = append(grow, i)
		}
	}
	for i, tg := range targets {
		if tg.Count > 0 && !held[i] {
			start = append(start, i)
		}
	}
	largestFirst := func(idx []int) {
		slices.SortFunc(idx, func(a, b int) int {
			return cmp.Or(cmp.Compare(targets[b].Count, targets[a].Count), cmp.Compare(targets[a].Job, targets[b].Job))
		})
	}
	largestFirst(relocate)
	largestFirst(grow)
	largestFirst(start)

	fail := func(tg Target, why Reason) {
		unplaced = append(unplaced, Unplaced{Target: tg, Reason: why})
		reasons[tg.Job] = why
	}
	// replace re-places the job of target i from scratch; on failure it
	// restores its devices (or stops it when they include a faulty one).
	replace := func(i int) {
		tg, t := targets[i], typ[i]
		old, _ := st.jobs.Get(jobUse{job: tg.Job})
		if len(old.devs) > 0 {
			st.releaseDevs(old, old.devs)
		}
		r := Request{Job: tg.Job, Types: []accel.TypeKey{tg.Type}, Count: tg.Count, MaxNodes: tg.MaxNodes}
		takes, why := p.placeType(st, &r, t, tg.Count)
		if takes != nil {
			st.assignNew(tg.Job, st.devsOf(t, takes))
			return
		}
		if len(old.devs) > 0 && !unhealthy[tg.Job] {
			st.assignNew(tg.Job, old.devs)
		}
		fail(tg, why)
	}
	// Phase 4: growth in place first (it moves nothing), then the jobs
	// that must move, then growth again for those that could not grow
	// before the moves freed devices, re-placing them as a last resort.
	var pending []int
	for _, i := range grow {
		if !p.growInPlace(st, targets[i]) {
			pending = append(pending, i)
		}
	}
	for _, i := range relocate {
		replace(i)
	}
	for _, i := range pending {
		if !p.growInPlace(st, targets[i]) {
			replace(i)
		}
	}
	// Phase 5.
	for _, i := range start {
		replace(i)
	}

	// Decisions: merge the jobs before and after the round (both sorted).
	res := RoundResult{State: st, Decisions: make([]Decision, 0, st.jobs.Len()+len(before)/8)}
	// The decisions' device IDs, end to end: room for what was held and
	// what is used now (more is appended when it is not enough).
	room := 0
	for _, j := range before {
		room += len(j.devs)
	}
	for _, n := range st.usedTotal {
		room += n
	}
	ids := make([]string, 0, room)
	emit := func(job string, prev, after []int32) {
		d := Decision{Job: job, Reason: reasons[job]}
		switch {
		case len(prev) == 0 && len(after) == 0:
			return
		case len(prev) == 0:
			d.Action = Start
		case len(after) == 0:
			d.Action = Stop
		case slices.Equal(prev, after):
			d.Action = Keep
		case subset(prev, after):
			d.Action = Grow
		case subset(after, prev):
			d.Action = Shrink
		default:
			d.Action = Move
		}
		if len(after) > 0 {
			d.Devices = st.appendIDs(&ids, after)
			g := &st.ix.devs[after[0]]
			d.Type = st.ix.types[g.typ]
		}
		if len(prev) > 0 {
			d.Previous = st.appendIDs(&ids, prev)
		}
		res.Decisions = append(res.Decisions, d)
	}
	bi := 0
	st.jobs.Ascend(func(a jobUse) bool {
		for bi < len(before) && before[bi].job < a.job {
			emit(before[bi].job, before[bi].devs, nil)
			bi++
		}
		if bi < len(before) && before[bi].job == a.job {
			emit(a.job, before[bi].devs, a.devs)
			bi++
		} else {
			emit(a.job, nil, a.devs)
		}
		return true
	})
	for ; bi < len(before); bi++ {
		emit(before[bi].job, before[bi].devs, nil)
	}
	slices.SortFunc(unplaced, func(a, b Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	res.Unplaced = unplaced
	return res, nil
}

// subset reports whether every element of a (sorted) is in b (sorted).
func subset(a, b []int32) bool {
	i := 0
	for _, x := range b {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}

// assignNew records devices (sorted, free) for a job that holds none.
func (s *State) assignNew(job string, devs []int32) {
	s.addDevs(job, devs)
}

// shrink releases devices of job j until it holds keep, keeping the nodes
// where it holds most (ties by node name) and, within a node, the
// best-connected devices.
func (s *State) shrink(j jobUse, keep int) {
	holds := s.holdsOf(j.devs)
	var drop []int32
	for _, h := range holds {
		sl := &s.ix.nodes[h.node].slots[h.slot]
		c := min(bits.OnesCount64(h.mask), keep)
		kept := pick(sl, h.mask, c, 0)
		keep -= c
		for m := h.mask &^ kept; m != 0; m &= m - 1 {
			drop = append(drop, sl.devs[bits.TrailingZeros64(m)])
		}
	}
	slices.Sort(drop)
	s.releaseDevs(j, drop)
}

// growInPlace adds devices to a job next to those it holds: first on its
// own nodes (best connected to its devices), then on the fewest new nodes
// within MaxNodes. It reports false, changing nothing, when that cannot
// meet the target.
func (p *Chooser) growInPlace(s *State, tg Target) bool {
	j, _ := s.jobs.Get(jobUse{job: tg.Job})
	t := s.ix.typeNum[tg.Type]
	need := tg.Count - len(j.devs)
	r := Request{Job: tg.Job, Types: []accel.TypeKey{tg.Type}, Count: tg.Count, MaxNodes: tg.MaxNodes}
	sw := search{filters: true, interfere: !p.AllowInterference}
	holds := s.holdsOf(j.devs)
	var takes []take
	skip := make([]int32, 0, len(holds))
	for _, h := range holds {
		skip = append(skip, h.node)
		if need == 0 {
			continue
		}
		avail, sl, _ := s.avail(h.node, t)
		c := min(bits.OnesCount64(avail), need)
		if c == 0 {
			continue
		}
		takes = append(takes, take{h.node, pick(sl, avail, c, h.mask)})
		need -= c
	}
	if need > 0 {
		more := p.multi(s, &r, t, need, sw, skip)
		if more == nil {
			return false
		}
		takes = append(takes, more...)
	}
	// A job that becomes distributed must not share its own nodes with
	// another distributed job.
	if sw.interfere && len(nodesUnion(holds, takes)) > 1 {
		for _, h := range holds {
			for _, other := range s.node(h.node).dist {
				if other != tg.Job {
					return false
				}
			}
		}
	}
	s.assignNew(tg.Job, s.devsOf(t, takes))
	return true
}

// hold is the part of a job on one node and slot.
type hold struct {
	node int32
	slot int32
	mask uint64
}

// holdsOf groups a job's sorted devices by node and slot, most devices
// first (ties by node name).
func (s *State) holdsOf(devs []int32) []hold {
	var holds []hold
	for _, g := range devs {
		d := &s.ix.devs[g]
		if n := len(holds); n > 0 && holds[n-1].node == d.node && holds[n-1].slot == d.slot {
			holds[n-1].mask |= 1 << d.bit
		} else {
			holds = append(holds, hold{d.node, d.slot, 1 << d.bit})
		}
	}
	slices.SortStableFunc(holds, func(a, b hold) int {
		return cmp.Compare(bits.OnesCount64(b.mask), bits.OnesCount64(a.mask))
	})
	return holds
}

func nodesUnion(holds []hold, takes []take) []int32 {
	var out []int32
	for _, h := range holds {
		if !slices.Contains(out, h.node) {
			out = append(out, h.node)
		}
	}
	for _, tk := range takes {
		if !slices.Contains(out, tk.node) {
			out = append(out, tk.node)
		}
	}
	return out
}

// ActionOf classifies a job's change from the devices before to those
// after, as a plan reports it: Queue (none before or after), Stop (none
// after), Start (none before), Keep (the same devices, in any order),
// Grow (a superset of before), Shrink (a subset) or Move.
func ActionOf(before, after []string) Action {
	switch {
	case len(after) == 0 && len(before) > 0:
		return Stop
	case len(after) == 0:
		return Queue
	case len(before) == 0:
		return Start
	case SameDevices(after, before):
		return Keep
	case subsetIDs(before, after):
		return Grow
	case subsetIDs(after, before):
		return Shrink
	}
	return Move
}

// subsetIDs reports whether every device of a is in b.
func subsetIDs(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	if slices.Equal(a, b[:len(a)]) {
		return true // the common case: devices kept in the same order
	}
	if len(b) <= sameDevicesScan { // a few devices: comparing is cheaper than a set
		for _, id := range a {
			if !slices.Contains(b, id) {
				return false
			}
		}
		return true
	}
	set := make(map[string]bool, len(b))
	for _, id := range b {
		set[id] = true
	}
	for _, id := range a {
		if !set[id] {
			return false
		}
	}
	return true
}
