// Package palplace holds the placers of PAL (Jain et al., SC'24) as
// placement.Placer implementations: PAL, PM-First and their baseline
// Packed-Sticky. They compute what PAL's artifact (hal-uw/blox-pal,
// placement/pal.py, pmfirst.py, packing_sticky.py) computes, on the
// per-device slowdowns of the round (placement.PlaceInput.Speeds, for
// example a variability.Estimator's snapshot).
//
// All three are sticky by default: a job whose current devices still
// meet its target keeps them, and the others are placed one by one on the
// free devices. Packed-Sticky places them in job order; PAL and PM-First
// order them by application class (A, B, C, D: the most
// variability-sensitive first) as PAL reorders its queue, when the Speeds
// know classes (an optional Class(job) string method, as
// variability.Speeds has). PAL's artifact re-places every job each round,
// which its simulator charges nothing for; in goodsched a job moved to
// other devices restarts, so that is an option (Replace).
//
// With no Speeds every device counts as nominal (slowdown 1, no locality
// penalty). The placers are stateless and safe for concurrent use.
package palplace

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// PackedSticky is PAL's baseline placer, Packed-Sticky: a new gang goes on
// the node whose free devices of its type match its size exactly, else on
// the node with the fewest free devices that still fits it, else across
// nodes, the node with the most free devices first. It ignores device
// speed.
type PackedSticky struct{}

// PMFirst is PAL's PM-First placer: a new gang takes the free devices with
// the lowest slowdown for its job, ties broken by best-match locality
// (devices of a node whose count of equally fast free devices is closest
// to the gang's size first).
type PMFirst struct {
	// Replace re-places every job each round, as PAL's artifact does (a
	// job that gets other devices restarts); the default keeps a running
	// job's devices while they meet its target.
	Replace bool
	// Evict re-places a running job whose slowest device runs at least
	// this many times slower than nominal for it (an interference episode
	// began under it; the locality penalty does not count), > 1; 0 =
	// never. Ignored with Replace.
	Evict float64
}

// PAL is PAL's placer: it walks the (slowdown, locality) options of the
// job in the order of slowdown × locality penalty (within a node the
// penalty is 1, across nodes the job's LocalityPenalty). For a gang that
// fits on one node, a within-node option takes the node whose best free
// devices have the lowest largest slowdown, among devices no slower than
// the option's; an across-node option takes PM-First's choice among
// them. Single-device gangs and gangs larger than a node are placed by
// PM-First.
type PAL struct {
	// Replace re-places every job each round, as PAL's artifact does (a
	// job that gets other devices restarts); the default keeps a running
	// job's devices while they meet its target.
	Replace bool
	// Evict re-places a running job whose slowest device runs at least
	// this many times slower than nominal for it (an interference episode
	// began under it; the locality penalty does not count), > 1; 0 =
	// never. Ignored with Replace.
	Evict float64
}

var (
	_ placement.Placer    = PackedSticky{}
	_ placement.Placer    = PMFirst{}
	_ placement.Placer    = PAL{}
	_ placement.StateUser = PAL{}
	_ placement.StateUser = PMFirst{}
	_ placement.StateUser = PackedSticky{}
)

// UsesState implements placement.StateUser: the placers work from the
// index and the current assignments only.
func (PackedSticky) UsesState() bool { return false }

// UsesState implements placement.StateUser.
func (PMFirst) UsesState() bool { return false }

// UsesState implements placement.StateUser.
func (PAL) UsesState() bool { return false }

// Place implements placement.Placer.
func (PackedSticky) Place(ctx context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	return place(ctx, in, math.Inf(1), false, (*pool).packed)
}

// Place implements placement.Placer.
func (p PMFirst) Place(ctx context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	return place(ctx, in, keepBelow(p.Replace, p.Evict), true, (*pool).pmFirst)
}

// Place implements placement.Placer.
func (p PAL) Place(ctx context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	return place(ctx, in, keepBelow(p.Replace, p.Evict), true, (*pool).pal)
}

// layout is an index's usable devices per type, numbered for the
// placers: built once per index (placement.Index.Derived) and shared,
// read-only, by every Place call on it.
type layout struct {
	types []*typeLayout // by type position (Index.TypeIndex)
	pos   []int32       // by device number: its position in its type's layout, −1 if not usable
}

