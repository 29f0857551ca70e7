package pollux

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// wideProblem is a random cluster of small nodes (1, 2 or 4 devices of
// two types) with jobs that may span many of them, some running.
func wideProblem(t *testing.T, seed uint64) Problem {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 19))
	var c accel.Cluster
	nodes := 20 + rng.IntN(60)
	for n := range nodes {
		name := fmt.Sprintf("n-%03d", n)
		node := accel.Node{Name: name}
		per := []int{1, 1, 2, 4}[rng.IntN(4)]
		typ := accel.TypeKey([]string{"t4", "v100"}[rng.IntN(2)])
		for k := range per {
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, k), Node: name, Index: k, Type: typ, Healthy: true, NUMANode: -1})
		}
		c.Nodes = append(c.Nodes, node)
	}
	ix, err := placement.NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	p := Problem{Cluster: &c, Index: ix, Exponent: -1, RestartDelay: 30 * time.Second, AllowInterference: rng.IntN(2) != 0}
	nt := len(ix.Types())
	used := make(map[string]bool)
	for i := range 2 + rng.IntN(8) {
		alpha, pen := 0.001+rng.Float64()*0.05, 0.97+rng.Float64()*0.03
		j := Job{ID: fmt.Sprintf("job-%02d", i), Weight: 1, Min: 1 + rng.IntN(2), Max: 4 + rng.IntN(3*nodes), CurrentType: -1,
			Age: time.Duration(100+rng.IntN(3000)) * time.Second, Restarts: rng.IntN(2),
			Speedup: func(t, nodes, count int) (float64, error) {
				c := float64(count)
				return (1 + 0.3*float64(t)) * c / (1 + alpha*(c-1)) * math.Pow(pen, float64(max(nodes-1, 0))), nil
			}}
		j.Types = []int{0}
		if nt > 1 {
			j.Types = [][]int{{0}, {1}, {0, 1}}[rng.IntN(3)]
		}
		if rng.IntN(2) == 0 {
			// Running on a run of free devices of its first type.
			want := 1 + rng.IntN(2*nodes)
			nodesUsed := map[string]bool{}
			for _, n := range c.Nodes {
				for _, d := range n.Devices {
					if len(j.Current) == want {
						break
					}
					if k, _ := ix.TypeIndex(d.Type); k == j.Types[0] && !used[d.ID] && rng.IntN(4) > 0 {
						used[d.ID] = true
						j.Current = append(j.Current, d.ID)
						nodesUsed[d.Node] = true
					}
				}
			}
			if len(j.Current) > 0 {
				j.CurrentType, j.CurrentNodes = j.Types[0], len(nodesUsed)
				j.Min = min(j.Min, len(j.Current))
				j.Max = max(j.Max, len(j.Current))
			}
		}
		p.Jobs = append(p.Jobs, j)
	}
	return p
}

// crowdedProblem is instance seed of a series of crowded clusters: a
// random polish problem on odd seeds, else wideProblem(wideBase + seed).
func crowdedProblem(t *testing.T, seed, wideBase uint64) Problem {
	t.Helper()
	if seed%2 == 1 {
		return randomPolishProblem(t, seed)
	}
	return wideProblem(t, wideBase+seed)
}

// twin returns two searches of p, for comparing one variant of the
// bookkeeping with another.
func twin(t *testing.T, p Problem) (*Search, *Search) {
	t.Helper()
	a, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(p)
	return a, b
}

// currentState is e's empty state with every job that runs on usable
// devices laid out on them.
func currentState(e *Search) *state {
	s := e.emptyState()
	for i := range e.jobs {
		if e.curOK[i] {
			e.assign(s, i, e.jobs[i].t0, e.jobs[i].c0, e.cur[i])
		}
	}
	return s
}

// sameState reports how a and b differ (empty when they do not): the
// allocation, the bins and the order of every bucket with free devices.
func sameState(a, b *state) string {
	switch {
	case !slices.Equal(a.typ, b.typ) || !slices.Equal(a.cnt, b.cnt):
		return fmt.Sprintf("allocations %v %v, %v %v", a.typ, a.cnt, b.typ, b.cnt)
	case !slices.Equal(a.free, b.free) || !slices.Equal(a.bfree, b.bfree) || !slices.Equal(a.bdist, b.bdist):
		return "bins"
	}
	for i := range a.place {
		if !slices.Equal(a.place[i], b.place[i]) {
			return fmt.Sprintf("job %d slots %v, %v", i, a.place[i], b.place[i])
		}
	}
	for t := range a.bucket {
		for k := range a.bucket[t] {
			if !slices.Equal(a.bucket[t][k], b.bucket[t][k]) {
				return fmt.Sprintf("bucket %d/%d: %v, %v", t, k, a.bucket[t][k], b.bucket[t][k])
			}
		}
	}
	return ""
}

