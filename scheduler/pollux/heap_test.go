package pollux

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
)

// stdShrinks is container/heap's adapter of shrinks, the order heapOf
// must reproduce exactly (ties included: plans depend on it).
type stdShrinks []shrink

func (h stdShrinks) Len() int           { return len(h) }
func (h stdShrinks) Less(a, b int) bool { return h[a].before(h[b]) }
func (h stdShrinks) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *stdShrinks) Push(x any)        { *h = append(*h, x.(shrink)) }
func (h *stdShrinks) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TestHeapOfMatchesContainerHeap drives heapOf and container/heap with the
// same random inits, pushes and pops (many equal losses, so ties matter)
// and requires the same layout after every operation.
func TestHeapOfMatchesContainerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var ours shrinkHeap
		var std stdShrinks
		for range rng.IntN(40) {
			d := shrink{loss: float64(rng.IntN(5)), job: rng.IntN(10), stamp: rng.IntN(3)}
			ours, std = append(ours, d), append(std, d)
		}
		ours.init()
		heap.Init(&std)
		for op := range 300 {
			if len(std) > 0 && rng.IntN(2) == 0 {
				a, b := ours.pop(), heap.Pop(&std).(shrink)
				if a != b {
					t.Fatalf("round %d op %d: pop %+v, container/heap %+v", round, op, a, b)
				}
			} else {
				d := shrink{loss: float64(rng.IntN(5)), job: rng.IntN(10), stamp: op}
				ours.push(d)
				heap.Push(&std, d)
			}
			for k := range std {
				if ours[k] != std[k] {
					t.Fatalf("round %d op %d: layout differs at %d", round, op, k)
				}
			}
		}
	}
}

// TestHeapWalkVisitsInPopOrder: a walk yields the positions of a heap's
// elements in the order pops would return them, and leaves the heap as
// it was.
func TestHeapWalkVisitsInPopOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 40 {
		var h heapOf[shrink]
		for i := range n {
			h.push(shrink{loss: float64(rng.IntN(5)), job: i})
		}
		before := slices.Clone(h)
		var w heapWalk
		w.reset(h)
		var walked []shrink
		for {
			at, ok := w.next()
			if !ok {
				break
			}
			walked = append(walked, h[at])
		}
		if !slices.Equal(h, before) {
			t.Fatalf("n=%d: the walk changed the heap", n)
		}
		var popped []shrink
		for len(h) > 0 {
			popped = append(popped, h.pop())
		}
		if !slices.Equal(walked, popped) {
			t.Fatalf("n=%d: walked %v, popped %v", n, walked, popped)
		}
	}
}