// typeLayout is one device type's usable devices of an index.
type typeLayout struct {
	ids     []string // by node, then index
	node    []int    // node number of each
	byNode  [][]int  // per node number, its devices (positions)
	perNode int      // the most devices of the type on one node
}

// layoutKey is the placement.Index.Derived key of the layout.
type layoutKey struct{}

func layoutOf(x *placement.Index) *layout {
	return x.Derived(layoutKey{}, func() any {
		l := &layout{types: make([]*typeLayout, len(x.Types())), pos: make([]int32, x.Devices())}
		for i := range l.pos {
			l.pos[i] = -1
		}
		for k := range l.types {
			l.types[k] = &typeLayout{byNode: make([][]int, x.Nodes())}
		}
		for n := range x.Nodes() {
			_, devs := x.Node(n)
			for _, d := range devs {
				k, _ := x.TypeIndex(d.Type)
				r, ok := x.Ref(d.ID)
				if !ok || !d.Usable() {
					continue
				}
				t := l.types[k]
				l.pos[r.Num] = int32(len(t.ids))
				t.byNode[n] = append(t.byNode[n], len(t.ids))
				t.ids = append(t.ids, d.ID)
				t.node = append(t.node, n)
				t.perNode = max(t.perNode, len(t.byNode[n]))
			}
		}
		return l
	}).(*layout)
}

// pool is one device type's usable devices during a Place call, with
// the free ones marked, and per speed key (a class, or a job when the
// Speeds know no classes) each device's slowdown and the devices sorted
// by it.
type pool struct {
	*typeLayout
	typ   int // its position in the index's types; −1 for one it lacks
	free  []bool
	nfree int
	sf    map[string]*speedView
	count []int // scratch, per node; zero between uses
	// scratch of view and pmFirst
	bucket []uint8
	group  []int
	runs   []run
	sorted []run
	keys   []int
}

// run is a node's free devices within a group of equal slowdown:
// group[start:end], with its locality key.
type run struct{ start, end, key int }

// speedView is one speed key's slowdown per device and the devices in
// order of slowdown (then position).
type speedView struct {
	sf    []float64
	order []int
}

// quantum groups slowdowns that differ by less than this (PAL's factors
// are bin centroids; learned ones are continuous).
const quantum = 1e-3

// maxBuckets is the most distinct factors view buckets before it sorts.
const maxBuckets = 32

// gang is one target being placed, with the view of its speed key.
type gang struct {
	t       placement.Target
	v       *speedView
	penalty float64
}

// bulkSpeeds is an optional interface of placement.Speeds that gives a
// job's slowdowns on many devices at once (variability.Speeds has it).
type bulkSpeeds interface {
	Slowdowns(job string, devices []string, out []float64)
}

// classer is what PAL and PM-First use to order jobs by class.
type classer interface{ Class(job string) string }

func (p *pool) view(sp placement.Speeds, job string) *speedView {
	key := job
	if cl, ok := sp.(classer); ok {
		key = "\x00" + cl.Class(job)
	}
	if sp == nil {
		key = ""
	}
	if v, ok := p.sf[key]; ok {
		return v
	}
	n := len(p.ids)
	v := &speedView{sf: make([]float64, n), order: make([]int, n)}
	switch b := sp.(type) {
	case nil:
		for i := range v.sf {
			v.sf[i] = 1
		}
	case bulkSpeeds:
		b.Slowdowns(job, p.ids, v.sf)
	default:
		for i, id := range p.ids {
			v.sf[i] = sp.Slowdown(job, id)
		}
	}
	// Few distinct factors (PAL's bins): a counting sort by factor,
	// stable by position. Many (learned ones): a comparison sort.
	var vals [maxBuckets]float64
	nv := 0
	p.bucket = slices.Grow(p.bucket[:0], n)[:n]
	for i := range v.sf {
		f := math.Round(v.sf[i]/quantum) * quantum
		v.sf[i] = f
		if nv > maxBuckets {
			continue
		}
		k := slices.Index(vals[:nv], f)
		if k < 0 {
			if nv == maxBuckets {
				nv++ // too many
				continue
			}
			k = nv
			vals[k] = f
			nv++
		}
		p.bucket[i] = uint8(k)
	}
	if nv <= maxBuckets {
		var rank, start [maxBuckets]int
		for k := range nv {
			for j := range nv {
				if vals[j] < vals[k] {
					rank[k]++
				}
			}
		}
		var size [maxBuckets]int
		for _, k := range p.bucket {
			size[rank[k]]++
		}
		for r := 1; r < nv; r++ {
			start[r] = start[r-1] + size[r-1]
		}
		for i, k := range p.bucket {
			r := rank[k]
			v.order[start[r]] = i
			start[r]++
		}
	} else {
		for i := range v.order {
			v.order[i] = i
		}
		slices.SortFunc(v.order, func(a, b int) int { return cmp.Or(cmp.Compare(v.sf[a], v.sf[b]), cmp.Compare(a, b)) })
	}
	p.sf[key] = v
	return v
}