// checkState recomputes s's bins and wide aggregates from its slots.
func checkState(e *Search, s *state) string {
	l := e.lay
	bfree, bdist := slices.Clone(l.binCap), make([]int, len(l.binCap))
	for i, p := range s.place {
		for _, sl := range p {
			bfree[sl.bin] -= sl.k
			if len(p) > 1 {
				bdist[sl.bin]++
			}
		}
		if sumSlots(p) != s.cnt[i] {
			return fmt.Sprintf("job %d: %d devices in slots, count %d", i, sumSlots(p), s.cnt[i])
		}
	}
	if !slices.Equal(bfree, s.bfree) || !slices.Equal(bdist, s.bdist) {
		return "bins do not match the slots"
	}
	listed := 0
	for t := range s.bucket {
		for k, list := range s.bucket[t] {
			for p, b := range list {
				if s.bfree[b] == 0 || s.key(b) != k || s.pos[b] != p || l.binType[b] != t {
					return fmt.Sprintf("bin %d listed at %d/%d[%d]", b, t, k, p)
				}
				listed++
			}
		}
	}
	want := 0
	for _, f := range s.bfree {
		if f > 0 {
			want++
		}
	}
	if listed != want {
		return fmt.Sprintf("%d bins listed, %d have free devices", listed, want)
	}
	for i := range s.place {
		if !s.wideOK(i) {
			continue
		}
		w := s.wide
		free, dirty := 0, 0
		for _, sl := range s.place[i] {
			free += s.bfree[sl.bin]
			if s.bdist[sl.bin] > 1 {
				dirty++
			}
			base, n := l.binStart[sl.bin], int(w.nocc[sl.bin])
			if !slices.Contains(w.occ[base:base+n], int32(i)) {
				return fmt.Sprintf("job %d not listed on bin %d", i, sl.bin)
			}
		}
		sorted := slices.IsSortedFunc(s.place[i], func(a, b slot) int { return a.k - b.k })
		if free != w.free[i] || dirty != w.dirty[i] || sorted != w.sorted[i] {
			return fmt.Sprintf("job %d: aggregates %d %d %v, want %d %d %v", i, w.free[i], w.dirty[i], w.sorted[i], free, dirty, sorted)
		}
	}
	return ""
}

// resetState copies src's fields over d's storage, leaving d.wide as it
// was (stale).
func resetState(d, src *state) {
	d.typ = append(d.typ[:0], src.typ...)
	d.cnt = append(d.cnt[:0], src.cnt...)
	d.place = append(d.place[:0], src.place...)
	d.free = append(d.free[:0], src.free...)
	d.bfree = append(d.bfree[:0], src.bfree...)
	d.bdist = append(d.bdist[:0], src.bdist...)
	d.pos = append(d.pos[:0], src.pos...)
	for t, bs := range src.bucket {
		for k, b := range bs {
			d.bucket[t][k] = append(d.bucket[t][k][:0], b...)
		}
	}
}

// TestWideMovesMatchPlain: with aggregates for every job on more than one
// bin, random moves, probes, undos, clones and resets leave the state
// exactly as the plain bookkeeping does (slots, bins and the order of
// every bucket, which decides later packings), and the aggregates right.
func TestWideMovesMatchPlain(t *testing.T) {
	for seed := range uint64(60) {
		p := wideProblem(t, seed)
		fast, plain := twin(t, p)
		fast.wideSlots, plain.wideSlots = 1, math.MaxInt
		movesMatch(t, seed, p, fast, plain, false)
	}
}

