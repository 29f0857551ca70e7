package placement

import "math/bits"

// maxCombos bounds the exact search for the best-connected device set;
// above it a greedy choice is used.
const maxCombos = 256

// lowBits returns the k lowest set bits of m.
func lowBits(m uint64, k int) uint64 {
	var out uint64
	for ; k > 0 && m != 0; k-- {
		b := m & -m
		out |= b
		m &^= b
	}
	return out
}

// pick chooses k devices among avail (a mask over the slot) that, together
// with the held devices, have the highest total pair affinity (NVLink
// lanes, then PCIe closeness). Ties go to the lowest device indices. It
// returns 0 when avail has fewer than k devices.
func pick(sl *slotInfo, avail uint64, k int, held uint64) uint64 {
	n := bits.OnesCount64(avail)
	if k <= 0 || n < k {
		return 0
	}
	if n == k {
		return avail
	}
	if sl.w == nil || (sl.uniform && held == 0) {
		return lowBits(avail, k)
	}
	if binomial(n, k) <= maxCombos {
		return pickExact(sl, avail, n, k, held)
	}
	return pickGreedy(sl, avail, k, held)
}

func binomial(n, k int) int {
	if k > n-k {
		k = n - k
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > maxCombos {
			return r
		}
	}
	return r
}

// heldAffinity returns, per slot bit, the affinity to the held devices.
func heldAffinity(sl *slotInfo, held uint64, out *[maxSlotDevices]int32) {
	nd := len(sl.devs)
	for h := held; h != 0; h &= h - 1 {
		j := bits.TrailingZeros64(h)
		row := sl.w[j*nd : (j+1)*nd]
		for i := range nd {
			out[i] += row[i]
		}
	}
}

func pickExact(sl *slotInfo, avail uint64, n, k int, held uint64) uint64 {
	var pos [maxSlotDevices]int
	i := 0
	for m := avail; m != 0; m &= m - 1 {
		pos[i] = bits.TrailingZeros64(m)
		i++
	}
	var ha [maxSlotDevices]int32
	heldAffinity(sl, held, &ha)
	nd := len(sl.devs)
	var idx [maxSlotDevices]int
	for i := range k {
		idx[i] = i
	}
	best := int32(-1)
	var bestMask uint64
	for {
		var score int32
		var mask uint64
		for a := range k {
			pa := pos[idx[a]]
			mask |= 1 << pa
			score += ha[pa]
			row := sl.w[pa*nd : (pa+1)*nd]
			for b := a + 1; b < k; b++ {
				score += row[pos[idx[b]]]
			}
		}
		if score > best {
			best, bestMask = score, mask
		}
		// Next combination in lexicographic order.
		j := k - 1
		for j >= 0 && idx[j] == n-k+j {
			j--
		}
		if j < 0 {
			return bestMask
		}
		idx[j]++
		for l := j + 1; l < k; l++ {
			idx[l] = idx[l-1] + 1
		}
	}
}

func pickGreedy(sl *slotInfo, avail uint64, k int, held uint64) uint64 {
	var gain [maxSlotDevices]int32
	heldAffinity(sl, held, &gain)
	nd := len(sl.devs)
	var out uint64
	if held == 0 && k >= 2 {
		// Seed with the best-connected free pair.
		ba, bb, best := -1, -1, int32(-1)
		for m := avail; m != 0; m &= m - 1 {
			a := bits.TrailingZeros64(m)
			for m2 := m & (m - 1); m2 != 0; m2 &= m2 - 1 {
				b := bits.TrailingZeros64(m2)
				if v := sl.w[a*nd+b]; v > best {
					ba, bb, best = a, b, v
				}
			}
		}
		for _, b := range [2]int{ba, bb} {
			out |= 1 << b
			row := sl.w[b*nd : (b+1)*nd]
			for i := range nd {
				gain[i] += row[i]
			}
		}
		k -= 2
	}
	for range k {
		bestBit, best := -1, int32(-1)
		for m := avail &^ out; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			if gain[b] > best {
				best, bestBit = gain[b], b
			}
		}
		out |= 1 << bestBit
		row := sl.w[bestBit*nd : (bestBit+1)*nd]
		for i := range nd {
			gain[i] += row[i]
		}
	}
	return out
}

// groupFor returns the sub-mask of avail in which to place k devices under
// the island/NUMA constraints: the group with the fewest free devices that
// still has k (best fit), ties to the lowest group. It returns 0 when no
// group has k free devices.
func groupFor(sl *slotInfo, avail uint64, k int, island, numa bool) uint64 {
	if !island && !numa {
		return avail
	}
	best, bestN := uint64(0), maxSlotDevices+1
	try := func(g uint64) {
		if c := bits.OnesCount64(avail & g); c >= k && c < bestN {
			best, bestN = avail&g, c
		}
	}
	switch {
	case island && numa:
		for _, a := range sl.islands {
			for _, b := range sl.numas {
				try(a & b)
			}
		}
	case island:
		for _, a := range sl.islands {
			try(a)
		}
	default:
		for _, b := range sl.numas {
			try(b)
		}
	}
	return best
}