// keepBelow is the gang slowdown below which a running job keeps its
// devices: 0 to re-place every job, +Inf to keep every job.
func keepBelow(replace bool, evict float64) float64 {
	switch {
	case replace:
		return 0
	case evict > 1:
		return evict
	}
	return math.Inf(1)
}

func place(ctx context.Context, in placement.PlaceInput, keepBelow float64, byClass bool, choose func(*pool, *gang) []int) (placement.PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return placement.PlaceResult{}, err
	}
	x := in.Cluster
	l := layoutOf(x)
	pools := make([]*pool, len(l.types)) // by type position; only the targets' types
	var absent map[accel.TypeKey]*pool   // types the cluster lacks: no devices
	newPool := func(tl *typeLayout, typ int) *pool {
		p := &pool{typeLayout: tl, typ: typ, free: make([]bool, len(tl.ids)), nfree: len(tl.ids),
			sf: map[string]*speedView{}, count: make([]int, x.Nodes())}
		for i := range p.free {
			p.free[i] = true
		}
		return p
	}
	poolOf := func(t accel.TypeKey) *pool {
		k, ok := x.TypeIndex(t)
		if !ok {
			if absent[t] == nil {
				absent = map[accel.TypeKey]*pool{t: newPool(&typeLayout{byNode: make([][]int, x.Nodes())}, -1)}
			}
			return absent[t]
		}
		if pools[k] == nil {
			pools[k] = newPool(l.types[k], k)
		}
		return pools[k]
	}
	cur := make(map[string][]string, len(in.Current))
	for _, a := range in.Current {
		cur[a.Job] = a.Devices
	}
	var res placement.PlaceResult
	kept := make([]bool, len(in.Targets))
	todo := make([]int, 0, len(in.Targets)) // target positions
	var refs []placement.DeviceRef
	for ti, t := range in.Targets {
		p := poolOf(t.Type)
		devs := cur[t.Job]
		keep := keepBelow > 0 && len(devs) == t.Count
		refs = refs[:0]
		if keep {
			refs, keep = x.AppendRefs(refs, devs)
		}
		for _, r := range refs {
			if i := l.pos[r.Num]; !keep || i < 0 || r.Type != p.typ || !p.free[i] {
				keep = false
				break
			}
		}
		if keep && !math.IsInf(keepBelow, 1) {
			keep = worstDevice(in.Speeds, t.Job, devs) < keepBelow // devices only: spanning nodes is no episode
		}
		if keep && (t.MaxNodes <= 0 || x.NodesOf(devs) <= t.MaxNodes) {
			for _, r := range refs {
				if i := l.pos[r.Num]; p.free[i] { // a device listed twice is taken once
					p.free[i] = false
					p.nfree--
				}
			}
			kept[ti] = true
			continue
		}
		todo = append(todo, ti)
	}
	if cl, ok := in.Speeds.(classer); ok && byClass {
		var byRank [5][]int // a stable bucket sort by class
		for _, ti := range todo {
			r := classRank(cl.Class(in.Targets[ti].Job))
			byRank[r] = append(byRank[r], ti)
		}
		todo = slices.Concat(byRank[:]...)
	}
	placed := make([][]string, len(in.Targets))
	for k, ti := range todo {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return placement.PlaceResult{}, err
			}
		}
		t := in.Targets[ti]
		p := poolOf(t.Type)
		if p.nfree < t.Count {
			res.Unplaced = append(res.Unplaced, placement.Unplaced{
				Target: placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes},
				Reason: placement.Reason{Code: placement.ReasonCapacity, Text: fmt.Sprintf("only %d free %s devices for %d", p.nfree, t.Type, t.Count)}})
			continue
		}
		g := &gang{t: t, penalty: 1}
		if in.Speeds != nil {
			g.penalty = in.Speeds.LocalityPenalty(t.Job)
		}
		if byClass { // PackedSticky reads no speeds
			g.v = p.view(in.Speeds, t.Job)
		}
		pick := choose(p, g)
		if nodes := p.nodesOf(pick); t.MaxNodes > 0 && nodes > t.MaxNodes {
			res.Unplaced = append(res.Unplaced, placement.Unplaced{
				Target: placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes},
				Reason: placement.Reason{Code: placement.ReasonFragmented, Text: fmt.Sprintf("%d %s devices span %d nodes, more than %d", t.Count, t.Type, nodes, t.MaxNodes)}})
			continue
		}
		ids := make([]string, len(pick))
		for i, d := range pick {
			ids[i] = p.ids[d]
			p.free[d] = false
		}
		p.nfree -= len(pick)
		placed[ti] = ids
	}
	for ti, t := range in.Targets { // in job order
		switch {
		case kept[ti]:
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: slices.Clone(cur[t.Job])})
		case placed[ti] != nil:
			res.Assignments = append(res.Assignments, placement.Assignment{Job: t.Job, Devices: placed[ti]})
		}
	}
	slices.SortStableFunc(res.Unplaced, func(a, b placement.Unplaced) int { return cmp.Compare(a.Target.Job, b.Target.Job) })
	return res, nil
}