// movesMatch applies the same 400 random steps to a state of a and one of
// b, two searches of p that differ in their bookkeeping only — probes,
// moves (with grow, mostly growths of a job on its type; else half of
// them near what the job has), moves undone as the exchange search does,
// clones and resets to the empty state — and fails at the first step
// after which the states differ (slots, bins, the order of every bucket)
// or a's aggregates are wrong. It returns how many of a's growths of a
// job on several bins growInPlace made, and how many it left to release
// and assign.
func movesMatch(t *testing.T, seed uint64, p Problem, a, b *Search, grow bool) (inPlace, plain int) {
	t.Helper()
	sa, sb := currentState(a), currentState(b)
	rng := rand.New(rand.NewPCG(seed, 1))
	for step := range 400 {
		i := rng.IntN(len(p.Jobs))
		j := &a.jobs[i]
		typ := j.allowed[rng.IntN(len(j.allowed))]
		c := rng.IntN(a.maxOn(j, typ) + 1)
		switch {
		case grow && sa.cnt[i] > 0 && rng.IntN(4) > 0:
			typ, c = sa.typ[i], min(sa.cnt[i]+1+rng.IntN(4), a.maxOn(j, sa.typ[i]))
		case !grow && sa.typ[i] == typ && sa.cnt[i] > 0 && rng.IntN(2) == 0:
			c = max(0, sa.cnt[i]+rng.IntN(9)-4) // near what it has: grow or shrink in place
		}
		op := rng.IntN(10)
		var what string
		switch {
		case op < 3:
			n1, ok1 := a.probe(sa, i, typ, c)
			n2, ok2 := b.probe(sb, i, typ, c)
			if n1 != n2 || ok1 != ok2 {
				t.Fatalf("seed %d step %d: probe(%d, %d, %d) = %d %v, other %d %v", seed, step, i, typ, c, n1, ok1, n2, ok2)
			}
			what = "probe"
		case op < 4 && sa.cnt[i] > 0:
			// A tentative move undone, as the exchange search does.
			ua := undo{i, sa.typ[i], sa.cnt[i], sa.place[i]}
			ub := undo{i, sb.typ[i], sb.cnt[i], sb.place[i]}
			a.apply(sa, i, typ, c)
			b.apply(sb, i, typ, c)
			a.undoAll(sa, []undo{ua})
			b.undoAll(sb, []undo{ub})
			what = "undo"
		case op < 5 && rng.IntN(4) == 0:
			// Reset to the empty state by copying its fields over (as
			// the polish reuses states), then lay out the current jobs.
			resetState(sa, a.emptyState())
			resetState(sb, b.emptyState())
			for k := range p.Jobs {
				if a.curOK[k] {
					a.assign(sa, k, a.jobs[k].t0, a.jobs[k].c0, a.cur[k])
					b.assign(sb, k, b.jobs[k].t0, b.jobs[k].c0, b.cur[k])
				}
			}
			what = "reset"
		case op < 5:
			sa, sb = sa.clone(), sb.clone()
			what = "clone"
		default:
			multi := len(sa.place[i]) > 1 && sa.typ[i] == typ && c > sa.cnt[i]
			before := a.inPlace
			ok1, ok2 := a.apply(sa, i, typ, c), b.apply(sb, i, typ, c)
			if ok1 != ok2 {
				t.Fatalf("seed %d step %d: apply(%d, %d, %d) = %v, other %v", seed, step, i, typ, c, ok1, ok2)
			}
			if multi && ok1 {
				if a.inPlace > before {
					inPlace++
				} else {
					plain++
				}
			}
			what = "apply"
		}
		if d := sameState(sa, sb); d != "" {
			t.Fatalf("seed %d step %d (%s job %d to %d×%d): %s", seed, step, what, i, c, typ, d)
		}
		if d := checkState(a, sa); d != "" {
			t.Fatalf("seed %d step %d (%s job %d to %d×%d): %s", seed, step, what, i, c, typ, d)
		}
	}
	return inPlace, plain
}

// TestWideSolveMatchesPlain: the whole search gives the same solutions
// and layouts with and without the aggregates of wide jobs.
func TestWideSolveMatchesPlain(t *testing.T) {
	for seed := range uint64(40) {
		p := wideProblem(t, 1000+seed)
		plain := solveOnce(t, p, func(e *Search) { e.wideSlots = math.MaxInt })
		for _, slots := range []int{1, wideSlots} {
			if got := solveOnce(t, p, func(e *Search) { e.wideSlots = slots }); got != plain {
				t.Fatalf("seed %d: with wide aggregates beyond %d slots:\n%s\nplain:\n%s", seed, slots, got, plain)
			}
		}
	}
}
