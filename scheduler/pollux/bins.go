package pollux

import (
	"slices"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// The goodput engine models placement at node granularity so that the
// node count behind every speedup it uses is the one a packing placement
// (placement.Chooser's Pack strategy, or placement.Packer) gives: a bin is the
// healthy devices of one type on one node.

// slot is k devices of a job on bin b.
type slot struct{ bin, k int }

// layout is the static bin structure of a cluster. It depends on the
// cluster only, so it is built once per cluster index, kept with the
// index, and shared, read-only, by every round on that cluster.
type layout struct {
	binDevs [][]string // healthy devices per bin, by node then index
	binType []int
	binCap  []int
	binsOf  [][]int // per type
	maxCap  []int   // per type: largest bin
	devBin  map[string]int
	// binStart numbers the healthy devices densely, bin by bin: device k
	// of bin b (binDevs[b][k]) is number binStart[b]+k; devNum maps an ID
	// to its number.
	binStart []int
	devNum   map[string]int
}

// layoutKey is the key under which a layout is kept with its index.
type layoutKey struct{}

// newLayout returns the layout of cluster c, indexed as x: the one kept
// with x when x indexes c (then every cluster x indexes has the same
// nodes and devices in the same order, so the same layout), built afresh
// otherwise.
func newLayout(c *accel.Cluster, x *placement.Index) *layout {
	if !x.Indexes(c) {
		return buildLayout(c, x)
	}
	return x.Derived(layoutKey{}, func() any { return buildLayout(c, x) }).(*layout)
}

// buildLayout builds the layout of cluster c, indexed as x: a bin per node
// (in c's order) and type (in the order of the node's devices) with
// usable devices.
func buildLayout(c *accel.Cluster, x *placement.Index) *layout {
	nt := len(x.Types())
	l := &layout{binsOf: make([][]int, nt), maxCap: make([]int, nt), devBin: make(map[string]int, c.Size())}
	for _, n := range c.Nodes {
		bins := make(map[int]int)
		for _, d := range n.Devices {
			if !d.Healthy || d.MIGEnabled {
				continue // not usable (a MIG parent is never placed)
			}
			t, _ := x.TypeIndex(d.Type)
			b, ok := bins[t]
			if !ok {
				b = len(l.binType)
				bins[t] = b
				l.binType = append(l.binType, t)
				l.binCap = append(l.binCap, 0)
				l.binDevs = append(l.binDevs, nil)
				l.binsOf[t] = append(l.binsOf[t], b)
			}
			l.binCap[b]++
			l.devBin[d.ID] = b
			l.binDevs[b] = append(l.binDevs[b], d.ID)
		}
	}
	for t, bs := range l.binsOf {
		for _, b := range bs {
			l.maxCap[t] = max(l.maxCap[t], l.binCap[b])
		}
	}
	l.binStart = make([]int, len(l.binCap))
	l.devNum = make(map[string]int, len(l.devBin))
	num := 0
	for b, ids := range l.binDevs {
		l.binStart[b] = num
		for _, id := range ids {
			l.devNum[id] = num
			num++
		}
	}
	return l
}

// state is one allocation: a (type, count, bins) per job and the free
// devices per bin, indexed by (type, free count, hosts a distributed job).
// Only bins with free devices are listed in the buckets (pack, probe and
// countNew never look at full bins), so the keys of free count 0 stay
// empty.
type state struct {
	typ, cnt []int
	place    [][]slot
	free     []int // per type
	bfree    []int // per bin
	bdist    []int // per bin: distributed jobs on it
	bucket   [][][]int
	pos      []int
	// wide keeps aggregates of the jobs spanning more than wideSlots
	// bins, so that probing and moving them costs what changes rather
	// than their bin count; nil until one is needed.
	wide *wideIndex
	// gused is, with Problem.Caps, the devices each group holds per type
	// (index group·types + type); nil without caps.
	gused []int
}

// wideSlots is the most bins a job may span before the state keeps its
// aggregates (see wideIndex).
const wideSlots = 16

// wideIndex holds, for jobs spanning more than wideSlots bins (from the
// first time one is probed or moved), the sum of the free devices on its
// bins, how many of its bins host another distributed job, and whether
// its slots are sorted by size; and for every bin the wide jobs on it, so
// that a change of the bin updates them.
//
// An entry for job i is valid while the state's slot list of i is the
// very list it was built for (place[i]): a state reset by copying another
// state's fields over it leaves stale entries behind, which are then
// ignored, dropped when their bins are used, and rebuilt when i is
// assigned again.
type wideIndex struct {
	place  [][]slot // per job: the slot list the entry describes; nil = none
	free   []int    // per job: Σ bfree over its bins
	dirty  []int    // per job: its bins with another distributed job on them
	sorted []bool   // per job: slot sizes non-decreasing
	occ    []int32  // per bin b: the wide jobs on it, at layout.binStart[b]
	nocc   []int32  // per bin: how many
	// back and hw: the storage growWide allocated for a job's slots and
	// the longest list it made there. A job whose list is exactly that
	// (nothing else refers to the storage beyond it) grows in place.
	back []*slot
	hw   []int
}

// emptyState returns a state with no job placed: a copy of the layout's
// empty state, built on first use (the polish replays from an empty state
// thousands of times a round; copying is much cheaper than bucketing every
// bin again, and gives the same bucket order).
func (e *Search) emptyState() *state { return e.emptyBase().clone() }

// emptyBase returns the layout's empty state itself, building it on first
// use (read it, copy it; never change it).
func (e *Search) emptyBase() *state {
	l := e.lay
	if e.empty == nil {
		nt := len(e.types)
		s := &state{typ: make([]int, len(e.jobs)), cnt: make([]int, len(e.jobs)), place: make([][]slot, len(e.jobs)),
			free: make([]int, nt), bfree: slices.Clone(l.binCap), bdist: make([]int, len(l.binCap)),
			bucket: make([][][]int, nt), pos: make([]int, len(l.binCap))}
		if e.caps != nil {
			s.gused = make([]int, len(e.caps))
		}
		for i := range s.typ {
			s.typ[i] = -1
		}
		for t := range nt {
			s.bucket[t] = make([][]int, 2*(l.maxCap[t]+1))
			for _, b := range l.binsOf[t] {
				s.free[t] += l.binCap[b]
				s.rebucket(l, b)
			}
		}
		e.empty = s
	}
	return e.empty
}

func (s *state) clone() *state {
	c := &state{typ: slices.Clone(s.typ), cnt: slices.Clone(s.cnt), place: make([][]slot, len(s.place)),
		free: slices.Clone(s.free), bfree: slices.Clone(s.bfree), bdist: slices.Clone(s.bdist),
		bucket: make([][][]int, len(s.bucket)), pos: slices.Clone(s.pos), gused: slices.Clone(s.gused)}
	for i, p := range s.place {
		c.place[i] = slices.Clone(p)
	}
	for t, bs := range s.bucket {
		c.bucket[t] = make([][]int, len(bs))
		for k, b := range bs {
			c.bucket[t][k] = slices.Clone(b)
		}
	}
	if w := s.wide; w != nil {
		c.wide = &wideIndex{place: slices.Clone(w.place), free: slices.Clone(w.free), dirty: slices.Clone(w.dirty),
			sorted: slices.Clone(w.sorted), occ: slices.Clone(w.occ), nocc: slices.Clone(w.nocc),
			back: make([]*slot, len(w.back)), hw: make([]int, len(w.hw))} // c's lists are its own copies
		for i, p := range c.place {
			if sameSlots(w.place[i], s.place[i]) {
				c.wide.place[i] = p
			}
		}
	}
	return c
}

// sameSlots reports whether a and b are the same slot list (not merely
// equal ones).
func sameSlots(a, b []slot) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// wideOK reports whether s keeps valid aggregates for job i.
func (s *state) wideOK(i int) bool {
	return s.wide != nil && s.wide.place[i] != nil && sameSlots(s.wide.place[i], s.place[i])
}

// touch updates the aggregates of the wide jobs on bin b after its free
// count changed by dFree and its distributed jobs from d0 to d1.
func (s *state) touch(l *layout, b, dFree, d0, d1 int) {
	w := s.wide
	if w == nil || w.nocc[b] == 0 {
		return
	}
	dd := 0
	if d1 > 1 && d0 <= 1 { // a wide job is distributed itself: others are d − 1
		dd = 1
	} else if d0 > 1 && d1 <= 1 {
		dd = -1
	}
	base := l.binStart[b]
	for k := int32(0); k < w.nocc[b]; k++ {
		if j := int(w.occ[base+int(k)]); s.wideOK(j) {
			w.free[j] += dFree
			w.dirty[j] += dd
		}
	}
}

// unwide drops job i's entry and its listings on the bins it describes.
func (s *state) unwide(l *layout, i int) {
	w := s.wide
	if w == nil || w.place[i] == nil {
		return
	}
	for _, sl := range w.place[i] {
		s.unlist(l, sl.bin, i)
	}
	w.place[i], w.free[i], w.dirty[i], w.sorted[i], w.back[i], w.hw[i] = nil, 0, 0, false, nil, 0
}

// unlist removes job i from bin b's wide jobs, if it is there.
func (s *state) unlist(l *layout, b, i int) {
	w := s.wide
	base, n := l.binStart[b], int(w.nocc[b])
	for k := 0; k < n; k++ {
		if int(w.occ[base+k]) == i {
			w.occ[base+k] = w.occ[base+n-1]
			w.nocc[b]--
			return
		}
	}
}

// list adds job i to bin b's wide jobs, first dropping stale entries.
func (s *state) list(l *layout, b, i int) {
	w := s.wide
	base := l.binStart[b]
	for k := 0; k < int(w.nocc[b]); {
		if j := int(w.occ[base+k]); !s.wideOK(j) {
			n := int(w.nocc[b])
			w.occ[base+k] = w.occ[base+n-1]
			w.nocc[b]--
			continue
		}
		k++
	}
	w.occ[base+int(w.nocc[b])] = int32(i)
	w.nocc[b]++
}

// mkwide builds job i's entry for its slots now (it has none).
func (s *state) mkwide(l *layout, i int) {
	if s.wide == nil {
		n := len(s.typ)
		s.wide = &wideIndex{place: make([][]slot, n), free: make([]int, n), dirty: make([]int, n), sorted: make([]bool, n),
			occ: make([]int32, len(l.devNum)), nocc: make([]int32, len(l.binCap)), back: make([]*slot, n), hw: make([]int, n)}
	}
	w := s.wide
	p := s.place[i]
	free, dirty, sorted := 0, 0, true
	for k, sl := range p {
		s.list(l, sl.bin, i)
		free += s.bfree[sl.bin]
		if s.bdist[sl.bin] > 1 {
			dirty++
		}
		if k > 0 && p[k-1].k > sl.k {
			sorted = false
		}
	}
	w.place[i], w.free[i], w.dirty[i], w.sorted[i], w.back[i], w.hw[i] = p, free, dirty, sorted, nil, 0
}

// ownFree is the sum of the free devices on job i's bins and dirty how
// many of them host another distributed job.
func (e *Search) ownFree(s *state, i int) (free, dirty int) {
	if e.isWide(s, i) {
		return s.wide.free[i], s.wide.dirty[i]
	}
	self := 0
	if len(s.place[i]) > 1 {
		self = 1
	}
	for _, sl := range s.place[i] {
		free += s.bfree[sl.bin]
		if s.bdist[sl.bin]-self > 0 {
			dirty++
		}
	}
	return free, dirty
}

func (s *state) key(b int) int {
	k := 2 * s.bfree[b]
	if s.bdist[b] > 0 {
		k++
	}
	return k
}

func (s *state) rebucket(l *layout, b int) {
	if s.bfree[b] == 0 {
		return // full bins are not listed
	}
	t := l.binType[b]
	k := s.key(b)
	s.pos[b] = len(s.bucket[t][k])
	s.bucket[t][k] = append(s.bucket[t][k], b)
}

func (s *state) unbucket(l *layout, b int) {
	if s.bfree[b] == 0 {
		return
	}
	t := l.binType[b]
	k := s.key(b)
	list := s.bucket[t][k]
	p := s.pos[b]
	last := list[len(list)-1]
	list[p] = last
	s.pos[last] = p
	s.bucket[t][k] = list[:len(list)-1]
}

func (s *state) adjust(l *layout, b, dFree, dDist int) {
	s.unbucket(l, b)
	d0 := s.bdist[b]
	s.bfree[b] += dFree
	s.bdist[b] += dDist
	s.rebucket(l, b)
	s.touch(l, b, dFree, d0, s.bdist[b])
}

// release frees job i's devices.
func (e *Search) release(s *state, i int) {
	p := s.place[i]
	if s.wide != nil {
		s.unwide(e.lay, i)
	}
	if len(p) == 0 && s.cnt[i] == 0 {
		return
	}
	dist := 0
	if len(p) > 1 {
		dist = -1
	}
	for _, sl := range p {
		s.adjust(e.lay, sl.bin, sl.k, dist)
	}
	if s.typ[i] >= 0 {
		s.free[s.typ[i]] += s.cnt[i]
		e.groupAdd(s, i, s.typ[i], -s.cnt[i])
	}
	s.typ[i], s.cnt[i], s.place[i] = -1, 0, nil
}

// assign gives job i the slots (of type t, count c).
func (e *Search) assign(s *state, i, t, c int, p []slot) {
	dist := 0
	if len(p) > 1 {
		dist = 1
	}
	if s.wide != nil {
		s.unwide(e.lay, i) // a stale entry
	}
	for _, sl := range p {
		s.adjust(e.lay, sl.bin, -sl.k, dist)
	}
	s.typ[i], s.cnt[i], s.place[i] = t, c, p
	s.free[t] -= c
	e.groupAdd(s, i, t, c)
}

// isWide reports whether job i spans more than wideSlots bins, building
// its aggregates if it has none yet (on first use, not on assign: many
// states are only laid out and judged).
func (e *Search) isWide(s *state, i int) bool {
	if len(s.place[i]) <= e.wideSlots {
		return false
	}
	if !s.wideOK(i) {
		s.unwide(e.lay, i) // a stale entry
		s.mkwide(e.lay, i)
	}
	return true
}

// growWide adds slots extra (on bins job i does not use) to wide job i,
// whose bins are all full: what release and assign would do to the
// listed bins (a full bin that keeps its share of the job is not listed
// before, between or after, so only the new bins move).
func (e *Search) growWide(s *state, i, c int, extra []slot) {
	l := e.lay
	old := s.place[i]
	w := s.wide
	var p []slot
	if &old[0] == w.back[i] && len(old) == w.hw[i] && cap(old)-len(old) >= len(extra) {
		p = append(old, extra...) // storage only this list uses beyond old
	} else {
		p = make([]slot, len(old), max(2*len(old), len(old)+len(extra)))
		copy(p, old)
		p = append(p, extra...)
		w.back[i] = &p[0]
	}
	w.hw[i] = len(p)
	for _, sl := range extra {
		s.adjust(l, sl.bin, -sl.k, 1)
		s.list(l, sl.bin, i)
		w.free[i] += s.bfree[sl.bin]
		if s.bdist[sl.bin] > 1 {
			w.dirty[i]++
		}
	}
	if w.sorted[i] {
		w.sorted[i] = slices.IsSortedFunc(extra, func(a, b slot) int { return a.k - b.k }) && old[len(old)-1].k <= extra[0].k
	}
	s.free[s.typ[i]] -= c - s.cnt[i]
	e.groupAdd(s, i, s.typ[i], c-s.cnt[i])
	s.cnt[i], s.place[i] = c, p
	w.place[i] = p
}

// growInPlace grows job i, on two or more bins, to c devices: slots p
// (its slots now, in order, with the devices it takes on them added) and
// extra (new bins). It changes only the bins that gain devices or had
// free ones, and leaves s exactly as release and assign would, the order
// of every bucket included, when that is provable from the bins' keys:
// release lists each of its bins at the end of the bucket of its free
// count with the job's devices back (a temporary entry, which assign
// takes out again), and a bin that had free devices leaves its bucket
// and joins the one of its free count after the growth. While no
// temporary entry shares a bucket with such a move, the temporary
// entries come and go at the ends of their buckets, touching nothing
// else. It reports false, having changed nothing, otherwise (then the
// caller releases and assigns).
func (e *Search) growInPlace(s *state, i, c int, p, extra []slot) bool {
	old := s.place[i]
	if e.plainGrow || len(old) < 2 {
		return false // a job on one bin changes its bins' keys: it becomes distributed
	}
	// One pass over its bins: the moved ones (positions in old) with
	// their buckets before and after (both flagged: the job itself is
	// distributed on them), and the temporary entries that are flagged
	// too (another distributed job shares the bin), the only ones that
	// can share a bucket with a move.
	var mbuf, kbuf, tbuf [8]int
	moved, keys, temps := mbuf[:0], kbuf[:0], tbuf[:0]
	for k, sl := range old {
		f := s.bfree[sl.bin]
		if f > 0 {
			moved = append(moved, k)
			keys = append(keys, 2*f+1)
			if g := f - (p[k].k - sl.k); g > 0 {
				keys = append(keys, 2*g+1)
			}
		}
		if s.bdist[sl.bin] > 1 {
			temps = append(temps, 2*(f+sl.k)+1)
		}
	}
	for _, key := range temps {
		if slices.Contains(keys, key) {
			return false
		}
	}
	l := e.lay
	wide := s.wide != nil && s.wide.place[i] != nil
	if wide && !s.wideOK(i) {
		s.unwide(l, i) // a stale entry, as release drops it
		wide = false
	}
	// Every moved bin leaves its bucket first (release, in slot order),
	// then joins its new one (assign, in slot order).
	for _, k := range moved {
		s.unbucket(l, old[k].bin)
	}
	for _, k := range moved {
		b, d := old[k].bin, p[k].k-old[k].k
		s.bfree[b] -= d
		s.rebucket(l, b)
		s.touch(l, b, -d, s.bdist[b], s.bdist[b]) // job i's free too, while listed
	}
	for _, sl := range extra {
		s.adjust(l, sl.bin, -sl.k, 1)
	}
	np := append(p, extra...) // p is the caller's own copy
	s.free[s.typ[i]] -= c - s.cnt[i]
	e.groupAdd(s, i, s.typ[i], c-s.cnt[i])
	s.cnt[i], s.place[i] = c, np
	if wide {
		w := s.wide
		for _, sl := range extra {
			s.list(l, sl.bin, i)
			w.free[i] += s.bfree[sl.bin]
			if s.bdist[sl.bin] > 1 {
				w.dirty[i]++
			}
		}
		w.place[i], w.back[i], w.hw[i] = np, nil, 0
		w.sorted[i] = slices.IsSortedFunc(np, func(a, b slot) int { return a.k - b.k })
	}
	e.inPlace++
	return true
}

// shrinkWide shrinks wide job i, whose bins are all full and whose slots
// are sorted by size, to c devices by dropping its smallest slots first
// (what apply's shrink gives), keeping it on more than one bin: release
// and assign of the kept full bins leave the listed bins as they are, so
// only the dropped bins and a partly dropped one move. It reports false,
// leaving s unchanged, when the job would end on one bin.
func (e *Search) shrinkWide(s *state, i, c int) bool {
	l := e.lay
	old := s.place[i]
	drop := s.cnt[i] - c
	m := 0
	for m < len(old) && drop >= old[m].k {
		drop -= old[m].k
		m++
	}
	if len(old)-m < 2 {
		return false
	}
	w := s.wide
	for _, sl := range old[:m] {
		s.unlist(l, sl.bin, i)
		if s.bdist[sl.bin] > 1 {
			w.dirty[i]--
		}
		s.adjust(l, sl.bin, sl.k, -1)
	}
	p := old[m:]
	if drop > 0 {
		p = slices.Clone(p)
		p[0].k -= drop
		s.adjust(l, p[0].bin, drop, 0) // updates job i's free too: it is listed there
	}
	s.free[s.typ[i]] += s.cnt[i] - c
	e.groupAdd(s, i, s.typ[i], c-s.cnt[i])
	s.cnt[i], s.place[i] = c, p
	if len(p) > e.wideSlots {
		w.place[i] = p
	} else {
		s.unwide(l, i) // the entry still describes old, which unwide walks
	}
	return true
}

// slotChunk is how many slots newSlots allocates at once.
const slotChunk = 4096

// newSlots returns a copy of p that no other list shares, carved from a
// chunk of slots allocated at once: apply makes a new list for every
// trial move of the exchange search (the old one stays in the undo log),
// and most are dropped right after. Lists are never changed once
// assigned, nor grown in place (their capacity is their length), so
// lists carved from one chunk never touch.
func (e *Search) newSlots(p []slot) []slot {
	n := len(p)
	if n > len(e.slotBuf) {
		if n > slotChunk/16 {
			return slices.Clone(p)
		}
		e.slotBuf = make([]slot, slotChunk)
	}
	q := e.slotBuf[:n:n]
	e.slotBuf = e.slotBuf[n:]
	copy(q, p)
	return q
}

// eligible reports whether bin b may take part of a distributed gang.
func (e *Search) eligible(s *state, b int) bool {
	return !e.interference || s.bdist[b] == 0
}

// pack chooses bins for c fresh devices of type t (Pack strategy): one
// bin, the tightest that fits (bins already hosting a distributed job
// first); else across bins free of distributed jobs, the most free first
// and the remainder on the tightest bin that fits it. own lists the bins
// the gang already uses (for growing in place), which it skips. It
// returns nil when nothing fits; the slots it returns live in a scratch
// buffer that the next pack overwrites (copy them to keep them).
func (e *Search) pack(s *state, t, c int, own []slot) []slot {
	return e.packOn(s, t, c, own, len(own) == 0)
}

// packOn is pack with the one-bin choice only when single is true (pack
// skips it for a growing gang, even when none of its bins is listed and
// own may be left out).
func (e *Search) packOn(s *state, t, c int, own []slot, single bool) []slot {
	l := e.lay
	dmax := l.maxCap[t]
	if single && c <= dmax {
		for f := c; f <= dmax; f++ {
			for _, flag := range [2]int{1, 0} {
				if list := s.bucket[t][2*f+flag]; len(list) > 0 {
					e.packBuf = append(e.packBuf[:0], slot{list[len(list)-1], c})
					return e.packBuf
				}
			}
		}
	}
	// Bins in use by the gang are marked with a fresh generation.
	if e.mark == nil {
		e.mark = make([]int, len(l.binCap))
	}
	e.gen++
	gen := e.gen
	for _, sl := range own {
		e.mark[sl.bin] = gen
	}
	// The buckets do not change here and marks are only added, so the
	// last unmarked bin of a bucket only moves down its list: at[key]
	// remembers where it was (−2: not looked at yet).
	at := e.cursor[:0]
	for range s.bucket[t] {
		at = append(at, -2)
	}
	e.cursor = at
	// find returns an unused eligible bin with free f, or −1.
	find := func(f int) int {
		for flag := 0; flag < 2; flag++ {
			if flag == 1 && e.interference {
				break
			}
			key := 2*f + flag
			list := s.bucket[t][key]
			k := at[key]
			if k == -2 {
				k = len(list) - 1
			}
			for k >= 0 && e.mark[list[k]] == gen {
				k--
			}
			at[key] = k
			if k >= 0 {
				return list[k]
			}
		}
		return -1
	}
	out := e.packBuf[:0]
	rem := c
	for rem > 0 {
		top, ft := -1, 0
		for f := dmax; f >= 1 && top < 0; f-- {
			if b := find(f); b >= 0 {
				top, ft = b, f
			}
		}
		if top < 0 {
			e.packBuf = out
			return nil
		}
		if ft <= rem {
			out = append(out, slot{top, ft})
			e.mark[top] = gen
			rem -= ft
			continue
		}
		for f := rem; f <= ft; f++ {
			if b := find(f); b >= 0 {
				out = append(out, slot{b, rem})
				rem = 0
				break
			}
		}
	}
	e.packBuf = out
	return out
}

// countNew is how many new bins pack would add for rem devices of type
// t across bins (the most free first, the remainder on one bin that fits
// it), skipping the bins in own; false when they do not fit.
func (e *Search) countNew(s *state, t, rem int, own []slot) (int, bool) {
	e.countBuf = e.binsByFree(e.countBuf, s, t, own)
	return countAvail(e.countBuf, rem)
}

// binsByFree returns dst (its storage reused) holding, at index f ≥ 1,
// how many bins of type t with f free devices pack may spread a gang over
// (free of distributed jobs, under interference avoidance) leaving out
// those in own: the bins countNew counts.
func (e *Search) binsByFree(dst []int, s *state, t int, own []slot) []int {
	avail := dst[:0]
	for f := range e.lay.maxCap[t] + 1 {
		a := 0
		if f > 0 {
			a = len(s.bucket[t][2*f])
			if !e.interference {
				a += len(s.bucket[t][2*f+1])
			}
		}
		avail = append(avail, a)
	}
	for _, sl := range own { // listed, but not new
		if b := sl.bin; s.bfree[b] > 0 && (!e.interference || s.bdist[b] == 0) {
			avail[s.bfree[b]]--
		}
	}
	return avail
}

// countAvail is countNew on the bins binsByFree counts: how many new bins
// rem devices take, the most free first and the remainder on one bin
// that fits it; false when they do not fit.
func countAvail(avail []int, rem int) (int, bool) {
	n := 0
	for f := len(avail) - 1; f >= 1 && rem > 0; f-- {
		a := avail[f]
		if a <= 0 {
			continue
		}
		whole := min(a, rem/f)
		n += whole
		rem -= whole * f
		if rem > 0 && rem < f && a > whole {
			return n + 1, true
		}
	}
	if rem > 0 {
		return 0, false
	}
	return n, true
}

// apply moves job i to c devices of type t the way a packing placement
// would: shrink in place (dropping the bins where it has fewest), grow
// next to its devices (its own bins first, then the fewest new bins), else
// re-place. It reports false, leaving s unchanged, when nothing fits.
func (e *Search) apply(s *state, i, t, c int) bool {
	if c <= 0 {
		e.release(s, i)
		return true
	}
	if !e.capOK(s, i, t, c) {
		return false
	}
	oldT, oldC := s.typ[i], s.cnt[i]
	old := s.place[i]
	if oldC > 0 && oldT == t {
		switch {
		case c == oldC:
			return true
		case c < oldC:
			if e.isWide(s, i) && s.wide.free[i] == 0 && s.wide.sorted[i] && e.shrinkWide(s, i, c) {
				return true
			}
			p := e.newSlots(old)
			slices.SortStableFunc(p, func(a, b slot) int { return a.k - b.k })
			drop := oldC - c
			for k := range p {
				d := min(drop, p[k].k)
				p[k].k -= d
				drop -= d
			}
			p = slices.DeleteFunc(p, func(sl slot) bool { return sl.k == 0 })
			e.release(s, i)
			e.assign(s, i, t, c, p)
			return true
		}
		need := c - oldC
		if len(old) == 1 && s.bfree[old[0].bin] >= need {
			e.release(s, i)
			e.assign(s, i, t, c, []slot{{old[0].bin, oldC + need}})
			return true
		}
		// Grow across bins: its own bins must be free of other distributed jobs.
		free, dirty := e.ownFree(s, i)
		ok := !e.interference || dirty == 0
		if ok && free == 0 && s.wideOK(i) {
			// Nothing to top up on its (full) bins: only new bins move.
			if extra := e.packOn(s, t, need, nil, false); extra != nil {
				e.growWide(s, i, c, extra)
				return true
			}
			ok = false // pack finds no room: re-place, as below
		}
		if ok {
			// Top up its own bins (free devices there), then pack the
			// rest on new bins (pack reads only which bins it uses); the
			// new list is allocated once, with room for both.
			rem := max(need-free, 0)
			var extra []slot
			if rem > 0 {
				extra = e.pack(s, t, rem, old)
			}
			if rem == 0 || extra != nil {
				p := make([]slot, len(old), len(old)+len(extra))
				top := need
				for k, sl := range old {
					d := min(top, s.bfree[sl.bin])
					p[k] = slot{sl.bin, sl.k + d}
					top -= d
				}
				if !e.growInPlace(s, i, c, p, extra) {
					e.release(s, i)
					e.assign(s, i, t, c, append(p, extra...))
				}
				return true
			}
		}
	}
	e.release(s, i)
	if p := e.pack(s, t, c, nil); p != nil {
		e.assign(s, i, t, c, e.newSlots(p))
		return true
	}
	if oldC > 0 {
		e.assign(s, i, oldT, oldC, old)
	}
	return false
}

// growths calls try(c, n) for every count c that running job i (neither
// pinned nor rigid; no group caps) may grow to on its type, within the
// look-ahead window and the free devices, in increasing order, when probe
// finds room, n being the node count probe gives. These are what
// candidates enumerates for a growing job, probed as probe does, but the
// job's bins and the type's buckets are read once for all counts rather
// than once per count; a count that probe answers by re-placing the job
// is left to probe itself, in the same order, so that the bins' bucket
// order moves as before, and once such a probe finds no room the larger
// counts are not probed.
func (e *Search) growths(s *state, i int, try func(c, n int)) {
	j := &e.jobs[i]
	t, c0, old := s.typ[i], s.cnt[i], s.place[i]
	hi := c0 + min(e.look[t], e.maxOn(j, t)-c0) // no overflow near MaxInt
	hi = min(hi, c0+s.free[t])
	if c0+1 > hi {
		return
	}
	// probe's case of a job growing across its bins, for every count at
	// once: its own bins' free devices and, once a count needs new bins,
	// per free count f the eligible bins it does not use (what countNew
	// counts).
	free, dirty := e.ownFree(s, i)
	clean := !e.interference || dirty == 0
	own := old
	if free == 0 {
		own = nil // none of its bins is listed (a wide job may have thousands)
	}
	var avail []int
	for c := c0 + 1; c <= hi; c++ {
		n, ok := 0, false
		switch rem := c - c0 - free; {
		case len(old) == 1 && s.bfree[old[0].bin] >= c-c0:
			n, ok = 1, true
		case clean && rem <= 0:
			n, ok = len(old), true
		case clean:
			if avail == nil {
				e.availBuf = e.binsByFree(e.availBuf, s, t, own)
				avail = e.availBuf
			}
			if k, fits := countAvail(avail, rem); fits {
				n, ok = len(old)+k, true
			} else if e.fast {
				continue // probe fails: re-placing a growing job is left to the exchange search
			} else {
				n, ok = e.probe(s, i, t, c)
			}
		default:
			n, ok = e.probe(s, i, t, c)
		}
		if !ok {
			// Only probe fails here, and only by re-placing the job (the
			// window keeps the count within the free devices, a growing
			// job has no group caps, and the cases above are settled):
			// every larger count fails the same tests, and probing it
			// right after would take the job off and put it back onto
			// the same bucket ends again, leaving s as it is.
			return
		}
		try(c, n)
	}
}

// probe returns the node count job i would have on (t, c), leaving s as
// it was.
func (e *Search) probe(s *state, i, t, c int) (int, bool) {
	oldT, oldC, old := s.typ[i], s.cnt[i], s.place[i]
	if c == oldC && t == oldT {
		return len(old), true
	}
	if c <= 0 {
		return 0, true
	}
	if !e.capOK(s, i, t, c) {
		return 0, false
	}
	need := c
	if oldT == t {
		need -= oldC
	}
	if need > s.free[t] {
		return 0, false
	}
	// Shortcuts for the common cases; the rest is simulated.
	moving := false // onto t from another type, and found no room there
	switch {
	case oldC > 0 && oldT == t && c < oldC:
		if len(old) == 1 {
			return 1, true
		}
		if e.isWide(s, i) && s.wide.sorted[i] {
			// The sizes in order are the sorted ones: drop from the front.
			drop, n := oldC-c, len(old)
			for _, sl := range old {
				if drop < sl.k {
					break
				}
				drop -= sl.k
				n--
			}
			return n, true
		}
		var buf [16]int
		ks := buf[:0]
		for _, sl := range old {
			ks = append(ks, sl.k)
		}
		slices.Sort(ks)
		drop, n := oldC-c, len(ks)
		for _, k := range ks {
			if drop < k {
				break
			}
			drop -= k
			n--
		}
		return n, true
	case oldC > 0 && oldT == t && len(old) == 1 && s.bfree[old[0].bin] >= c-oldC:
		return 1, true
	case oldC > 0 && oldT == t:
		// Grow across bins: own bins first, then the fewest new bins.
		free, dirty := e.ownFree(s, i)
		rem := c - oldC - free
		if clean := !e.interference || dirty == 0; clean {
			if rem <= 0 {
				return len(old), true
			}
			own := old
			if free == 0 {
				own = nil // none of its bins is listed
			}
			if n, ok := e.countNew(s, t, rem, own); ok {
				return len(old) + n, true
			}
			if e.fast {
				return 0, false // re-placing a growing job: left to the exchange search
			}
		}
	default:
		if c <= e.lay.maxCap[t] {
			for f := c; f <= e.lay.maxCap[t]; f++ {
				if len(s.bucket[t][2*f]) > 0 || len(s.bucket[t][2*f+1]) > 0 {
					return 1, true
				}
			}
		}
		if n, ok := e.countNew(s, t, c, nil); ok {
			return n, true
		}
		if oldC == 0 {
			// countNew failed: the eligible bins hold fewer than c free
			// devices and no bin fits c alone, so apply would fail too,
			// and with nothing to release it would leave s as it is.
			return 0, false
		}
		// A job of another type: taking it off its bins leaves those of
		// t as they are, so re-placing it fails too, and of
		// replaceFails's tests (the counts just read) only its bins
		// being full is left to ask.
		moving = true
	}
	// What apply does here (oldC > 0: a waiting job was answered above;
	// a clean growth reaches here only when countNew, and so pack, found
	// no room next to its bins): re-place the job from scratch. Like
	// apply, take it off its devices, pack afresh and put it back, so
	// that the bins' bucket order moves exactly as apply moves it, but
	// without keeping the trial placement.
	if !e.fullReplace && (moving && fullBins(s, i) || !moving && e.replaceFails(s, i, t, c)) {
		// Nothing moves: its bins are full, so taking it off lists them
		// at the ends of their buckets and putting it back takes them
		// out again, leaving every bucket as it was; the failed pack
		// changes nothing. Only its wide entry goes, as release drops it.
		if s.wide != nil {
			s.unwide(e.lay, i)
		}
		e.shortcuts++
		return 0, false
	}
	e.release(s, i)
	p := e.pack(s, t, c, nil)
	if p != nil {
		e.assign(s, i, t, c, p)
		e.release(s, i)
	}
	e.assign(s, i, oldT, oldC, old)
	return len(p), p != nil
}

// fullBins reports whether every bin job i holds is full.
func fullBins(s *state, i int) bool {
	for _, sl := range s.place[i] {
		if s.bfree[sl.bin] != 0 {
			return false
		}
	}
	return true
}

// replaceFails reports, without changing s, that re-placing job i from
// scratch on c devices of type t must fail while every bin it holds is
// full (the case in which taking it off and putting it back leaves the
// buckets as they were): no single bin could hold c devices once its own
// are free, and the bins pack may spread over (free of distributed jobs,
// under interference avoidance) would hold fewer than c free devices.
// False when re-placing may succeed or a bin of the job has room.
func (e *Search) replaceFails(s *state, i, t, c int) bool {
	old := s.place[i]
	for _, sl := range old {
		if s.bfree[sl.bin] != 0 {
			return false
		}
	}
	own := s.typ[i] == t // its bins are of type t: they gain its devices
	dist := 0
	if len(old) > 1 {
		dist = 1
	}
	dmax := e.lay.maxCap[t]
	if c <= dmax {
		// One bin: its own are full (listed nowhere), so the listed bins
		// are the others, free as they are; one of its own would hold
		// only its share there, fewer than c (probe re-places a job on
		// its type only to grow it).
		for f := c; f <= dmax; f++ {
			if len(s.bucket[t][2*f]) > 0 || len(s.bucket[t][2*f+1]) > 0 {
				return false
			}
		}
	}
	// Across bins: the free devices on the bins pack may use.
	sum := 0
	for f := 1; f <= dmax; f++ {
		n := len(s.bucket[t][2*f])
		if !e.interference {
			n += len(s.bucket[t][2*f+1])
		}
		sum += f * n
	}
	if own {
		for _, sl := range old {
			if !e.interference || s.bdist[sl.bin]-dist == 0 {
				sum += sl.k
			}
		}
	}
	return sum < c
}

// layoutResult realises state s on concrete devices exactly as the engine
// laid it out: on each of a job's bins it keeps the job's current devices
// there first, then takes free devices in node/index order.
func (e *Search) layoutResult(s *state) []placement.Assignment {
	l := e.lay
	// By device number: taken by some job; whose current device it is
	// (job index + 1, 0 for none; a device is current for one job at most).
	used := make([]bool, len(l.devNum))
	owner := make([]int32, len(l.devNum))
	for i := range e.jobs {
		if s.cnt[i] == 0 {
			continue
		}
		if e.markCurrent(owner, i) {
			continue
		}
		for _, id := range e.jobs[i].Current {
			if d, ok := l.devNum[id]; ok {
				owner[d] = int32(i + 1)
			}
		}
	}
	// Every job's devices and shortfalls per slot, end to end in one
	// array each (a job's part capped at its count).
	running, total, slots := 0, 0, 0
	for i := range e.jobs {
		if s.cnt[i] > 0 {
			running, total, slots = running+1, total+s.cnt[i], slots+len(s.place[i])
		}
	}
	allDevs, allShort := make([]string, total), make([]int, slots)
	devs := make([][]string, len(e.jobs))
	short := make([][]int, len(e.jobs))
	for i := range e.jobs {
		if s.cnt[i] == 0 {
			continue
		}
		devs[i], allDevs = allDevs[:0:s.cnt[i]], allDevs[s.cnt[i]:]
		short[i], allShort = allShort[:len(s.place[i]):len(s.place[i])], allShort[len(s.place[i]):]
		for k, sl := range s.place[i] {
			n := 0
			for p, id := range l.binDevs[sl.bin] {
				if n == sl.k {
					break
				}
				if d := l.binStart[sl.bin] + p; owner[d] == int32(i+1) && !used[d] {
					used[d] = true
					devs[i] = append(devs[i], id)
					n++
				}
			}
			short[i][k] = sl.k - n
		}
	}
	var res []placement.Assignment
	if running > 0 {
		res = make([]placement.Assignment, 0, running)
	}
	for i := range e.jobs {
		if s.cnt[i] == 0 {
			continue
		}
		for k, sl := range s.place[i] {
			for p, id := range l.binDevs[sl.bin] {
				if short[i][k] == 0 {
					break
				}
				if d := l.binStart[sl.bin] + p; !used[d] {
					used[d] = true
					devs[i] = append(devs[i], id)
					short[i][k]--
				}
			}
		}
		if len(devs[i]) != s.cnt[i] { // cannot happen for a consistent state
			return nil
		}
		res = append(res, placement.Assignment{Job: e.jobs[i].ID, Devices: devs[i]})
	}
	return res
}
