package topoplace

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/goodsched/goodsched/placement"
)

// Strategy picks how a gang's domain and devices are chosen.
type Strategy int

const (
	// LeastLoss minimises predicted throughput loss, then stranded
	// capacity, then leftover capacity (the default).
	LeastLoss Strategy = iota
	// BestFit is Kueue's Topology-Aware Scheduling BestFit (with
	// LeastFreeCapacity for unconstrained gangs).
	BestFit
	// Binpack is KAI's topology plugin with bin-packing node order.
	Binpack
)

var strategyNames = [...]string{"least-loss", "kueue-bestfit", "kai-binpack"}

// String returns the strategy's name.
func (s Strategy) String() string {
	if s >= 0 && int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return "unknown"
}

// work is one Place call's mutable view: who holds which device, and the
// free usable devices per type per vertex; with the call's per-target
// scratch. Works are pooled per model (getWork, putWork): a round with
// thousands of running jobs then allocates little more than its result.
type work struct {
	m     *model
	owner []int32   // per device number: job slot + 1; 0 = free
	free  [][]int32 // per type, per vertex
	arena []int32   // backing store of resolved device lists

	reqs      []request
	held      [][]int32
	kept      []bool
	preempted []bool
	reasons   []*placement.Reason
	byPos     [][]string
}

// newWork returns a work with every usable device free.
func newWork(m *model) *work {
	w, _ := m.works.Get().(*work)
	if w == nil {
		w = &work{m: m, owner: make([]int32, len(m.devID)), free: make([][]int32, len(m.types))}
		for t := range w.free {
			w.free[t] = make([]int32, len(m.name))
		}
	} else {
		clear(w.owner)
		w.arena = w.arena[:0]
	}
	for t, f := range w.free {
		for n := 0; n < m.nn; n++ {
			f[m.nd+n] = int32(len(m.devOf[n][t]))
		}
		for _, v := range m.post {
			var s int32
			for _, k := range m.kids[v] {
				s += f[k]
			}
			f[v] = s
		}
	}
	return w
}

// putWork returns w to its model's pool; nothing may use it after.
func putWork(w *work) {
	clear(w.reqs)
	clear(w.held)
	clear(w.reasons)
	clear(w.byPos)
	w.m.works.Put(w)
}

// sized returns s with length n, zeroed, reusing its array when it can.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// add changes the free count of device g's type by delta from its node up.
func (w *work) add(g int32, delta int32) {
	f := w.free[w.m.typeOf[g]]
	for v := w.m.nodeOf[g]; v >= 0; v = w.m.parent[v] {
		f[v] += delta
	}
}

func (w *work) take(g int32, slot int) {
	w.owner[g] = int32(slot + 1)
	w.add(g, -1)
}

func (w *work) release(g int32) {
	w.owner[g] = 0
	w.add(g, 1)
}

// caps returns per vertex how many devices of type t a gang with
// constraint c can take there: the free count, rounded down to whole
// slices at each slice level.
func (w *work) caps(t int, c *resolved) []int32 {
	f := w.free[t]
	if c.slices == nil {
		return f
	}
	m := w.m
	nl := len(m.levels)
	capv := make([]int32, len(f))
	u := int32(c.slices[nl])
	for n := 0; n < m.nn; n++ {
		v := m.nd + n
		capv[v] = f[v] / u * u
	}
	for _, v := range m.post {
		var s int32
		for _, k := range m.kids[v] {
			s += capv[k]
		}
		if d := m.depth[v]; d >= 0 {
			s = s / int32(c.slices[d]) * int32(c.slices[d])
		}
		capv[v] = s
	}
	return capv
}

// request is one gang to place.
type request struct {
	t      int // type number
	k      int // devices
	c      resolved
	strand int // free capacity below this in a domain is stranded (0 = never)
}

// stranded is the capacity a domain with left free devices strands.
func (r *request) stranded(left int32) int32 {
	if left > 0 && int(left) < r.strand {
		return left
	}
	return 0
}

