package placement

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"

	"github.com/goodsched/goodsched/accel"
)

// Request asks for a gang of devices for one job: all of them or none. It
// is a plain value; Place does not modify it.
type Request struct {
	// Job names the job; it must not be empty.
	Job string
	// Types are the device types the job may use; empty = every type of the
	// cluster. Without Values they are tried in this order.
	Types []accel.TypeKey
	// Values ranks the allowed types for heterogeneous placement, higher
	// first (for example the job's goodput per type); a type missing from
	// the map has value 0; ties keep the order of Types. Values must be
	// finite; entries for types that are not allowed are ignored, so a
	// map of goodput per type can be passed as it is.
	Values map[accel.TypeKey]float64
	// Count is the gang size, at least 1.
	Count int
	// MaxNodes limits how many nodes the gang may span (0 = any).
	MaxNodes int
	// SingleNode keeps the gang on one node (same as MaxNodes 1).
	SingleNode bool
	// SameIsland keeps the gang inside one NVLink island (a connected set
	// of NVLink-linked devices of one node); it implies SingleNode.
	SameIsland bool
	// SameNUMA keeps the gang on devices of one known NUMA node of one
	// node; devices whose NUMA node is unknown are never chosen. It implies
	// SingleNode.
	SameNUMA bool
}

// singleNode reports whether the request must stay on one node.
func (r *Request) singleNode() bool {
	return r.SingleNode || r.SameIsland || r.SameNUMA || r.MaxNodes == 1
}

// Strategy says which nodes a gang goes to.
type Strategy int

// Strategies. Every strategy puts a gang on one node when it can, and
// within a node takes the device set with the most NVLink connectivity.
const (
	// Pack (the default) puts a gang on the fewest nodes: on one node, the
	// one with the fewest free devices that still fit it (so whole nodes
	// stay free); across nodes, the nodes with the most free devices first
	// and the remainder on the tightest node that fits it.
	Pack Strategy = iota
	// BestFit keeps large gangs placeable: on one node like Pack; across
	// nodes it first uses the free devices of partly used nodes (most free
	// first) and breaks into idle nodes only for the rest, falling back to
	// Pack when that would exceed MaxNodes. Its multi-node search scans the
	// free nodes of the type (O(nodes)).
	BestFit
	// Spread puts a single-node gang on the node with the most free
	// devices (least loaded); across nodes it behaves like Pack.
	Spread
)

var strategyNames = [...]string{"pack", "best-fit", "spread"}

// String returns the strategy's name.
func (st Strategy) String() string {
	if st >= 0 && int(st) < len(strategyNames) {
		return strategyNames[st]
	}
	return "unknown"
}

// NodeInfo is what Filters and Scores see of a candidate node, for the
// request's device type.
type NodeInfo struct {
	// Name is the node's name.
	Name string
	// Type is the device type being placed.
	Type accel.TypeKey
	// Capacity counts the node's offerable devices of the type; Free, Used
	// and Unhealthy split them.
	Capacity, Free, Used, Unhealthy int
	// Distributed counts the distributed (multi-node) jobs on the node.
	Distributed int
}

// Filter rejects nodes for a request, like a Kubernetes filter plugin.
// Implementations must be deterministic and safe for concurrent use if the
// Chooser is used concurrently.
type Filter interface {
	// Name identifies the filter in reasons.
	Name() string
	// Filter reports whether the node may take part of the gang.
	Filter(r *Request, n NodeInfo) bool
}

// MaxScore is the highest score a Score may return; scores are clamped to
// [0, MaxScore].
const MaxScore = 100

// Score ranks the candidate nodes of a single-node placement, like a
// Kubernetes score plugin: the node with the highest sum of scores wins,
// ties going to the strategy's order.
type Score interface {
	// Name identifies the score.
	Name() string
	// Score rates the node for taking `take` devices of the gang.
	Score(r *Request, n NodeInfo, take int) int64
}

// FilterFunc adapts a function to a Filter.
type FilterFunc struct {
	// Label is the filter's name.
	Label string
	// Func reports whether the node may take part of the gang.
	Func func(r *Request, n NodeInfo) bool
}

// Name returns the label.
func (f FilterFunc) Name() string { return f.Label }

