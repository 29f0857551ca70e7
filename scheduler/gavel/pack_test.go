package gavel

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// scanPack is pack as it was before the free-count index: a scan of every
// node for the best fit, a sort of every node for the others. It is the
// oracle that pack must agree with.
func scanPack(free []int, perNode, s int) bool {
	limit := nodesFor(s, perNode)
	if limit == 1 {
		best := -1
		for k, f := range free {
			if f >= s && (best < 0 || f < free[best]) {
				best = k
			}
		}
		if best < 0 {
			return false
		}
		free[best] -= s
		return true
	}
	order := make([]int, len(free))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(free[b], free[a]) })
	need := s
	var use []int
	for _, k := range order[:min(limit, len(order))] {
		if need <= 0 || free[k] == 0 {
			break
		}
		use = append(use, k)
		need -= free[k]
	}
	if need > 0 {
		return false
	}
	need = s
	for _, k := range use {
		d := min(need, free[k])
		free[k] -= d
		need -= d
	}
	return true
}

// TestPackMatchesScan runs random sequences of packs, reservations (keep)
// and wholesale resets on random types, from one node to several thousand
// and from one to 256 devices a node, through pack and through scanPack,
// and requires the same answers and the same free devices after every step.
func TestPackMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 5))
	insts := 1000
	if raceEnabled {
		insts = 200
	}
	for inst := range insts {
		n := 1 + rng.IntN([]int{3, 10, 70, 300, 300}[inst%5])
		if inst%100 == 4 {
			n = 1 + rng.IntN(5000)
		}
		perNode := []int{1, 2, 4, 8, 3, 16, 256}[rng.IntN(7)]
		if inst%5 == 4 && perNode > 16 {
			perNode = 8
		}
		free := make([]int, n)
		for k := range free {
			free[k] = rng.IntN(perNode + 1)
		}
		free[rng.IntN(n)] = perNode // some node has perNode, as in a round
		ti := &typeInfo{perNode: perNode, free: slices.Clone(free)}
		ti.reindex()
		steps := 1 + rng.IntN(min(4*n, 1000)+20)
		for step := range steps {
			switch op := rng.IntN(20); {
			case op == 0: // a wholesale reset, as realise does before replay
				for k := range free {
					free[k] = rng.IntN(perNode + 1)
				}
				copy(ti.free, free)
				ti.reindex()
			case op <= 3: // keep: reserve some of one node's devices
				k := rng.IntN(n)
				if free[k] > 0 {
					d := 1 + rng.IntN(free[k])
					free[k] -= d
					ti.take(k, d)
				}
			default:
				s := 1 + rng.IntN(perNode*[]int{1, 1, 2, 3, 8}[rng.IntN(5)])
				want := scanPack(free, perNode, s)
				if got := pack(ti, s); got != want {
					t.Fatalf("instance %d step %d: pack(%d) = %v, scan %v", inst, step, s, got, want)
				}
			}
			if !slices.Equal(ti.free, free) {
				t.Fatalf("instance %d step %d: free %v, scan %v", inst, step, ti.free, free)
			}
		}
		// The index agrees with free: every node is filed under its count.
		for k, f := range ti.free {
			for g := 1; g < len(ti.byFree); g++ {
				in := ti.byFree[g] != nil && ti.byFree[g].Next(k) == k
				if in != (g == f) {
					t.Fatalf("instance %d: node %d (free %d) filed under %d: %v", inst, k, f, g, in)
				}
			}
		}
	}
}

// TestNotesMatchFmt checks that the notes built with strconv read as the
// fmt formats they replace, on edge values and random ones.
func TestNotesMatchFmt(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, 0.0005, 0.0015, 0.9995, 1e-12, 1e9, 2.5e8, 123456.789, 1e21, 1e300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(), -3.25}
	rng := rand.New(rand.NewPCG(19, 7))
	for range 2000 {
		vals = append(vals, rng.Float64()*math.Pow(10, float64(rng.IntN(24)-12)))
	}
	for k, v := range vals {
		w, x := vals[(k*7+3)%len(vals)], vals[(k*13+5)%len(vals)]
		if got, want := string(placedNote(nil, "max-min", v, "v100-16gb", w, x)),
			fmt.Sprintf("%s: share due %.3f of time on %s, received %.3f (job priority %.3g)", "max-min", v, accel.TypeKey("v100-16gb"), w, x); got != want {
			t.Errorf("placedNote: %q, fmt %q", got, want)
		}
		if got, want := string(waitNote(nil, "max-min", v, "k80")),
			fmt.Sprintf("%s: waits this round; share due %.3f (most on %s), jobs further below their share go first", "max-min", v, "k80"); got != want {
			t.Errorf("waitNote: %q, fmt %q", got, want)
		}
	}
}
