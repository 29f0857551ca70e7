package placement

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// affinity is the total pair affinity of a set plus its links to held.
func affinity(sl *slotInfo, set, held uint64) int32 {
	nd := len(sl.devs)
	var total int32
	for a := set; a != 0; a &= a - 1 {
		i := bits.TrailingZeros64(a)
		for b := (set | held) &^ (1<<(i+1) - 1); b != 0; b &= b - 1 {
			total += sl.w[i*nd+bits.TrailingZeros64(b)]
		}
		for b := held; b != 0; b &= b - 1 {
			if j := bits.TrailingZeros64(b); j < i {
				total += sl.w[i*nd+j]
			}
		}
	}
	return total
}

// TestPickExactIsOptimal compares the exact search with brute force over
// every subset on random 8-device slots.
func TestPickExactIsOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for range 300 {
		n := 8
		sl := &slotInfo{devs: make([]int32, n), w: make([]int32, n*n)}
		for a := range n {
			for b := a + 1; b < n; b++ {
				v := int32(rng.IntN(3) * 16)
				sl.w[a*n+b], sl.w[b*n+a] = v, v
			}
		}
		avail := uint64(rng.IntN(256))
		held := uint64(rng.IntN(256)) &^ avail
		k := 1 + rng.IntN(4)
		got := pick(sl, avail, k, held)
		if bits.OnesCount64(avail) < k {
			if got != 0 {
				t.Fatalf("picked %b from %b for k=%d", got, avail, k)
			}
			continue
		}
		if got&^avail != 0 || bits.OnesCount64(got) != k {
			t.Fatalf("pick %b not %d of %b", got, k, avail)
		}
		best := int32(-1)
		for m := uint64(0); m < 256; m++ {
			if m&^avail == 0 && bits.OnesCount64(m) == k {
				best = max(best, affinity(sl, m, held))
			}
		}
		if a := affinity(sl, got, held); a != best {
			t.Fatalf("pick %b affinity %d, best %d", got, a, best)
		}
	}
}

// TestPickGreedy checks the greedy path on a 16-device slot made of two
// fully linked groups of 8: choosing 8 of 16 must take one whole group.
func TestPickGreedy(t *testing.T) {
	n := 16
	sl := &slotInfo{devs: make([]int32, n), w: make([]int32, n*n)}
	for a := range n {
		for b := a + 1; b < n; b++ {
			if a%2 == b%2 {
				sl.w[a*n+b], sl.w[b*n+a] = 32, 32
			}
		}
	}
	got := pick(sl, 1<<16-1, 8, 0)
	if got != 0x5555 {
		t.Fatalf("got %016b, want the even group", got)
	}
	if binomial(16, 8) <= maxCombos {
		t.Fatal("test does not reach the greedy path")
	}
}