// Filter calls the function (a nil one accepts every node).
func (f FilterFunc) Filter(r *Request, n NodeInfo) bool { return f.Func == nil || f.Func(r, n) }

// ScoreFunc adapts a function to a Score.
type ScoreFunc struct {
	// Label is the score's name.
	Label string
	// Func rates the node in [0, MaxScore].
	Func func(r *Request, n NodeInfo, take int) int64
}

// Name returns the label.
func (f ScoreFunc) Name() string { return f.Label }

// Score calls the function (a nil one scores 0).
func (f ScoreFunc) Score(r *Request, n NodeInfo, take int) int64 {
	if f.Func == nil {
		return 0
	}
	return f.Func(r, n, take)
}

// ExcludeNodes returns a Filter that rejects the named nodes (for example
// nodes being drained).
func ExcludeNodes(names ...string) Filter {
	set := slices.Clone(names)
	slices.Sort(set)
	return FilterFunc{Label: "exclude-nodes", Func: func(_ *Request, n NodeInfo) bool {
		_, found := slices.BinarySearch(set, n.Name)
		return !found
	}}
}

// Chooser chooses devices for gangs. The zero value packs gangs onto the
// fewest nodes and avoids interference (at most one distributed job per
// node). A Chooser is a plain value: it is safe for concurrent use when its
// Filters and Scores are, as long as each goroutine uses its own State.
type Chooser struct {
	// Strategy picks nodes; zero = Pack.
	Strategy Strategy
	// Filters reject nodes, in order; every node must pass all of them.
	Filters []Filter
	// Scores rank the first Window feasible nodes of a single-node
	// placement (in the strategy's order); none = take the first.
	Scores []Score
	// Window is how many feasible nodes Scores rank (0 = 16).
	Window int
	// AllowInterference turns interference avoidance off: distributed jobs
	// may then share nodes.
	AllowInterference bool
}

// take is part of a gang: a mask of devices on one node.
type take struct {
	node int32
	mask uint64
}

// Place chooses devices for the request on s, all or nothing. It does not
// change s: commit the result with s.Assign. Devices already held by the
// job are ignored (it places a fresh gang).
//
// A malformed request is an error wrapping ErrInvalid, ErrUnknownType or
// ErrImpossible. A valid request that does not fit now returns a
// *NoFitError (errors.Is(err, ErrNoFit)) carrying the reason; Round
// reports the same reasons as results.
func (p *Chooser) Place(s *State, r Request) (Assignment, error) {
	if !s.usable() {
		return Assignment{}, errNoState
	}
	var buf [8]int32
	types, err := p.check(s, &r, buf[:0])
	if err != nil {
		return Assignment{}, err
	}
	var first Reason
	for i, t := range types {
		takes, reason := p.placeType(s, &r, t, r.Count)
		if takes != nil {
			return Assignment{Job: r.Job, Devices: s.ids(s.devsOf(t, takes))}, nil
		}
		switch {
		case len(types) == 1:
			first = reason
		case i == 0:
			first = Reason{reason.Code, fmt.Sprintf("%s: %s", s.ix.types[t], reason.Text)}
		default:
			first.Text += fmt.Sprintf("; %s: %s", s.ix.types[t], reason.Text)
		}
	}
	return Assignment{}, &NoFitError{Job: r.Job, Reason: first}
}

