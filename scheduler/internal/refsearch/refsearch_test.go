package refsearch

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// problem is 6 nodes (4 of type 0 with 4 devices, 2 of type 1 with 8)
// and n jobs with random bounds; fitness rewards total replicas with
// diminishing returns so the search has something to climb.
func problem(seed uint64, n int) Problem {
	rng := rand.New(rand.NewPCG(seed, 1))
	p := Problem{NodeType: []int{0, 0, 0, 0, 1, 1}, NodeCap: []int{4, 4, 4, 4, 8, 8}, Interference: true}
	for j := 0; j < n; j++ {
		jb := Job{Min: 1 + rng.IntN(2), Max: 2 + rng.IntN(8)}
		if rng.IntN(3) == 0 {
			jb.Allowed = []bool{true, false}
		}
		p.Jobs = append(p.Jobs, jb)
	}
	p.Jobs[0].Pinned = true
	p.Jobs[0].Current = []int{2, 0, 0, 0, 0, 0}
	p.Fitness = func(rows [][]int) float64 {
		f := 0.0
		for _, r := range rows {
			c, nodes := 0, 0
			for _, v := range r {
				c += v
				if v > 0 {
					nodes++
				}
			}
			if c > 0 {
				f += float64(c) / (1 + 0.1*float64(c)) * (1 - 0.1*float64(nodes-1))
			}
		}
		return f
	}
	return p
}

func TestSearchFeasibleAndDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		p := problem(seed, 8)
		res, err := Search(p, Options{Population: 30, Generations: 30, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		used := make([]int, len(p.NodeCap))
		owner := make([]int, len(p.NodeCap))
		for n := range owner {
			owner[n] = -1
		}
		for j, r := range res.Rows {
			jb := p.Jobs[j]
			c, types := sum(r), map[int]bool{}
			for n, v := range r {
				used[n] += v
				if v > 0 {
					types[p.NodeType[n]] = true
					if jb.Allowed != nil && !jb.Allowed[p.NodeType[n]] {
						t.Fatalf("seed %d job %d on a disallowed type", seed, j)
					}
					if nodes(r) > 1 {
						if owner[n] >= 0 {
							t.Fatalf("seed %d: node %d hosts distributed jobs %d and %d", seed, n, owner[n], j)
						}
						owner[n] = j
					}
				}
			}
			if jb.Pinned {
				if !reflect.DeepEqual(r, jb.Current) {
					t.Fatalf("seed %d: pinned job moved: %v", seed, r)
				}
				continue
			}
			if c > 0 && (c < jb.Min || c > jb.Max || len(types) != 1) {
				t.Fatalf("seed %d job %d: %d replicas on %d types, bounds [%d, %d]", seed, j, c, len(types), jb.Min, jb.Max)
			}
		}
		for n, u := range used {
			if u > p.NodeCap[n] {
				t.Fatalf("seed %d: node %d over capacity: %d", seed, n, u)
			}
		}
		again, _ := Search(p, Options{Population: 30, Generations: 30, Seed: seed})
		if !reflect.DeepEqual(res, again) {
			t.Fatalf("seed %d: not deterministic", seed)
		}
		if res.Fitness <= 0 {
			t.Fatalf("seed %d: fitness %v", seed, res.Fitness)
		}
	}
}

func TestSearchInvalid(t *testing.T) {
	p := problem(0, 3)
	p.NodeCap = p.NodeCap[:2]
	if _, err := Search(p, Options{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	p = problem(0, 3)
	p.Jobs[1].Current = []int{1}
	if _, err := Search(p, Options{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}