// place chooses devices for r under strategy st; on failure it returns a
// reason.
func (w *work) place(st Strategy, keep []float64, r *request, typ string) ([]int32, *placement.Reason) {
	m := w.m
	capv := w.caps(r.t, &r.c)
	k := int32(r.k)
	if r.k%r.c.first != 0 {
		return nil, &placement.Reason{Code: placement.ReasonTopology, Text: fmt.Sprintf("%d devices are not whole slices of %d", r.k, r.c.first)}
	}
	if w.free[r.t][m.root] < k {
		return nil, &placement.Reason{Code: placement.ReasonCapacity, Text: fmt.Sprintf("only %d free %s devices for %d", w.free[r.t][m.root], typ, r.k)}
	}
	if req := r.c.required; req >= 0 {
		best := int32(-1)
		for _, v := range m.atLvl[req] {
			if best < 0 || capv[v] > capv[best] {
				best = v
			}
		}
		if best < 0 || capv[best] < k {
			most, where := int32(0), ""
			if best >= 0 {
				most, where = capv[best], " in "+m.name[best]
			}
			return nil, &placement.Reason{Code: placement.ReasonTopology, Text: fmt.Sprintf("no %s domain holds %d free %s devices (most: %d%s)", w.levelName(req), r.k, typ, most, where)}
		}
	}
	if capv[m.root] < k {
		return nil, &placement.Reason{Code: placement.ReasonTopology, Text: fmt.Sprintf("%d free %s devices make only %d whole slices' worth", w.free[r.t][m.root], typ, capv[m.root])}
	}
	var scope int32
	switch st {
	case BestFit:
		scope = w.kueueScope(r, capv)
	case Binpack:
		scope = w.kaiScope(r, capv)
	default:
		scope = w.lossScope(r, capv, keep)
	}
	if scope < 0 {
		return nil, &placement.Reason{Code: placement.ReasonTopology, Text: fmt.Sprintf("no domain holds %d free %s devices", r.k, typ)}
	}
	var out []int32
	if st == BestFit && r.c.required < 0 && r.c.preferred < 0 && r.c.slices == nil {
		out = w.leastFree(scope, k, r.t, capv, out)
	} else if st == Binpack {
		out = w.kaiDescend(scope, k, r, capv, out)
	} else {
		out = w.descend(st, scope, k, r, capv, out, true)
	}
	slices.Sort(out)
	return out, nil
}

func (w *work) levelName(d int) string {
	if d >= len(w.m.levels) {
		return NodeLevel
	}
	return w.m.levels[d].Name
}

// lossScope returns the domain LeastLoss places in: of the depths allowed
// (the node up to Required, or the root), those with a domain that holds
// the gang and the least loss; of those the outermost (so the choice of
// domain below it is free); in it the domain that strands least, then
// leaves least.
func (w *work) lossScope(r *request, capv []int32, keep []float64) int32 {
	m := w.m
	nl := len(m.levels)
	lo := -1
	if r.c.required >= 0 {
		lo = r.c.required
	}
	k := int32(r.k)
	bestDepth, bestLoss := -2, 2.0
	for d := nl; d >= lo; d-- {
		kd := d
		if p := r.c.preferred; p >= 0 && d > p {
			kd = p // the user's "good enough": inner depths tie with it
		}
		loss := 1 - keep[kd+1]
		if loss > bestLoss+1e-12 {
			continue
		}
		if !w.anyFits(d, k, capv) {
			continue
		}
		if loss < bestLoss-1e-12 || d < bestDepth {
			bestDepth, bestLoss = d, loss
		}
	}
	if bestDepth == -2 {
		return -1
	}
	if bestDepth == -1 {
		return m.root
	}
	best := int32(-1)
	var bestKey [2]int32
	for _, v := range m.atLvl[bestDepth] {
		if capv[v] < k {
			continue
		}
		left := capv[v] - k
		key := [2]int32{0, left}
		if bestDepth < nl {
			key[0] = r.stranded(w.free[r.t][v] - k)
		}
		if best < 0 || key[0] < bestKey[0] || key[0] == bestKey[0] && key[1] < bestKey[1] {
			best, bestKey = v, key
		}
	}
	return best
}