// check validates the request and returns the type numbers to try, best
// first.
func (p *Chooser) check(s *State, r *Request, types []int32) ([]int32, error) {
	switch {
	case r.Job == "":
		return nil, fmt.Errorf("%w: request job is empty", ErrInvalid)
	case r.Count < 1:
		return nil, fmt.Errorf("%w: request %q count %d is below 1", ErrInvalid, r.Job, r.Count)
	case r.MaxNodes < 0:
		return nil, fmt.Errorf("%w: request %q max_nodes %d is negative", ErrInvalid, r.Job, r.MaxNodes)
	case r.MaxNodes > 1 && (r.SingleNode || r.SameIsland || r.SameNUMA):
		return nil, fmt.Errorf("%w: request %q asks for one node (single_node, same_island or same_numa) and max_nodes %d", ErrImpossible, r.Job, r.MaxNodes)
	case p.Strategy < Pack || p.Strategy > Spread:
		return nil, fmt.Errorf("%w: placer strategy %d", ErrInvalid, p.Strategy)
	}
	if len(r.Types) == 0 {
		for i := range s.ix.types {
			types = append(types, int32(i))
		}
	} else {
		for i, key := range r.Types {
			t, ok := s.ix.typeNum[key]
			if !ok {
				return nil, fmt.Errorf("%w: request %q types[%d] %q", ErrUnknownType, r.Job, i, key)
			}
			if slices.Contains(types, t) {
				return nil, fmt.Errorf("%w: request %q types[%d] %q is repeated", ErrInvalid, r.Job, i, key)
			}
			types = append(types, t)
		}
	}
	if len(r.Values) > 0 {
		for _, key := range slices.Sorted(maps.Keys(r.Values)) {
			if v := r.Values[key]; math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: request %q values[%q] is %v", ErrInvalid, r.Job, key, v)
			}
		}
		slices.SortStableFunc(types, func(a, b int32) int {
			return cmp.Compare(r.Values[s.ix.types[b]], r.Values[s.ix.types[a]])
		})
	}
	possible := types[:0]
	for _, t := range types {
		if s.ix.limit(t, r) >= r.Count {
			possible = append(possible, t)
		}
	}
	if len(possible) == 0 {
		return nil, fmt.Errorf("%w: request %q for %d devices exceeds what any allowed type offers under its constraints", ErrImpossible, r.Job, r.Count)
	}
	return possible, nil
}

// limit is the largest gang of type t the request's constraints allow on
// the empty, healthy cluster.
func (ix *shape) limit(t int32, r *Request) int {
	if r.singleNode() {
		l := ix.maxNode[t]
		if r.SameIsland {
			l = min(l, ix.maxIsland[t])
		}
		if r.SameNUMA {
			l = min(l, ix.maxNUMA[t])
		}
		return l
	}
	top := ix.capTop[t]
	if r.MaxNodes > 0 && r.MaxNodes < len(top) {
		return top[r.MaxNodes]
	}
	return top[len(top)-1]
}

// devsOf turns takes of type t into sorted device numbers.
func (s *State) devsOf(t int32, takes []take) []int32 {
	n := 0
	for _, tk := range takes {
		n += bits.OnesCount64(tk.mask)
	}
	devs := make([]int32, 0, n)
	for _, tk := range takes {
		sl := s.ix.slot(tk.node, t)
		for m := tk.mask; m != 0; m &= m - 1 {
			devs = append(devs, sl.devs[bits.TrailingZeros64(m)])
		}
	}
	slices.Sort(devs)
	return devs
}

// avail returns the free mask of type t on node n, and the slot.
func (s *State) avail(n, t int32) (uint64, *slotInfo, *nodeUse) {
	info := &s.ix.nodes[n]
	si := info.slotOf[t]
	sl := &info.slots[si]
	u := s.node(n)
	return sl.offer &^ u.used[si] &^ u.bad[si], sl, u
}

func (s *State) nodeInfo(n, t int32) NodeInfo {
	info := &s.ix.nodes[n]
	si := info.slotOf[t]
	sl := &info.slots[si]
	u := s.node(n)
	return NodeInfo{
		Name:        info.name,
		Type:        s.ix.types[t],
		Capacity:    bits.OnesCount64(sl.offer),
		Free:        bits.OnesCount64(sl.offer &^ u.used[si] &^ u.bad[si]),
		Used:        bits.OnesCount64(sl.offer & u.used[si]),
		Unhealthy:   bits.OnesCount64(sl.offer & u.bad[si]),
		Distributed: len(u.dist),
	}
}

// search holds the switches of one placement attempt; the diagnosis
// retries with some of them relaxed.
type search struct {
	filters   bool // apply the Chooser's Filters
	interfere bool // avoid nodes with other distributed jobs
}

func (p *Chooser) passes(s *State, r *Request, n, t int32, sw search) bool {
	if !sw.filters || len(p.Filters) == 0 {
		return true
	}
	info := s.nodeInfo(n, t)
	for _, f := range p.Filters {
		if !f.Filter(r, info) {
			return false
		}
	}
	return true
}

