package dispatch

import "time"

// Hedge issues at most one due hedged duplicate (PolicyHedged): the oldest
// outstanding task that has waited at least the hedge delay since Submit
// gets a duplicate, at normal priority, on a worker other than its
// primary's. It returns where the duplicate went, so the host can wake that
// worker; ok is false when nothing is due at now. Call it in a loop until ok
// is false, whenever the clock reaches NextHedge. Under other policies it
// never issues anything.
func (d *Dispatcher[T]) Hedge(now time.Time) (pl Placement, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delay, known := d.delay()
	if !known {
		return pl, false
	}
	for {
		e, ok := d.hedgeHead()
		if !ok {
			return pl, false
		}
		sl := &d.slots[e.slot]
		if now.Sub(sl.submit) < delay {
			return pl, false
		}
		d.hedgePop()
		pw := sl.copies[0].worker
		if sl.copies[0].state == cFree {
			pw = -1
		}
		q := d.pick(pw)
		if q < 0 {
			continue
		}
		d.enqueue(2*e.slot+1, q, high)
		d.stats.Duplicates++
		return Placement{ID: d.idOf(e.slot), Primary: NoWorker, Duplicate: WorkerID(q)}, true
	}
}

// NextHedge returns when the next hedged duplicate falls due, if any is
// pending and the hedge delay is known.
func (d *Dispatcher[T]) NextHedge() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delay, known := d.delay()
	if !known {
		return time.Time{}, false
	}
	e, ok := d.hedgeHead()
	if !ok {
		return time.Time{}, false
	}
	return d.slots[e.slot].submit.Add(delay), true
}

// HedgeDelay returns the hedge delay in use, and whether one is known yet
// (PolicyHedged only).
func (d *Dispatcher[T]) HedgeDelay() (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.delay()
}

func (d *Dispatcher[T]) delay() (time.Duration, bool) {
	if d.cfg.Policy != PolicyHedged {
		return 0, false
	}
	if d.cfg.HedgeDelay > 0 {
		return d.cfg.HedgeDelay, true
	}
	return d.hedgeDelay, d.latN >= max(1, d.cfg.HedgeWindow/16)
}

// hedgeHead returns the oldest live, still pending hedge entry, dropping
// stale ones (task completed, or its duplicate already placed).
func (d *Dispatcher[T]) hedgeHead() (hedgeEntry, bool) {
	for d.hN > 0 {
		e := d.hedges[d.hHead]
		sl := &d.slots[e.slot]
		if sl.live && sl.gen == e.gen && sl.copies[1].state == cPending {
			return e, true
		}
		d.hedgePop()
	}
	return hedgeEntry{}, false
}

func (d *Dispatcher[T]) hedgePop() {
	d.hHead++
	if d.hHead == len(d.hedges) {
		d.hHead = 0
	}
	d.hN--
}

func (d *Dispatcher[T]) hedgePush(e hedgeEntry) {
	if d.hN == len(d.hedges) {
		grown := make([]hedgeEntry, max(16, 2*len(d.hedges)))
		for i := range d.hN {
			grown[i] = d.hedges[(d.hHead+i)%len(d.hedges)]
		}
		d.hedges, d.hHead = grown, 0
	}
	d.hedges[(d.hHead+d.hN)%len(d.hedges)] = e
	d.hN++
}

// observe records a latency for the adaptive hedge delay and refreshes the
// quantile every window/8 observations (amortised O(1) per completion).
func (d *Dispatcher[T]) observe(l time.Duration) {
	d.lat[d.latPos] = l
	d.latPos++
	if d.latPos == len(d.lat) {
		d.latPos = 0
	}
	if d.latN < len(d.lat) {
		d.latN++
	}
	d.latSince++
	minN := max(1, len(d.lat)/16)
	if d.latN < minN {
		return
	}
	if d.latN > minN && d.latSince < max(1, len(d.lat)/8) {
		return
	}
	d.latSince = 0
	buf := d.scratch[:d.latN]
	copy(buf, d.lat[:d.latN])
	k := int(d.cfg.HedgeQuantile * float64(d.latN-1))
	d.hedgeDelay = selectKth(buf, k)
}

// selectKth returns the k-th smallest element of a (0-based), reordering a.
// Quickselect with a median-of-three pivot; deterministic.
func selectKth(a []time.Duration, k int) time.Duration {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