func (w *work) anyFits(d int, k int32, capv []int32) bool {
	if d < 0 {
		return capv[w.m.root] >= k
	}
	for _, v := range w.m.atLvl[d] {
		if capv[v] >= k {
			return true
		}
	}
	return false
}

// kueueScope is Kueue's findLevelWithFitDomains for BestFit: at the
// requested level, if the domain with the most free capacity holds the
// gang, the one with the least that does; otherwise (preferred only) the
// next level up; above the outermost level the gang spreads from the root.
// A gang without a constraint is placed over all nodes (LeastFreeCapacity).
func (w *work) kueueScope(r *request, capv []int32) int32 {
	m := w.m
	k := int32(r.k)
	start := r.c.preferred
	if start < 0 {
		start = r.c.required
	}
	if start < 0 && r.c.slices != nil {
		for d, u := range r.c.slices {
			if u > 1 {
				start = d
				break
			}
		}
	}
	if start < 0 {
		return m.root
	}
	for d := start; d >= 0; d-- {
		var best int32 = -1
		fits := false
		for _, v := range m.atLvl[d] {
			if capv[v] >= k && (best < 0 || capv[v] < capv[best]) {
				best = v
			}
			fits = fits || capv[v] >= k
		}
		if fits {
			return best
		}
		if r.c.required >= 0 && d <= r.c.required {
			return -1
		}
	}
	return m.root
}

// kaiScope is KAI's domain choice: from the preferred level (or the
// required one) up to the required level (or the root), innermost first,
// the domain with the least free capacity that holds the gang.
func (w *work) kaiScope(r *request, capv []int32) int32 {
	m := w.m
	k := int32(r.k)
	start, lo := r.c.preferred, r.c.required
	if start < 0 {
		start = lo
	}
	if start < 0 {
		return m.root
	}
	for d := start; d >= max(lo, 0); d-- {
		var best int32 = -1
		for _, v := range m.atLvl[d] {
			if capv[v] >= k && (best < 0 || capv[v] < capv[best]) {
				best = v
			}
		}
		if best >= 0 {
			return best
		}
	}
	if lo < 0 && capv[m.root] >= k {
		return m.root
	}
	return -1
}

// takeNode takes a devices of type t from node vertex v, lowest index
// first.
func (w *work) takeNode(v int32, a int32, t int, out []int32) []int32 {
	for _, g := range w.m.devOf[int(v)-w.m.nd][t] {
		if a == 0 {
			break
		}
		if w.owner[g] == 0 {
			out = append(out, g)
			a--
		}
	}
	return out
}

// descend spreads a devices over v's subtree: a child that holds the rest
// is chosen by best fit (LeastLoss: least stranded first), else the child
// with the most capacity is filled; Balanced spreads evenly at the top.
func (w *work) descend(st Strategy, v int32, a int32, r *request, capv []int32, out []int32, top bool) []int32 {
	m := w.m
	if int(v) >= m.nd && v != m.root {
		return w.takeNode(v, a, r.t, out)
	}
	kids := make([]int32, 0, len(m.kids[v]))
	for _, c := range m.kids[v] {
		if capv[c] > 0 {
			kids = append(kids, c)
		}
	}
	slices.SortStableFunc(kids, func(x, y int32) int { return cmp.Compare(capv[y], capv[x]) })
	if top && r.c.balanced && len(kids) > 0 && capv[kids[0]] < a {
		return w.balanced(st, kids, a, r, capv, out)
	}
	for i := 0; a > 0 && i < len(kids); i++ {
		if capv[kids[i]] >= a {
			best := i
			var bestKey [2]int32
			for j := i; j < len(kids) && capv[kids[j]] >= a; j++ {
				c := kids[j]
				key := [2]int32{0, capv[c] - a}
				if st == LeastLoss && int(c) < m.nd {
					key[0] = r.stranded(w.free[r.t][c] - a)
				}
				if j == i || key[0] < bestKey[0] || key[0] == bestKey[0] && key[1] < bestKey[1] {
					best, bestKey = j, key
				}
			}
			return w.descend(st, kids[best], a, r, capv, out, false)
		}
		out = w.descend(st, kids[i], capv[kids[i]], r, capv, out, false)
		a -= capv[kids[i]]
	}
	return out
}