// placeType places k devices of type t, or says why it cannot.
func (p *Chooser) placeType(s *State, r *Request, t int32, k int) ([]take, Reason) {
	if free := s.freeTotal[t]; free < k {
		return nil, Reason{ReasonCapacity, fmt.Sprintf("%d free %s devices, %d asked", free, s.ix.types[t], k)}
	}
	sw := search{filters: true, interfere: !p.AllowInterference}
	if tk, ok := p.single(s, r, t, k, sw); ok {
		return []take{tk}, Reason{}
	}
	if !r.singleNode() {
		if takes := p.multi(s, r, t, k, sw, nil); takes != nil {
			return takes, Reason{}
		}
	}
	return nil, p.diagnose(s, r, t, k, sw)
}

// diagnose explains why placeType failed.
func (p *Chooser) diagnose(s *State, r *Request, t int32, k int, sw search) Reason {
	key := s.ix.types[t]
	largest := 0
	if m, ok := s.free[t].Max(); ok {
		largest = int(m.free)
	}
	if r.singleNode() {
		if largest < k {
			return Reason{ReasonFragmented, fmt.Sprintf("%d free %s devices but at most %d on one node, %d asked on one node", s.freeTotal[t], key, largest, k)}
		}
		if _, ok := p.single(s, r, t, k, search{}); ok && len(p.Filters) > 0 {
			return Reason{ReasonFiltered, fmt.Sprintf("filters rejected every node with %d free %s devices", k, key)}
		}
		return Reason{ReasonTopology, fmt.Sprintf("no node has %d free %s devices in one NVLink island or NUMA node", k, key)}
	}
	if p.multi(s, r, t, k, search{}, nil) == nil {
		return Reason{ReasonFragmented, fmt.Sprintf("%d free %s devices but not %d on %d nodes", s.freeTotal[t], key, k, max(r.MaxNodes, 1))}
	}
	if sw.interfere && p.multi(s, r, t, k, search{filters: true}, nil) != nil {
		return Reason{ReasonInterference, fmt.Sprintf("%d %s devices fit only on nodes that already run a distributed job", k, key)}
	}
	return Reason{ReasonFiltered, fmt.Sprintf("filters rejected the nodes that could take %d %s devices", k, key)}
}

// single finds one node for k devices of type t.
func (p *Chooser) single(s *State, r *Request, t int32, k int, sw search) (take, bool) {
	window := p.Window
	if window <= 0 {
		window = 16
	}
	score := sw.filters && len(p.Scores) > 0
	var best take
	found := false
	var cands []take
	visit := func(key freeKey) bool {
		if int(key.free) < k {
			return false
		}
		avail, sl, _ := s.avail(key.node, t)
		g := groupFor(sl, avail, k, r.SameIsland, r.SameNUMA)
		if g == 0 || !p.passes(s, r, key.node, t, sw) {
			return true
		}
		tk := take{key.node, g}
		if !score {
			best, found = tk, true
			return false
		}
		cands = append(cands, tk)
		return len(cands) < window
	}
	if p.Strategy == Spread {
		s.descendFree(t, k, visit)
	} else {
		s.free[t].AscendGreaterOrEqual(freeKey{int32(k), -1}, visit)
	}
	if score {
		bestScore := int64(-1)
		for _, c := range cands {
			info := s.nodeInfo(c.node, t)
			var total int64
			for _, sc := range p.Scores {
				total += min(max(sc.Score(r, info, k), 0), MaxScore)
			}
			if total > bestScore {
				best, bestScore, found = c, total, true
			}
		}
	}
	if !found {
		return take{}, false
	}
	sl := s.ix.slot(best.node, t)
	best.mask = pick(sl, best.mask, k, 0)
	return best, true
}

// eligible reports whether node n may take part of a multi-node gang of
// job r.Job.
func (p *Chooser) eligible(s *State, r *Request, n, t int32, sw search) bool {
	if sw.interfere {
		for _, j := range s.node(n).dist {
			if j != r.Job {
				return false
			}
		}
	}
	return p.passes(s, r, n, t, sw)
}