// nodesOf is how many nodes the devices span.
func (p *pool) nodesOf(devs []int) int {
	n := 0
	for _, d := range devs {
		if p.count[p.node[d]] == 0 {
			n++
		}
		p.count[p.node[d]]++
	}
	for _, d := range devs {
		p.count[p.node[d]] = 0
	}
	return n
}

// classRank orders PAL's classes A, B, C, D, then anything else.
func classRank(c string) int {
	if i := slices.Index([]string{"classA", "classB", "classC", "classD"}, c); i >= 0 {
		return i
	}
	return 4
}

// packed is Packed-Sticky's consolidated choice (packing_sticky.py,
// _consolidated_placement): the first node with exactly n free devices,
// else the first node with the fewest free devices ≥ n, else nodes by
// most free devices first (node order on ties), as many from each as
// still needed. The caller ensures n devices are free.
func (p *pool) packed(g *gang) []int {
	n := g.t.Count
	freeOn := p.count
	defer clear(freeOn)
	best := -1
	for nd, devs := range p.byNode {
		freeOn[nd] = 0
		for _, d := range devs {
			if p.free[d] {
				freeOn[nd]++
			}
		}
		if freeOn[nd] >= n && (best < 0 || freeOn[nd] < freeOn[best]) {
			best = nd
		}
	}
	out := make([]int, 0, n)
	takeFrom := func(nd, k int) {
		for _, d := range p.byNode[nd] {
			if k == 0 {
				break
			}
			if p.free[d] && !slices.Contains(out, d) {
				out = append(out, d)
				k--
			}
		}
	}
	if best >= 0 {
		takeFrom(best, n)
		return out
	}
	for len(out) < n {
		m := 0
		for nd := range freeOn {
			if freeOn[nd] > freeOn[m] {
				m = nd
			}
		}
		k := min(freeOn[m], n-len(out))
		takeFrom(m, k)
		freeOn[m] -= k
	}
	return out
}

