// Package nodeset is a set of small integers (node ranks, free-device
// counts) as a tree of 64-bit words, for the placers that file nodes by
// their free devices (placement.Packer, gavel's policy): adding, removing
// and finding the next or previous member cost O(log64 n).
package nodeset

import "math/bits"

// Set is a set of the integers 0..n-1 (node indexes, free counts) as
// a tree of 64-bit words: bit b of word w on level l+1 is set when word
// 64w+b on level l is non-zero, and the top level is one word. Adding,
// removing, and finding the next or previous member cost O(log64 n).
type Set [][]uint64

// New returns an empty set of 0..n-1.
func New(n int) Set {
	var s Set
	for {
		w := max((n+63)/64, 1)
		s = append(s, make([]uint64, w))
		if w == 1 {
			return s
		}
		n = w
	}
}

// Size returns how many integers s can hold (a multiple of 64).
func (s Set) Size() int { return 64 * len(s[0]) }

// Clear removes every member.
func (s Set) Clear() {
	for _, lv := range s {
		clear(lv)
	}
}

// Empty reports whether s has no members.
func (s Set) Empty() bool { return s[len(s)-1][0] == 0 }

// Add inserts i.
func (s Set) Add(i int) {
	for _, lv := range s {
		w := i >> 6
		was := lv[w]
		lv[w] |= 1 << (i & 63)
		if was != 0 {
			return
		}
		i = w
	}
}

// Remove deletes i.
func (s Set) Remove(i int) {
	for _, lv := range s {
		w := i >> 6
		lv[w] &^= 1 << (i & 63)
		if lv[w] != 0 {
			return
		}
		i = w
	}
}

// Next returns the least member ≥ i (i ≥ 0), or -1 when there is none.
func (s Set) Next(i int) int {
	for l, lv := range s {
		w := i >> 6
		if w >= len(lv) {
			return -1
		}
		if m := lv[w] >> (i & 63); m != 0 {
			i += bits.TrailingZeros64(m)
			for ; l > 0; l-- {
				i = i<<6 + bits.TrailingZeros64(s[l-1][i])
			}
			return i
		}
		i = w + 1
	}
	return -1
}

// Prev returns the greatest member ≤ i (i < size), or -1 when there is
// none.
func (s Set) Prev(i int) int {
	for l, lv := range s {
		if i < 0 {
			return -1
		}
		w := i >> 6
		if m := lv[w] << (63 - i&63); m != 0 {
			i -= bits.LeadingZeros64(m)
			for ; l > 0; l-- {
				i = i<<6 + 63 - bits.LeadingZeros64(s[l-1][i])
			}
			return i
		}
		i = w - 1
	}
	return -1
}
