package pollux

import (
	"cmp"
	"slices"
)

// groupAdd records that job i holds d more devices of type t.
func (e *Search) groupAdd(s *state, i, t, d int) {
	if s.gused != nil {
		s.gused[e.jobs[i].Group*len(e.types)+t] += d
	}
}

// capOK reports whether job i may hold c devices of type t in s without
// its group exceeding its cap on t (a change that does not raise the
// group's use of t is always allowed).
func (e *Search) capOK(s *state, i, t, c int) bool {
	if e.caps == nil {
		return true
	}
	x := e.jobs[i].Group*len(e.types) + t
	lim := e.caps[x]
	if lim < 0 {
		return true
	}
	add := c
	if s.typ[i] == t {
		add -= s.cnt[i]
	}
	return add <= 0 || s.gused[x]+add <= lim
}

// trimCaps brings every group of s within its caps: per group and type
// over its cap, elastic jobs shed one device at a time, from the job whose
// utility falls least (not below their minimum), then whole jobs go, least
// utility per device first (ties to the later job). Pinned jobs are kept.
func (e *Search) trimCaps(s *state) {
	if e.caps == nil {
		return
	}
	nt := len(e.types)
	var jobsOf map[int][]int
	for x, u := range s.gused {
		if lim := e.caps[x]; lim >= 0 && u > lim {
			if jobsOf == nil {
				jobsOf = make(map[int][]int)
			}
			jobsOf[x] = nil
		}
	}
	if jobsOf == nil {
		return
	}
	for i := range e.jobs {
		if e.jobs[i].pinned || s.cnt[i] == 0 {
			continue
		}
		x := e.jobs[i].Group*nt + s.typ[i]
		if js, ok := jobsOf[x]; ok {
			jobsOf[x] = append(js, i)
		}
	}
	xs := make([]int, 0, len(jobsOf))
	for x := range jobsOf {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	for _, x := range xs {
		js := jobsOf[x]
		// loss of job i shedding one device (false: it cannot).
		loss := func(i int) (shrink, bool) {
			j := &e.jobs[i]
			t, c := s.typ[i], s.cnt[i]
			if j.rigid || c <= j.min {
				return shrink{}, false
			}
			n, ok := e.probe(s, i, t, c-1)
			if !ok {
				return shrink{}, false
			}
			return shrink{loss: e.jobUtil(s, i) - j.w*e.util(e.value(j, t, n, c-1)), job: i, t: t, c: c - 1}, true
		}
		h := make(shrinkHeap, 0, len(js))
		for _, i := range js {
			if sh, ok := loss(i); ok {
				h = append(h, sh)
			}
		}
		h.init()
		for s.gused[x] > e.caps[x] && len(h) > 0 {
			sh := h.pop()
			if !e.apply(s, sh.job, sh.t, sh.c) {
				continue
			}
			if next, ok := loss(sh.job); ok {
				h.push(next)
			}
		}
		if s.gused[x] <= e.caps[x] {
			continue
		}
		type gone struct {
			loss float64
			job  int
		}
		var order []gone
		for _, i := range js {
			if s.cnt[i] > 0 {
				j := &e.jobs[i]
				order = append(order, gone{(e.jobUtil(s, i) - j.w*e.util(0)) / float64(s.cnt[i]), i})
			}
		}
		slices.SortFunc(order, func(a, b gone) int { return cmp.Or(cmp.Compare(a.loss, b.loss), cmp.Compare(b.job, a.job)) })
		for _, g := range order {
			if s.gused[x] <= e.caps[x] {
				break
			}
			e.release(s, g.job)
		}
	}
}

// mayDonate reports whether donor shrink d (of type t) may give devices
// to receiver r: always within one group; across groups only while the
// donor's group keeps its floor on t.
func (e *Search) mayDonate(s *state, d shrink, r, t int) bool {
	if e.floors == nil || e.jobs[d.job].Group == e.jobs[r].Group {
		return true
	}
	freed := s.cnt[d.job]
	if d.t == t && d.c > 0 {
		freed -= d.c
	}
	x := e.jobs[d.job].Group*len(e.types) + t
	return s.gused[x]-freed >= e.floors[x]
}

// floorsKept reports whether s leaves every group at least
// min(floor, what it holds in before).
func (e *Search) floorsKept(s, before *state) bool {
	if e.floors == nil {
		return true
	}
	for x, f := range e.floors {
		if s.gused[x] < min(f, before.gused[x]) {
			return false
		}
	}
	return true
}
