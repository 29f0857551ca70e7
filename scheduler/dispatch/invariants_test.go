package dispatch

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// check verifies every internal invariant of d: queue links and counts,
// copy states, heap order and positions, live and idle sets, task
// accounting, and that no task has both copies on one worker.
func (d *Dispatcher[T]) check() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := make([]bool, 2*len(d.slots))
	walk := func(w int32, wk *worker) error {
		for class := uint8(high); class <= low; class++ {
			n := int32(0)
			prev := int32(-1)
			for ci := wk.head[class]; ci >= 0; ci = d.copyAt(ci).next {
				c := d.copyAt(ci)
				if seen[ci] {
					return fmt.Errorf("copy %d twice in queues", ci)
				}
				seen[ci] = true
				if c.prev != prev || c.worker != w || c.class != class || c.state != cQueued {
					return fmt.Errorf("copy %d on worker %d class %d: prev %d (want %d) worker %d class %d state %d", ci, w, class, c.prev, prev, c.worker, c.class, c.state)
				}
				if !d.slots[ci>>1].live {
					return fmt.Errorf("copy %d queued for a dead slot", ci)
				}
				prev = ci
				n++
			}
			if wk.tail[class] != prev || wk.n[class] != n {
				return fmt.Errorf("worker %d class %d: tail %d (want %d) n %d (want %d)", w, class, wk.tail[class], prev, wk.n[class], n)
			}
		}
		return nil
	}
	for w := range d.workers {
		wk := &d.workers[w]
		if err := walk(int32(w), wk); err != nil {
			return err
		}
		if wk.state == wGone && (wk.serving || wk.n[high]+wk.n[low] > 0) {
			return fmt.Errorf("gone worker %d holds work", w)
		}
		if wk.state != wLive && (wk.livePos >= 0 || wk.heapPos >= 0 || wk.idlePos >= 0) {
			return fmt.Errorf("retired worker %d still indexed", w)
		}
		if wk.state != wLive && wk.n[high]+wk.n[low] > 0 {
			return fmt.Errorf("retired worker %d has queued copies", w)
		}
		if wk.serving && !wk.cancelled {
			c := d.copyAt(wk.curCopy)
			if c.state != cServing || c.worker != int32(w) || d.idOf(wk.curCopy>>1) != wk.cur {
				return fmt.Errorf("worker %d serving copy %d in state %d on %d", w, wk.curCopy, c.state, c.worker)
			}
		}
		if wk.state == wLive {
			if d.live[wk.livePos] != int32(w) {
				return fmt.Errorf("live position of %d", w)
			}
			isIdle := !wk.serving && wk.n[high]+wk.n[low] == 0
			if isIdle != (wk.idlePos >= 0) || (isIdle && d.idle[wk.idlePos] != int32(w)) {
				return fmt.Errorf("idle set wrong for worker %d", w)
			}
			if d.cfg.Choice == ChoiceLeastLoaded && d.heap[wk.heapPos] != d.key(int32(w)) {
				return fmt.Errorf("heap position of %d", w)
			}
		}
	}
	if err := walk(orphan, &d.orph); err != nil {
		return err
	}
	if d.orph.n[low] != 0 || (len(d.live) > 0 && d.orph.n[high] != 0) {
		return fmt.Errorf("orphans %d/%d with %d live workers", d.orph.n[high], d.orph.n[low], len(d.live))
	}
	for i := 1; i < len(d.heap); i++ {
		if d.heap[i] < d.heap[(i-1)/2] {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	if len(d.idle) > len(d.live) || (d.cfg.Choice == ChoiceLeastLoaded && len(d.heap) != len(d.live)) {
		return fmt.Errorf("set sizes: live %d idle %d heap %d", len(d.live), len(d.idle), len(d.heap))
	}
	liveTasks := 0
	for s := range d.slots {
		sl := &d.slots[s]
		if !sl.live {
			continue
		}
		liveTasks++
		alive := 0
		for k := range 2 {
			c := &sl.copies[k]
			switch c.state {
			case cQueued:
				if !seen[int32(2*s+k)] {
					return fmt.Errorf("copy %d queued but in no queue", 2*s+k)
				}
				alive++
			case cServing:
				wk := &d.workers[c.worker]
				if !wk.serving || wk.curCopy != int32(2*s+k) {
					return fmt.Errorf("copy %d serving but worker %d disagrees", 2*s+k, c.worker)
				}
				alive++
			case cHeld:
				if o := sl.copies[1-k].state; sl.scan != scanPending || (o != cServing && o != cQueued) {
					return fmt.Errorf("copy %d held, but its task's scan state is %d and its sibling's state %d", 2*s+k, sl.scan, sl.copies[1-k].state)
				}
			}
		}
		if alive == 0 {
			return fmt.Errorf("task in slot %d has no live copy (lost)", s)
		}
		a, b := &sl.copies[0], &sl.copies[1]
		if alive == 2 && a.worker == b.worker && a.worker != orphan {
			return fmt.Errorf("task in slot %d has both copies on worker %d", s, a.worker)
		}
	}
	if liveTasks != d.stats.InFlight {
		return fmt.Errorf("in flight %d, live slots %d", d.stats.InFlight, liveTasks)
	}
	return nil
}

// opRunner interprets bytes as a sequence of dispatcher calls and checks
// the invariants after each; it also checks every task is won exactly once.
type opRunner struct {
	t   testing.TB
	d   *Dispatcher[int]
	now time.Time
	won map[int]int
	// rejected counts scan rejections per payload: a task is bad when its
	// payload is a multiple of 3.
	rejected map[int]int
	ids      []TaskID
	subs     int
	steps    int
}

func newOpRunner(t testing.TB, cfg Config) *opRunner {
	d, err := New[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &opRunner{t: t, d: d, now: time.Unix(0, 0), won: map[int]int{}, rejected: map[int]int{}}
}

func (r *opRunner) worker(b byte) WorkerID {
	n := len(r.d.workers)
	if n == 0 {
		return 0
	}
	return WorkerID(int(b) % (n + 1)) // sometimes one past the end: unknown
}

func (r *opRunner) step(op, arg byte) {
	t := r.t
	d := r.d
	r.now = r.now.Add(time.Duration(arg%7) * time.Millisecond)
	switch op % 8 {
	case 0, 1:
		risk := Risk{Probability: float64(arg%5) / 4, ScanCost: time.Millisecond, Work: time.Millisecond}
		pl, err := d.SubmitRisk(r.subs, r.now, risk)
		if err != nil {
			if len(d.live) != 0 {
				t.Fatalf("submit: %v", err)
			}
			return
		}
		if pl.Primary == pl.Duplicate {
			t.Fatalf("both copies on worker %d", pl.Primary)
		}
		r.ids = append(r.ids, pl.ID)
		r.subs++
	case 2, 3:
		w := r.worker(arg)
		task, ok, err := d.Next(w)
		if err == nil && ok {
			// Complete at once half the time.
			if arg&1 == 0 {
				r.complete(task, w)
			}
		}
	case 4:
		// Complete whatever worker w serves (or a random stale ID).
		w := r.worker(arg)
		if int(w) < len(d.workers) && d.workers[w].serving {
			id := d.workers[w].cur
			p := -1
			if !d.workers[w].cancelled {
				p = r.payloadOf(id)
			}
			r.finish(id, w, p)
		} else if len(r.ids) > 0 {
			_, err := d.Complete(r.ids[int(arg)%len(r.ids)], w, r.now)
			if err == nil {
				t.Fatalf("complete of a task worker %d does not serve succeeded", w)
			}
		}
	case 5:
		if arg%4 == 0 && len(d.workers) < 12 {
			_, _ = d.Join()
		}
	case 6:
		if arg%5 == 0 {
			_, _ = d.Fail(r.worker(arg))
		} else if arg%5 == 1 {
			_, _ = d.Leave(r.worker(arg))
		}
	case 7:
		for {
			pl, ok := d.Hedge(r.now)
			if !ok {
				break
			}
			if pl.Duplicate == NoWorker {
				t.Fatal("hedge without a worker")
			}
		}
	}
	// A full check is O(tasks); after the first steps, check every 8th.
	r.steps++
	if r.steps <= 64 || r.steps%8 == 0 {
		if err := d.check(); err != nil {
			t.Fatalf("after op %d arg %d: %v", op%8, arg, err)
		}
	}
}

func (r *opRunner) payloadOf(id TaskID) int {
	return r.d.slotsPayload(id)
}

func (r *opRunner) complete(task Task[int], w WorkerID) {
	r.finish(task.ID, w, task.Payload)
}

// finish ends worker w's copy of task id (payload p, or -1 when the copy
// was cancelled): first the scan verdict when the task awaits one, then,
// unless the scan rejected it, the completion.
func (r *opRunner) finish(id TaskID, w WorkerID, p int) {
	d := r.d
	if p >= 0 && d.slots[uint32(id)].scan == scanPending {
		if _, err := d.Complete(id, w, r.now); !errors.Is(err, ErrScanOrder) {
			r.t.Fatalf("complete before the scan's verdict: %v", err)
		}
		res, err := d.Scanned(id, w, ScanVerdict{Bad: p%3 == 0})
		if err != nil {
			r.t.Fatalf("scanned: %v", err)
		}
		if res.Rejected {
			r.rejected[p]++
			return
		}
	}
	out, err := d.Complete(id, w, r.now)
	if err != nil {
		r.t.Fatalf("complete: %v", err)
	}
	if out.Won {
		r.won[p]++
	}
}

// drain serves everything left, joining a worker if none is live.
func (r *opRunner) drain() {
	d := r.d
	if len(d.live) == 0 {
		_, _ = d.Join()
	}
	for {
		progress := false
		for w := range d.workers {
			wid := WorkerID(w)
			if d.workers[w].state == wGone {
				continue
			}
			if d.workers[w].serving {
				id := d.workers[w].cur
				p := -1
				if !d.workers[w].cancelled {
					p = r.payloadOf(id)
				}
				r.finish(id, wid, p)
				progress = true
				continue
			}
			if _, ok, _ := d.Next(wid); ok {
				progress = true
			}
		}
		for {
			if _, ok := d.Hedge(r.now.Add(time.Hour)); !ok {
				break
			}
			progress = true
		}
		if !progress {
			break
		}
	}
	if err := d.check(); err != nil {
		r.t.Fatal(err)
	}
	if st := d.Stats(); st.InFlight != 0 {
		r.t.Fatalf("%d tasks never completed", st.InFlight)
	}
	for i := range r.subs {
		if r.won[i]+r.rejected[i] != 1 || (r.rejected[i] == 1 && i%3 != 0) {
			r.t.Fatalf("task %d won %d times, rejected %d times", i, r.won[i], r.rejected[i])
		}
	}
}

// slotsPayload returns the payload of a live task (test helper).
func (d *Dispatcher[T]) slotsPayload(id TaskID) T {
	return d.slots[uint32(id)].payload
}

func runOps(t testing.TB, cfg Config, data []byte) {
	r := newOpRunner(t, cfg)
	for i := 0; i+1 < len(data); i += 2 {
		r.step(data[i], data[i+1])
	}
	r.drain()
}

// FuzzOps drives every policy and choice with arbitrary call sequences,
// including joins, leaves and failures, and checks the invariants after
// every call and that every task completes exactly once.
func FuzzOps(f *testing.F) {
	f.Add(uint8(0), uint8(0), []byte{0, 0, 0, 1, 2, 0, 2, 1, 4, 0, 4, 1})
	f.Add(uint8(0), uint8(1), []byte{0, 0, 0, 0, 6, 0, 2, 1, 6, 5, 5, 0, 2, 2, 4, 3})
	f.Add(uint8(3), uint8(2), []byte{0, 3, 0, 6, 7, 6, 2, 0, 2, 1, 7, 3, 4, 0, 4, 1})
	f.Add(uint8(4), uint8(0), []byte{2, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 1, 6, 1, 6, 0})
	f.Add(uint8(2), uint8(1), []byte{0, 0, 0, 0, 0, 0, 6, 0, 6, 6, 6, 12, 5, 0, 2, 0})
	f.Fuzz(func(t *testing.T, pol, choice uint8, data []byte) {
		if len(data) > 2048 {
			data = data[:2048]
		}
		cfg := Config{Workers: 3, Policy: Policy(pol % uint8(numPolicies)), Choice: Choice(choice % uint8(numChoices)), Seed: 7, HedgeWindow: 16, PurgeOnStart: choice&4 != 0,
			Scan: ScanPolicy(pol / uint8(numPolicies) % uint8(numScanPolicies)), BadRecovery: 5 * time.Millisecond}
		runOps(t, cfg, data)
	})
}