// pmFirst picks n of the free devices by slowdown, then best-match
// locality: how far the count of the node's free devices with the same
// slowdown is from n (pmfirst.py, _return_pmfirst_gpus); ties by device
// order.
func (p *pool) pmFirst(g *gang) []int {
	n := g.t.Count
	v := g.v
	out := make([]int, 0, n)
	for i := 0; i < len(v.order) && len(out) < n; {
		// One group of equal slowdown: its free devices, in device order
		// (so a node's are consecutive).
		group := p.group[:0]
		sf := v.sf[v.order[i]]
		for ; i < len(v.order) && v.sf[v.order[i]] == sf; i++ {
			if d := v.order[i]; p.free[d] {
				group = append(group, d)
			}
		}
		p.group = group
		// Its runs (a node's devices), stably by how far their size is
		// from n: a counting sort on that distance.
		runs, maxKey := p.runs[:0], 0
		for s := 0; s < len(group); {
			e := s + 1
			for e < len(group) && p.node[group[e]] == p.node[group[s]] {
				e++
			}
			runs = append(runs, run{start: s, end: e, key: abs(e - s - n)})
			maxKey = max(maxKey, abs(e-s-n))
			s = e
		}
		p.runs = runs
		if len(runs) > 1 {
			keys := slices.Grow(p.keys[:0], maxKey+1)[:maxKey+1]
			clear(keys)
			for _, r := range runs {
				keys[r.key]++
			}
			for k, at := 0, 0; k <= maxKey; k++ {
				keys[k], at = at, at+keys[k]
			}
			sorted := slices.Grow(p.sorted[:0], len(runs))[:len(runs)]
			for _, r := range runs {
				sorted[keys[r.key]] = r
				keys[r.key]++
			}
			p.keys, p.sorted = keys, sorted
			runs = sorted
		}
		for _, r := range runs {
			out = append(out, group[r.start:min(r.end, r.start+n-len(out))]...)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

func abs(v int) int { return max(v, -v) }

// pal is PAL's choice (pal.py, _pal_placement). PAL walks its options
// (each device factor f within a node at cost f, and across nodes at cost
// f × penalty) in cost order and takes the first it can meet. Walking is
// not needed: the first within-node option it can meet is W, the least
// over nodes of the node's n-th lowest free factor, and the first
// across-node one is A, the n-th lowest free factor overall; PAL takes
// the cheaper of W and A × penalty (on a tie, the option it listed
// first: the factor seen first among all devices, within before across).
// Across nodes, PM-First among the devices no slower than A is PM-First
// among all. One pass over the devices in order of slowdown finds both.
func (p *pool) pal(g *gang) []int {
	n := g.t.Count
	if n <= 1 || n > p.perNode {
		return p.pmFirst(g)
	}
	v := g.v
	best, seen := -1, 0
	a, w := 0.0, 0.0
	for i := 0; i < len(v.order) && best < 0; {
		sf := v.sf[v.order[i]]
		for ; i < len(v.order) && v.sf[v.order[i]] == sf; i++ {
			if d := v.order[i]; p.free[d] {
				nd := p.node[d]
				p.count[nd]++
				if seen++; seen == n {
					a = sf
				}
				// After the whole group: the node with n or more devices
				// no slower than sf, the most of them (PAL walks nodes by
				// that count), then the first. Counts only grow, so the
				// node that reaches the largest count last is it, unless
				// a node before it has as many.
				if c := p.count[nd]; c >= n && (best < 0 || c > p.count[best] || c == p.count[best] && nd < best) {
					best = nd
				}
			}
		}
		if best >= 0 {
			w = sf
		}
	}
	clear(p.count)
	if best < 0 || !(w < a*g.penalty || w == a*g.penalty && listedFirst(v, w, a)) {
		return p.pmFirst(g)
	}
	out := make([]int, 0, n)
	for _, d := range v.order { // the node's n fastest free devices
		if p.free[d] && p.node[d] == best {
			if out = append(out, d); len(out) == n {
				break
			}
		}
	}
	return out
}

// listedFirst reports whether PAL lists factor w's within-node option
// before factor a's across-node one: w appears among the devices (in
// device order) no later than a does.
func listedFirst(v *speedView, w, a float64) bool {
	for _, f := range v.sf {
		switch f {
		case w:
			return true
		case a:
			return false
		}
	}
	return true
}

// worstDevice is the largest slowdown of job on devs (1 without Speeds).
func worstDevice(sp placement.Speeds, job string, devs []string) float64 {
	if sp == nil {
		return 1
	}
	worst := 0.0
	for _, d := range devs {
		worst = max(worst, sp.Slowdown(job, d))
	}
	return worst
}
