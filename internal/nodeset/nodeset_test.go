package nodeset

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNodeSet checks the word tree against a plain set over sizes that
// need one to three levels.
func TestNodeSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 6))
	for _, n := range []int{1, 5, 63, 64, 65, 200, 4095, 4096, 4097, 70000} {
		s := New(n)
		in := make([]bool, n)
		for range min(3*n, 3000) {
			i := rng.IntN(n)
			if rng.IntN(2) == 0 {
				s.Add(i)
				in[i] = true
			} else {
				s.Remove(i)
				in[i] = false
			}
			q := rng.IntN(n)
			if s.Empty() != !slices.Contains(in, true) {
				t.Fatalf("n=%d: Empty() = %v", n, s.Empty())
			}
			wantNext, wantPrev := -1, -1
			for k := q; k < n; k++ {
				if in[k] {
					wantNext = k
					break
				}
			}
			for k := q; k >= 0; k-- {
				if in[k] {
					wantPrev = k
					break
				}
			}
			if got := s.Next(q); got != wantNext {
				t.Fatalf("n=%d: Next(%d) = %d, want %d", n, q, got, wantNext)
			}
			if got := s.Prev(q); got != wantPrev {
				t.Fatalf("n=%d: Prev(%d) = %d, want %d", n, q, got, wantPrev)
			}
		}
		if got := s.Next(s.Size()); got != -1 {
			t.Fatalf("n=%d: Next(Size()) = %d", n, got)
		}
	}
}