// balanced water-fills a over the fewest of kids (sorted by capacity,
// most first) that hold it, in whole slices of the kids' level.
func (w *work) balanced(st Strategy, kids []int32, a int32, r *request, capv []int32, out []int32) []int32 {
	n, sum := 0, int32(0)
	for n < len(kids) && sum < a {
		sum += capv[kids[n]]
		n++
	}
	g := int32(1)
	if r.c.slices != nil {
		for d := w.m.depth[kids[0]]; d < len(r.c.slices); d++ {
			if r.c.slices[d] > 1 {
				g = int32(r.c.slices[d])
				break
			}
		}
	}
	give := make([]int32, n)
	for rem := a; rem > 0; {
		moved := false
		for i := 0; i < n && rem > 0; i++ {
			if step := min(g, rem); give[i]+step <= capv[kids[i]] {
				give[i] += step
				rem -= step
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	for i := 0; i < n; i++ {
		if give[i] > 0 {
			out = w.descend(st, kids[i], give[i], r, capv, out, false)
		}
	}
	return out
}

// leastFree is Kueue's LeastFreeCapacity over the nodes under v: the node
// with the least free capacity that holds the gang, else nodes from the
// least free up.
func (w *work) leastFree(v int32, a int32, t int, capv []int32, out []int32) []int32 {
	nodes := w.nodesUnder(v, capv)
	slices.SortStableFunc(nodes, func(x, y int32) int { return cmp.Compare(capv[x], capv[y]) })
	for _, n := range nodes {
		if capv[n] >= a {
			return w.takeNode(n, a, t, out)
		}
	}
	for _, n := range nodes {
		if a == 0 {
			break
		}
		take := min(a, capv[n])
		out = w.takeNode(n, take, t, out)
		a -= take
	}
	return out
}

// nodesUnder lists the node vertices under v with capacity, by name.
func (w *work) nodesUnder(v int32, capv []int32) []int32 {
	m := w.m
	var out []int32
	var walk func(v int32)
	walk = func(v int32) {
		if int(v) >= m.nd && v != m.root {
			if capv[v] > 0 {
				out = append(out, v)
			}
			return
		}
		for _, c := range m.kids[v] {
			if capv[c] > 0 {
				walk(c)
			}
		}
	}
	walk(v)
	slices.SortFunc(out, func(x, y int32) int { return strings.Compare(m.name[x], m.name[y]) })
	return out
}

// kaiDescend fills v's subtree the way KAI orders nodes: above the
// preferred level (and wherever slices must be kept whole) the children
// with the most free capacity first; at or below it the fullest nodes
// first (bin-packing), ties by name.
func (w *work) kaiDescend(v int32, a int32, r *request, capv []int32, out []int32) []int32 {
	m := w.m
	if int(v) >= m.nd && v != m.root {
		return w.takeNode(v, a, r.t, out)
	}
	d := m.depth[v]
	hier := r.c.preferred >= 0 && d < r.c.preferred
	for dd := d + 1; dd < len(r.c.slices)-1; dd++ { // slices above the node
		hier = hier || r.c.slices[dd] > 1
	}
	if !hier {
		nodes := w.nodesUnder(v, capv)
		slices.SortStableFunc(nodes, func(x, y int32) int { return cmp.Compare(capv[x], capv[y]) })
		for _, n := range nodes {
			if a == 0 {
				break
			}
			take := min(a, capv[n])
			out = w.takeNode(n, take, r.t, out)
			a -= take
		}
		return out
	}
	kids := make([]int32, 0, len(m.kids[v]))
	for _, c := range m.kids[v] {
		if capv[c] > 0 {
			kids = append(kids, c)
		}
	}
	slices.SortStableFunc(kids, func(x, y int32) int { return cmp.Compare(capv[y], capv[x]) })
	for _, c := range kids {
		if a == 0 {
			break
		}
		take := min(a, capv[c])
		out = w.kaiDescend(c, take, r, capv, out)
		a -= take
	}
	return out
}