// multi finds nodes for k devices of type t on at most r.MaxNodes nodes
// (fewer when some are fixed), avoiding the nodes in skip.
func (p *Chooser) multi(s *State, r *Request, t int32, k int, sw search, skip []int32) []take {
	limit := r.MaxNodes
	if limit == 0 {
		limit = math.MaxInt
	}
	limit -= len(skip)
	if limit < 1 {
		return nil
	}
	if p.Strategy == BestFit {
		if takes := p.fragmentsFirst(s, r, t, k, sw, skip, limit); takes != nil {
			return takes
		}
	}
	return p.packMulti(s, r, t, k, sw, skip, limit, false)
}

// packMulti takes the nodes with the most free devices and puts the
// remainder on the tightest node that fits it. With idleOnly, only nodes
// with no used device of the type are considered.
func (p *Chooser) packMulti(s *State, r *Request, t int32, k int, sw search, skip []int32, limit int, idleOnly bool) []take {
	var takes []take
	remaining := k
	ok := false
	var skipped map[int32]bool // a set only for a gang over many nodes
	if len(skip) > 16 {
		skipped = make(map[int32]bool, len(skip))
		for _, n := range skip {
			skipped[n] = true
		}
	}
	usable := func(n int32) bool {
		if (skipped != nil && skipped[n]) || (skipped == nil && slices.Contains(skip, n)) || !p.eligible(s, r, n, t, sw) {
			return false
		}
		if idleOnly {
			si := s.ix.nodes[n].slotOf[t]
			return s.node(n).used[si]&s.ix.nodes[n].slots[si].offer == 0
		}
		return true
	}
	s.descendFree(t, 1, func(key freeKey) bool {
		if !usable(key.node) {
			return true
		}
		if int(key.free) >= remaining {
			ok = true
			return false
		}
		if len(takes)+1 >= limit {
			return false
		}
		avail, _, _ := s.avail(key.node, t)
		takes = append(takes, take{key.node, avail})
		remaining -= int(key.free)
		return true
	})
	if !ok {
		return nil
	}
	var taken map[int32]bool // a set only for a gang over many nodes
	if len(takes) > 16 {
		taken = make(map[int32]bool, len(takes))
		for _, tk := range takes {
			taken[tk.node] = true
		}
	}
	s.free[t].AscendGreaterOrEqual(freeKey{int32(remaining), -1}, func(key freeKey) bool {
		if !usable(key.node) || (taken != nil && taken[key.node]) || (taken == nil && slices.ContainsFunc(takes, func(tk take) bool { return tk.node == key.node })) {
			return true
		}
		avail, sl, _ := s.avail(key.node, t)
		takes = append(takes, take{key.node, pick(sl, avail, remaining, 0)})
		remaining = 0
		return false
	})
	if remaining != 0 {
		return nil
	}
	return takes
}

// fragmentsFirst fills the partly used nodes (most free first), then idle
// nodes; it returns nil when that needs more than limit nodes.
func (p *Chooser) fragmentsFirst(s *State, r *Request, t int32, k int, sw search, skip []int32, limit int) []take {
	var takes []take
	remaining := k
	s.descendFree(t, 1, func(key freeKey) bool {
		if len(takes) >= limit {
			return false
		}
		n := key.node
		si := s.ix.nodes[n].slotOf[t]
		if s.node(n).used[si]&s.ix.nodes[n].slots[si].offer == 0 || slices.Contains(skip, n) || !p.eligible(s, r, n, t, sw) {
			return true
		}
		avail, sl, _ := s.avail(n, t)
		c := min(int(key.free), remaining)
		takes = append(takes, take{n, pick(sl, avail, c, 0)})
		remaining -= c
		return remaining > 0
	})
	if remaining == 0 {
		return takes
	}
	if len(takes) >= limit {
		return nil
	}
	skip2 := append(slices.Clone(skip), nodesOf(takes)...)
	rest := p.packMulti(s, r, t, remaining, sw, skip2, limit-len(takes), true)
	if rest == nil {
		return nil
	}
	return append(takes, rest...)
}

func nodesOf(takes []take) []int32 {
	out := make([]int32, len(takes))
	for i, tk := range takes {
		out[i] = tk.node
	}
	return out
}
