package location

import (
	"math"
)

// OracleResult is the offline optimum of a Problem.
type OracleResult struct {
	// CarbonG is the least carbon of running the work that fits, and
	// MissedWork the least device-hours that cannot fit (minimised
	// first).
	CarbonG    float64
	MissedWork int
	// Split counts jobs whose optimal work spans regions (see Oracle).
	Split int
}

// Oracle is the offline optimum: it knows every job in advance and
// chooses, for all of them together, how many devices each runs on in
// every region and hour. It is a min-cost flow, solved exactly by
// successive shortest paths (Dijkstra with potentials; integral, as the
// capacities are): the source sends each job its Work; job → (region,
// hour) arcs in its window (abroad from Arrival + the migration delay)
// carry up to MaxDevices at the device-hour's carbon plus the job's
// migration carbon spread over its work; each (region, hour) passes at
// most the region's Devices; work that fits nowhere pays a penalty above
// any carbon, so missed work is minimised first. The flow may split a job
// across regions (each part paying its share of the migration), which a
// Placement cannot, so CarbonG is a lower bound on the carbon of every
// plan of the problem that misses no more work (Plan, PlanHome, Agnostic).
func Oracle(p Problem) (OracleResult, error) {
	in, err := newInstance(p)
	if err != nil {
		return OracleResult{}, err
	}
	R, T, J := len(p.Regions), p.Slots, len(p.Jobs)
	src, sink := 0, 1+J+R*T
	cell := func(r, t int) int { return 1 + J + r*T + t }
	g := newFlow(sink + 1)
	maxCost := 0.0
	for _, j := range p.Jobs {
		for r := range p.Regions {
			for t := in.first(j, r); t < j.Deadline; t++ {
				maxCost = max(maxCost, in.gramsPerDeviceHour(j, r, t)+in.migrationG(j, r)/float64(j.Work))
			}
		}
	}
	penalty := 1 + 2*maxCost*1e3
	type arc struct{ edge, job, region int }
	var arcs []arc
	var miss []int
	for i, j := range p.Jobs {
		g.add(src, 1+i, j.Work, 0)
		for r := range p.Regions {
			mig := in.migrationG(j, r) / float64(j.Work)
			for t := in.first(j, r); t < j.Deadline; t++ {
				e := g.add(1+i, cell(r, t), j.MaxDevices, in.gramsPerDeviceHour(j, r, t)+mig)
				arcs = append(arcs, arc{e, i, r})
			}
		}
		miss = append(miss, g.add(1+i, sink, j.Work, penalty))
	}
	for r := range p.Regions {
		for t := range T {
			g.add(cell(r, t), sink, p.Regions[r].Devices, 0)
		}
	}
	g.minCostFlow(src, sink)
	var out OracleResult
	regionsOf := make([]int, J)
	lastRegion := make([]int, J)
	for i := range lastRegion {
		lastRegion[i] = -1
	}
	for _, a := range arcs {
		f := g.flowOn(a.edge)
		if f == 0 {
			continue
		}
		out.CarbonG += float64(f) * g.cost[a.edge] // the arc's cost per device-hour
		if lastRegion[a.job] != a.region {
			lastRegion[a.job] = a.region
			regionsOf[a.job]++
		}
	}
	for i, e := range miss {
		out.MissedWork += g.flowOn(e)
		if regionsOf[i] > 1 {
			out.Split++
		}
	}
	return out, nil
}

// flow is a residual graph for min-cost flow; edges come in pairs (e,
// e^1 its reverse).
type flow struct {
	to   []int32
	cap  []int32
	cost []float64
	adj  [][]int32
	orig []int32
}

func newFlow(n int) *flow { return &flow{adj: make([][]int32, n)} }

func (g *flow) add(u, v, c int, cost float64) int {
	e := len(g.to)
	g.to = append(g.to, int32(v), int32(u))
	g.cap = append(g.cap, int32(c), 0)
	g.cost = append(g.cost, cost, -cost)
	g.orig = append(g.orig, int32(c), 0)
	g.adj[u] = append(g.adj[u], int32(e))
	g.adj[v] = append(g.adj[v], int32(e+1))
	return e
}

func (g *flow) flowOn(e int) int { return int(g.orig[e] - g.cap[e]) }

// minCostFlow sends as much as it can from s to t at least cost:
// successive shortest paths, Dijkstra on reduced costs (all arc costs
// start non-negative, so zero potentials are feasible).
func (g *flow) minCostFlow(s, t int) {
	n := len(g.adj)
	pot := make([]float64, n)
	dist := make([]float64, n)
	prev := make([]int32, n)
	done := make([]bool, n)
	var h heap
	for {
		for i := range dist {
			dist[i], prev[i], done[i] = math.Inf(1), -1, false
		}
		dist[s] = 0
		h.reset()
		h.push(s, 0)
		for h.len() > 0 {
			u, d := h.pop()
			if done[u] || d > dist[u] {
				continue
			}
			done[u] = true
			if u == t {
				break
			}
			for _, e := range g.adj[u] {
				if g.cap[e] == 0 {
					continue
				}
				v := int(g.to[e])
				rc := g.cost[e] + pot[u] - pot[v]
				if rc < 0 {
					rc = 0 // rounding: reduced costs are non-negative
				}
				if nd := d + rc; nd < dist[v] {
					dist[v], prev[v] = nd, e
					h.push(v, nd)
				}
			}
		}
		if !done[t] {
			return
		}
		dt := dist[t]
		for i := range pot {
			if done[i] {
				pot[i] += dist[i]
			} else {
				pot[i] += dt
			}
		}
		push := int32(math.MaxInt32)
		for v := t; v != s; v = int(g.to[prev[v]^1]) {
			push = min(push, g.cap[prev[v]])
		}
		for v := t; v != s; v = int(g.to[prev[v]^1]) {
			e := prev[v]
			g.cap[e] -= push
			g.cap[e^1] += push
		}
	}
}

// heap is a binary min-heap of (node, key).
type heap struct {
	node []int32
	key  []float64
}

func (h *heap) reset()   { h.node, h.key = h.node[:0], h.key[:0] }
func (h *heap) len() int { return len(h.node) }

func (h *heap) push(v int, k float64) {
	h.node = append(h.node, int32(v))
	h.key = append(h.key, k)
	i := len(h.node) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.key[p] <= h.key[i] {
			break
		}
		h.node[p], h.node[i] = h.node[i], h.node[p]
		h.key[p], h.key[i] = h.key[i], h.key[p]
		i = p
	}
}

func (h *heap) pop() (int, float64) {
	v, k := int(h.node[0]), h.key[0]
	last := len(h.node) - 1
	h.node[0], h.key[0] = h.node[last], h.key[last]
	h.node, h.key = h.node[:last], h.key[:last]
	i := 0
	for {
		l, b := 2*i+1, i
		if l < last && h.key[l] < h.key[b] {
			b = l
		}
		if r := l + 1; r < last && h.key[r] < h.key[b] {
			b = r
		}
		if b == i {
			return v, k
		}
		h.node[b], h.node[i] = h.node[i], h.node[b]
		h.key[b], h.key[i] = h.key[i], h.key[b]
		i = b
	}
}
