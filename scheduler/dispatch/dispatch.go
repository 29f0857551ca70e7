package dispatch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// TaskID identifies one submitted task (both of its copies). It is never
// reused: the low 32 bits index an internal slot and the high 32 bits hold
// the slot's generation, so a stale ID is detected. The zero TaskID is never
// issued.
type TaskID uint64

// WorkerID identifies a worker. IDs are issued densely from 0 and never
// reused.
type WorkerID int32

// NoWorker is the WorkerID used where there is no worker (no duplicate was
// placed, nothing was purged or cancelled).
const NoWorker WorkerID = -1

// Task is one copy of a task, as handed to a worker by Next.
type Task[T any] struct {
	// ID identifies the task; both copies carry the same ID.
	ID TaskID
	// Payload is what was submitted.
	Payload T
	// Duplicate is true for the duplicate copy (false for the primary, or
	// for a duplicate promoted to sole copy after its primary's worker
	// failed or left).
	Duplicate bool
	// Scan is true when the worker must scan this copy before running it
	// and report the verdict with Scanned (Config.Scan, SubmitRisk).
	Scan bool
}

// Placement says where Submit (or Hedge) put a task's copies, so that the
// host can wake idle workers.
type Placement struct {
	// ID is the task's identity.
	ID TaskID
	// Primary is the worker holding the primary (NoWorker from Hedge).
	Primary WorkerID
	// Duplicate is the worker holding the duplicate, or NoWorker.
	Duplicate WorkerID
	// Scan is true when the task must be scanned before it runs.
	Scan bool
}

// Outcome is the result of Complete.
type Outcome struct {
	// Won is true when this completion is the task's result. It is false
	// when the copy had been cancelled because its sibling won first; the
	// host discards that result. Either way the worker is free.
	Won bool
	// Latency is the time from Submit to this Complete (only when Won).
	Latency time.Duration
	// Purged is the worker whose queue the sibling copy was dropped from,
	// or NoWorker.
	Purged WorkerID
	// Cancel is the worker serving the sibling copy, which the host should
	// stop (its next Complete returns Won false; its next Next skips it),
	// or NoWorker. Cancelled reports the same to the worker itself.
	Cancel WorkerID
}

// Load is a worker's queue state, as reported by WorkerLoad.
type Load struct {
	// High and Low count copies queued in each priority class.
	High, Low int
	// Serving is true while the worker holds a copy handed out by Next.
	Serving bool
	// Live is false once the worker has left or failed.
	Live bool
}

// Stats are cumulative counters of a Dispatcher.
type Stats struct {
	// Submitted and Completed count tasks (winning completions).
	Submitted, Completed uint64
	// Duplicates counts duplicate copies placed (including hedges).
	Duplicates uint64
	// Purged counts sibling copies dropped from a queue; Cancelled counts
	// sibling copies cancelled while in service (wasted partial work).
	Purged, Cancelled uint64
	// Lost counts completions of copies cancelled in service (Won false).
	Lost uint64
	// Requeued counts copies moved off a worker that left or failed;
	// Dropped counts redundant copies discarded then because no other
	// worker could take them while their sibling was alive.
	Requeued, Dropped uint64
	// Scans counts scan verdicts reported; Rejected counts tasks a scan
	// found bad (they never ran, and are not Completed).
	Scans, Rejected uint64
	// Held counts copies held back from a worker because their task's
	// scan was under way on another worker.
	Held uint64
	// InFlight is the number of tasks submitted and neither completed nor
	// rejected.
	InFlight int
	// Live is the number of live workers.
	Live int
}

const (
	high = 0 // class of primaries (and of naive and hedged duplicates)
	low  = 1 // class of DAS and budgeted duplicates
)

// copy states
const (
	cFree    uint8 = iota // not placed (no duplicate, purged, dropped)
	cPending              // hedged duplicate not yet issued
	cQueued               // in a worker's (or the orphan) queue
	cServing              // handed out by Next
	cHeld                 // held back while the task's scan is under way
)

// worker states
const (
	wLive     uint8 = iota
	wDraining       // left, still serving its last copy
	wGone
)

const orphan = -2 // worker index of the queue of copies with no live worker

type copyNode struct {
	prev, next int32 // copy indices (slot*2 + k) in the worker's class list
	worker     int32 // worker holding it, orphan, or -1
	state      uint8
	class      uint8
}

type slot[T any] struct {
	payload  T
	submit   time.Time
	copies   [2]copyNode
	gen      uint32
	nextFree int32
	live     bool
	scan     uint8 // scanNo, scanPending or scanCleared
	// rejectedGen is the generation of the last task in this slot that a
	// scan rejected, so that a late Complete of it says ErrRejected.
	rejectedGen uint32
}

type worker struct {
	head, tail [2]int32
	n          [2]int32
	cur        TaskID
	curCopy    int32
	serving    bool
	cancelled  bool
	state      uint8
	heapPos    int32
	livePos    int32
	idlePos    int32
}

type hedgeEntry struct {
	slot int32
	gen  uint32
}

// Dispatcher places tasks on workers with two strict priority classes per
// worker and purges the losing copy of a duplicated task. It is safe for
// concurrent use: every method takes one internal mutex, and no method
// blocks or starts goroutines. Create it with New.
type Dispatcher[T any] struct {
	mu  sync.Mutex
	cfg Config
	rng *rand.Rand

	slots []slot[T]
	free  int32

	workers []worker
	live    []int32  // live workers, dense; workers[i].livePos indexes it
	idle    []int32  // live workers serving nothing with empty queues
	heap    []uint64 // ChoiceLeastLoaded: indexed min-heap of live workers' keys
	rr      uint64   // ChoiceRoundRobin cursor
	woken   []int32  // scratch: idle workers that received relocated copies
	orph    worker   // copies waiting for a live worker

	hedges     []hedgeEntry // ring of hedge candidates in submit order
	hHead, hN  int
	lat        []time.Duration // ring of recent latencies (adaptive hedging)
	latPos     int
	latN       int
	latSince   int
	hedgeDelay time.Duration // current adaptive delay; 0 = not known yet
	scratch    []time.Duration

	stats Stats
}

// New returns a Dispatcher with cfg.Workers live workers.
func New[T any](cfg Config) (*Dispatcher[T], error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	d := &Dispatcher[T]{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		free: -1,
	}
	d.orph = worker{head: [2]int32{-1, -1}, tail: [2]int32{-1, -1}, curCopy: -1}
	if cfg.Policy == PolicyHedged && cfg.HedgeDelay == 0 {
		d.lat = make([]time.Duration, cfg.HedgeWindow)
		d.scratch = make([]time.Duration, cfg.HedgeWindow)
	}
	for range cfg.Workers {
		d.join()
	}
	return d, nil
}

// Config returns the configuration in use, defaults filled in.
func (d *Dispatcher[T]) Config() Config { return d.cfg }

// ---------------------------------------------------------------- workers

// Join adds a live worker and returns its ID. Copies stranded while no
// worker was live are all placed on it at once: call Next on it. It fails
// only past 2^24 workers ever joined (ErrTooManyWorkers).
func (d *Dispatcher[T]) Join() (WorkerID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.workers) >= maxWorkers {
		return NoWorker, fmt.Errorf("%w: %d workers joined", ErrTooManyWorkers, len(d.workers))
	}
	w := d.join()
	for d.orph.head[high] >= 0 {
		ci := d.orph.head[high]
		d.unlink(ci)
		d.enqueue(ci, d.pick(-1), high)
		d.stats.Requeued++
	}
	return WorkerID(w), nil
}

func (d *Dispatcher[T]) join() int32 {
	w := int32(len(d.workers))
	d.workers = append(d.workers, worker{
		head: [2]int32{-1, -1}, tail: [2]int32{-1, -1},
		curCopy: -1, heapPos: -1, livePos: -1, idlePos: -1,
	})
	wk := &d.workers[w]
	wk.livePos = int32(len(d.live))
	d.live = append(d.live, w)
	if d.cfg.Choice == ChoiceLeastLoaded {
		wk.heapPos = int32(len(d.heap))
		d.heap = append(d.heap, d.key(w))
		d.heapUp(int(wk.heapPos))
	}
	d.touch(w)
	d.stats.Live = len(d.live)
	return w
}

func (d *Dispatcher[T]) worker(w WorkerID) (*worker, error) {
	if w < 0 || int(w) >= len(d.workers) {
		return nil, fmt.Errorf("%w: worker %d", ErrUnknownWorker, w)
	}
	return &d.workers[w], nil
}

// Leave removes a worker gracefully: it gets no new copies, its queued
// copies are re-placed on other workers (none lost), and a copy it is
// serving may still be completed by it, after which it is gone. Calls for a
// worker that has left return ErrWorkerGone (except that Complete of its
// last copy). It returns the idle workers that received copies, which the
// host should wake (call Next on).
func (d *Dispatcher[T]) Leave(w WorkerID) (wake []WorkerID, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wk, err := d.worker(w)
	if err != nil {
		return nil, err
	}
	if wk.state != wLive {
		return nil, fmt.Errorf("%w: Leave of worker %d", ErrWorkerGone, w)
	}
	d.woken = d.woken[:0]
	d.retire(int32(w))
	if wk.serving {
		wk.state = wDraining
	} else {
		wk.state = wGone
	}
	d.evacuate(int32(w))
	return d.wokenList(), nil
}

// Fail removes a worker that crashed: every copy it held, queued or in
// service, is re-placed on another worker, or dropped if its sibling copy
// is alive elsewhere and no third worker can take it (the sibling is then
// promoted to the high class). With no live worker left, copies wait and
// are placed by the next Join. Nothing is lost. Later calls for the worker
// return ErrWorkerGone. It returns the idle workers that received copies,
// which the host should wake (call Next on).
func (d *Dispatcher[T]) Fail(w WorkerID) (wake []WorkerID, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wk, err := d.worker(w)
	if err != nil {
		return nil, err
	}
	if wk.state == wGone {
		return nil, fmt.Errorf("%w: Fail of worker %d", ErrWorkerGone, w)
	}
	d.woken = d.woken[:0]
	if wk.state == wLive {
		d.retire(int32(w))
	}
	wk.state = wGone
	if wk.serving {
		ci := wk.curCopy
		wk.serving, wk.cancelled, wk.cur, wk.curCopy = false, false, 0, -1
		if ci >= 0 {
			c := d.copyAt(ci)
			c.state, c.worker = cFree, -1
			d.relocate(ci, c.class)
		}
	}
	d.evacuate(int32(w))
	return d.wokenList(), nil
}

// place enqueues a relocated copy and notes its worker if idle.
func (d *Dispatcher[T]) place(ci, t int32, class uint8) {
	if !d.workers[t].serving && !slices.Contains(d.woken, t) {
		d.woken = append(d.woken, t)
	}
	d.enqueue(ci, t, class)
}

// wokenList returns the workers noted by place, in the order noted.
func (d *Dispatcher[T]) wokenList() []WorkerID {
	if len(d.woken) == 0 {
		return nil
	}
	out := make([]WorkerID, len(d.woken))
	for i, w := range d.woken {
		out[i] = WorkerID(w)
	}
	return out
}

// retire removes a live worker from the live set, heap and idle set.
func (d *Dispatcher[T]) retire(w int32) {
	wk := &d.workers[w]
	last := d.live[len(d.live)-1]
	d.live[wk.livePos] = last
	d.workers[last].livePos = wk.livePos
	d.live = d.live[:len(d.live)-1]
	wk.livePos = -1
	if wk.heapPos >= 0 {
		d.heapRemove(int(wk.heapPos))
	}
	d.idleRemove(w)
	d.stats.Live = len(d.live)
}

// evacuate re-places every queued copy of a retired worker, primaries
// first, each class in FIFO order.
func (d *Dispatcher[T]) evacuate(w int32) {
	for class := uint8(high); class <= low; class++ {
		for d.workers[w].head[class] >= 0 {
			ci := d.workers[w].head[class]
			d.unlink(ci)
			d.relocate(ci, class)
		}
	}
}

// relocate places an unplaced copy that was on a retired worker.
func (d *Dispatcher[T]) relocate(ci int32, class uint8) {
	d.stats.Requeued++
	sib := ci ^ 1
	sc := d.copyAt(sib)
	if sc.state == cQueued || sc.state == cServing {
		if t := d.pick(sc.worker); t >= 0 {
			d.place(ci, t, class)
			return
		}
		// No third worker: the sibling alone carries the task.
		d.stats.Requeued--
		d.stats.Dropped++
		c := d.copyAt(ci)
		c.state, c.worker = cFree, -1
		if class == high && sc.state == cQueued && sc.class == low {
			sw := sc.worker
			d.unlink(sib)
			d.enqueue(sib, sw, high)
		}
		return
	}
	// Sole copy of its task: it takes the high class.
	if t := d.pick(-1); t >= 0 {
		d.place(ci, t, high)
		return
	}
	d.enqueue(ci, orphan, high)
}

// WorkerLoad reports a worker's queues.
func (d *Dispatcher[T]) WorkerLoad(w WorkerID) (Load, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wk, err := d.worker(w)
	if err != nil {
		return Load{}, err
	}
	return Load{High: int(wk.n[high]), Low: int(wk.n[low]), Serving: wk.serving, Live: wk.state == wLive}, nil
}

// Stats returns the cumulative counters.
func (d *Dispatcher[T]) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// ---------------------------------------------------------------- tasks

func (d *Dispatcher[T]) copyAt(ci int32) *copyNode {
	return &d.slots[ci>>1].copies[ci&1]
}

func (d *Dispatcher[T]) idOf(s int32) TaskID {
	return TaskID(uint64(d.slots[s].gen)<<32 | uint64(uint32(s)))
}

// Submit places a new task: its primary on the worker chosen by
// Config.Choice and, depending on Config.Policy, a duplicate on a different
// worker. now is the submission time, used for latency and hedging (any
// consistent clock; only differences are used). It returns where the copies
// went so the host can wake those workers. It fails only when no worker is
// live (ErrNoWorkers). Under Config.Scan it is SubmitRisk with a zero Risk
// (ScanAll scans it; the others do not).
func (d *Dispatcher[T]) Submit(payload T, now time.Time) (Placement, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.submit(payload, now, d.cfg.Scan == ScanAll)
}

func (d *Dispatcher[T]) submit(payload T, now time.Time, scan bool) (Placement, error) {
	if len(d.live) == 0 {
		return Placement{}, fmt.Errorf("%w: Submit", ErrNoWorkers)
	}
	s := d.alloc()
	sl := &d.slots[s]
	sl.payload = payload
	sl.submit = now
	pl := Placement{ID: d.idOf(s), Duplicate: NoWorker, Scan: scan}
	if scan {
		sl.scan = scanPending
	}
	p := d.pick(-1)
	d.enqueue(2*s, p, high)
	pl.Primary = WorkerID(p)
	var q int32 = -1
	class := uint8(low)
	switch d.cfg.Policy {
	case PolicyDAS:
		q = d.pickDup(p)
	case PolicyNaive:
		q, class = d.pickDup(p), high
	case PolicyBudgeted:
		q = d.pickIdle(p)
	case PolicyHedged:
		d.slots[s].copies[1].state = cPending
		d.hedgePush(hedgeEntry{slot: s, gen: d.slots[s].gen})
	}
	if q >= 0 {
		d.enqueue(2*s+1, q, class)
		pl.Duplicate = WorkerID(q)
		d.stats.Duplicates++
	}
	d.stats.Submitted++
	d.stats.InFlight++
	return pl, nil
}

func (d *Dispatcher[T]) alloc() int32 {
	if d.free >= 0 {
		s := d.free
		d.free = d.slots[s].nextFree
		d.slots[s].live = true
		return s
	}
	s := int32(len(d.slots))
	d.slots = append(d.slots, slot[T]{gen: 1, live: true})
	d.slots[s].copies[0] = copyNode{prev: -1, next: -1, worker: -1}
	d.slots[s].copies[1] = copyNode{prev: -1, next: -1, worker: -1}
	return s
}

func (d *Dispatcher[T]) release(s int32) {
	sl := &d.slots[s]
	var zero T
	sl.payload = zero
	sl.live = false
	sl.scan = scanNo
	sl.gen++
	if sl.gen == 0 {
		sl.gen = 1
	}
	sl.copies[0].state, sl.copies[1].state = cFree, cFree
	sl.copies[0].worker, sl.copies[1].worker = -1, -1
	sl.nextFree = d.free
	d.free = s
}

// Next hands worker w its next copy: the oldest queued primary-class copy,
// else the oldest queued duplicate-class copy. ok is false when both queues
// are empty. With Config.PurgeOnStart the copy's queued sibling is dropped.
// A worker serves one copy at a time and is never preempted: Next while it
// still serves a copy that was not cancelled returns ErrBusy; a copy that was
// cancelled (see Cancelled) is released by Next.
func (d *Dispatcher[T]) Next(w WorkerID) (task Task[T], ok bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wk, err := d.worker(w)
	if err != nil {
		return task, false, err
	}
	if wk.state != wLive {
		if wk.state == wDraining && wk.cancelled {
			wk.serving, wk.cancelled, wk.cur = false, false, 0
			wk.state = wGone
		}
		return task, false, fmt.Errorf("%w: Next for worker %d", ErrWorkerGone, w)
	}
	if wk.serving {
		if !wk.cancelled {
			return task, false, fmt.Errorf("%w: Next for worker %d while serving task %#x", ErrBusy, w, uint64(wk.cur))
		}
		wk.serving, wk.cancelled, wk.cur = false, false, 0
	}
	var ci int32
	for {
		ci = wk.head[high]
		if ci < 0 {
			ci = wk.head[low]
		}
		if ci < 0 {
			d.touch(int32(w))
			return task, false, nil
		}
		d.detach(ci)
		if d.slots[ci>>1].scan != scanPending || d.copyAt(ci^1).state != cServing {
			break
		}
		// The sibling is being scanned elsewhere: hold this copy back
		// until the verdict (Scanned re-queues it on a clean one).
		d.copyAt(ci).state = cHeld
		d.stats.Held++
	}
	c := d.copyAt(ci)
	c.state, c.worker = cServing, int32(w)
	wk.serving, wk.cur, wk.curCopy = true, d.idOf(ci>>1), ci
	d.touch(int32(w))
	sl := &d.slots[ci>>1]
	dup := ci&1 == 1 && sl.copies[0].state != cFree
	if d.cfg.PurgeOnStart && d.copyAt(ci^1).state == cQueued {
		d.unlink(ci ^ 1)
		d.stats.Purged++
	}
	return Task[T]{ID: wk.cur, Payload: sl.payload, Duplicate: dup, Scan: sl.scan == scanPending}, true, nil
}

// Cancelled reports whether the copy worker w is serving has been cancelled
// because its sibling won; the worker may abandon it and call Next.
func (d *Dispatcher[T]) Cancelled(w WorkerID) (TaskID, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wk, err := d.worker(w)
	if err != nil {
		return 0, false, err
	}
	if wk.serving && wk.cancelled {
		return wk.cur, true, nil
	}
	return 0, false, nil
}

// Complete reports that worker w finished serving task id at time now. If
// this copy won, the task is done and its sibling is purged: dropped from
// its queue (Outcome.Purged) or cancelled in service (Outcome.Cancel). If
// the copy had already been cancelled, Outcome.Won is false and the result
// should be discarded. Completing a task twice returns ErrCompleted; an ID
// never issued, ErrUnknownTask; a task w is not serving, ErrNotServing;
// now before the task's Submit, ErrTimeOrder (nothing changes, so the
// host may retry with the right time).
func (d *Dispatcher[T]) Complete(id TaskID, w WorkerID, now time.Time) (Outcome, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := Outcome{Purged: NoWorker, Cancel: NoWorker}
	wk, err := d.worker(w)
	if err != nil {
		return out, err
	}
	if wk.state == wGone {
		return out, fmt.Errorf("%w: Complete of task %#x by worker %d", ErrWorkerGone, uint64(id), w)
	}
	if !wk.serving || wk.cur != id {
		return out, d.taskError(id, w)
	}
	if wk.cancelled {
		wk.serving, wk.cancelled, wk.cur = false, false, 0
		d.stats.Lost++
		d.finishWorker(int32(w))
		return out, nil
	}
	ci := wk.curCopy
	s := ci >> 1
	sl := &d.slots[s]
	if sl.scan == scanPending {
		return out, fmt.Errorf("%w: Complete of task %#x before its scan's verdict", ErrScanOrder, uint64(id))
	}
	if now.Before(sl.submit) {
		return out, fmt.Errorf("%w: Complete of task %#x at %v, submitted at %v", ErrTimeOrder, uint64(id), now, sl.submit)
	}
	sc := d.copyAt(ci ^ 1)
	switch sc.state {
	case cQueued:
		out.Purged = WorkerID(sc.worker)
		if sc.worker == orphan {
			out.Purged = NoWorker
		}
		d.unlink(ci ^ 1)
		d.stats.Purged++
	case cServing:
		x := sc.worker
		out.Cancel = WorkerID(x)
		xw := &d.workers[x]
		xw.cancelled, xw.curCopy = true, -1
		d.stats.Cancelled++
	}
	out.Won = true
	out.Latency = now.Sub(sl.submit)
	if d.lat != nil {
		d.observe(out.Latency)
	}
	wk.serving, wk.cur, wk.curCopy = false, 0, -1
	d.release(s)
	d.stats.Completed++
	d.stats.InFlight--
	d.finishWorker(int32(w))
	return out, nil
}

// finishWorker updates a worker that just stopped serving.
func (d *Dispatcher[T]) finishWorker(w int32) {
	wk := &d.workers[w]
	if wk.state == wDraining {
		wk.state = wGone
		return
	}
	d.touch(w)
}

func (d *Dispatcher[T]) taskError(id TaskID, w WorkerID) error {
	s := int64(uint32(id))
	gen := uint32(uint64(id) >> 32)
	if gen == 0 || s >= int64(len(d.slots)) {
		return fmt.Errorf("%w: task %#x", ErrUnknownTask, uint64(id))
	}
	sl := &d.slots[s]
	if gen > sl.gen || (gen == sl.gen && !sl.live) {
		return fmt.Errorf("%w: task %#x", ErrUnknownTask, uint64(id))
	}
	if gen == sl.rejectedGen {
		return fmt.Errorf("%w: task %#x (reported by worker %d)", ErrRejected, uint64(id), w)
	}
	if gen < sl.gen {
		return fmt.Errorf("%w: task %#x (reported by worker %d)", ErrCompleted, uint64(id), w)
	}
	return fmt.Errorf("%w: task %#x is not in service on worker %d", ErrNotServing, uint64(id), w)
}

// ---------------------------------------------------------------- queues

func (d *Dispatcher[T]) wk(w int32) *worker {
	if w == orphan {
		return &d.orph
	}
	return &d.workers[w]
}

func (d *Dispatcher[T]) enqueue(ci, w int32, class uint8) {
	c := d.copyAt(ci)
	wk := d.wk(w)
	c.state, c.worker, c.class = cQueued, w, class
	c.next = -1
	c.prev = wk.tail[class]
	if c.prev >= 0 {
		d.copyAt(c.prev).next = ci
	} else {
		wk.head[class] = ci
	}
	wk.tail[class] = ci
	wk.n[class]++
	if w != orphan {
		d.touch(w)
	}
}

func (d *Dispatcher[T]) unlink(ci int32) {
	w := d.copyAt(ci).worker
	d.detach(ci)
	if w != orphan {
		d.touch(w)
	}
}

// detach removes a queued copy from its queue without updating the
// worker's indexes (the caller touches the worker).
func (d *Dispatcher[T]) detach(ci int32) {
	c := d.copyAt(ci)
	w := c.worker
	wk := d.wk(w)
	if c.prev >= 0 {
		d.copyAt(c.prev).next = c.next
	} else {
		wk.head[c.class] = c.next
	}
	if c.next >= 0 {
		d.copyAt(c.next).prev = c.prev
	} else {
		wk.tail[c.class] = c.prev
	}
	wk.n[c.class]--
	c.prev, c.next, c.state, c.worker = -1, -1, cFree, -1
}

// touch restores the heap and idle-set invariants after worker w changed.
func (d *Dispatcher[T]) touch(w int32) {
	wk := &d.workers[w]
	if wk.livePos < 0 {
		return
	}
	if wk.heapPos >= 0 {
		i := int(wk.heapPos)
		k, old := d.key(w), d.heap[i]
		if k < old {
			d.heap[i] = k
			d.heapUp(i)
		} else if k > old {
			d.heap[i] = k
			d.heapDown(i)
		}
	}
	isIdle := !wk.serving && wk.n[high] == 0 && wk.n[low] == 0
	if isIdle && wk.idlePos < 0 {
		wk.idlePos = int32(len(d.idle))
		d.idle = append(d.idle, w)
	} else if !isIdle {
		d.idleRemove(w)
	}
}

func (d *Dispatcher[T]) idleRemove(w int32) {
	wk := &d.workers[w]
	if wk.idlePos < 0 {
		return
	}
	last := d.idle[len(d.idle)-1]
	d.idle[wk.idlePos] = last
	d.workers[last].idlePos = wk.idlePos
	d.idle = d.idle[:len(d.idle)-1]
	wk.idlePos = -1
}

// ---------------------------------------------------------------- choice

// Load keys pack a worker's order into one integer: high-class copies
// queued or in service (22 bits), low-class copies queued (18 bits), then
// the worker index (24 bits, maxWorkers). Counts beyond a field saturate,
// after which such workers are ordered by index.
const (
	keyIDBits  = 24
	keyLowBits = 18
	keyIDMask  = 1<<keyIDBits - 1
	keyLowMax  = 1<<keyLowBits - 1
	keyHighMax = 1<<(64-keyIDBits-keyLowBits) - 1
)

func (d *Dispatcher[T]) key(w int32) uint64 {
	wk := &d.workers[w]
	h := uint64(wk.n[high])
	if wk.serving {
		h++
	}
	l := uint64(wk.n[low])
	h, l = min(h, keyHighMax), min(l, keyLowMax)
	return h<<(keyIDBits+keyLowBits) | l<<keyIDBits | uint64(w)
}

// less orders workers by load: high-class copies queued or in service, then
// low-class copies queued, then ID.
func (d *Dispatcher[T]) less(a, b int32) bool { return d.key(a) < d.key(b) }

// pick returns a live worker other than exclude by Config.Choice, or -1.
func (d *Dispatcher[T]) pick(exclude int32) int32 {
	n := len(d.live)
	if exclude >= 0 && d.workers[exclude].livePos < 0 {
		exclude = -1
	}
	m := n
	if exclude >= 0 {
		m--
	}
	if m <= 0 {
		return -1
	}
	switch d.cfg.Choice {
	case ChoiceLeastLoaded:
		if r := int32(d.heap[0] & keyIDMask); r != exclude {
			return r
		}
		// The runner-up of a binary heap is one of the root's children.
		best := d.heap[1]
		if len(d.heap) > 2 && d.heap[2] < best {
			best = d.heap[2]
		}
		return int32(best & keyIDMask)
	case ChoicePowerOfTwo:
		a := d.sampleLive(exclude, m, -1)
		if m == 1 {
			return a
		}
		b := d.sampleLive(exclude, m, a)
		if d.less(b, a) {
			return b
		}
		return a
	default:
		for {
			w := d.live[d.rr%uint64(n)]
			d.rr++
			if w != exclude {
				return w
			}
		}
	}
}

// sampleLive draws a live worker uniformly, excluding exclude and other
// (m is the number of live workers other than exclude).
func (d *Dispatcher[T]) sampleLive(exclude int32, m int, other int32) int32 {
	k := m
	if other >= 0 {
		k--
	}
	i := d.rng.IntN(k)
	// Map i onto live positions, skipping the excluded positions in order.
	var skip [2]int32
	ns := 0
	if exclude >= 0 {
		skip[ns] = d.workers[exclude].livePos
		ns++
	}
	if other >= 0 {
		skip[ns] = d.workers[other].livePos
		ns++
	}
	if ns == 2 && skip[0] > skip[1] {
		skip[0], skip[1] = skip[1], skip[0]
	}
	for j := 0; j < ns; j++ {
		if int32(i) >= skip[j] {
			i++
		}
	}
	return d.live[i]
}

// pickDup returns the worker for a duplicate whose primary is on p.
func (d *Dispatcher[T]) pickDup(p int32) int32 {
	if d.cfg.Choice == ChoiceRoundRobin {
		n := len(d.live)
		if n < 2 {
			return -1
		}
		return d.live[(int(d.workers[p].livePos)+1)%n]
	}
	return d.pick(p)
}

// pickIdle returns an idle live worker other than p, or -1.
func (d *Dispatcher[T]) pickIdle(p int32) int32 {
	for i := len(d.idle) - 1; i >= 0 && i >= len(d.idle)-2; i-- {
		if d.idle[i] != p {
			return d.idle[i]
		}
	}
	return -1
}

// ---------------------------------------------------------------- heap

func (d *Dispatcher[T]) heapSwap(i, j int) {
	h := d.heap
	h[i], h[j] = h[j], h[i]
	d.workers[h[i]&keyIDMask].heapPos = int32(i)
	d.workers[h[j]&keyIDMask].heapPos = int32(j)
}

func (d *Dispatcher[T]) heapUp(i int) {
	h := d.heap
	for i > 0 {
		p := (i - 1) / 2
		if h[i] >= h[p] {
			return
		}
		d.heapSwap(i, p)
		i = p
	}
}

func (d *Dispatcher[T]) heapDown(i int) {
	h := d.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[m] >= h[i] {
			return
		}
		d.heapSwap(i, m)
		i = m
	}
}

func (d *Dispatcher[T]) heapRemove(i int) {
	last := len(d.heap) - 1
	w := d.heap[i] & keyIDMask
	if i != last {
		d.heapSwap(i, last)
	}
	d.heap = d.heap[:last]
	d.workers[w].heapPos = -1
	if i < last {
		d.heapUp(i)
		d.heapDown(int(d.workers[d.heap[i]&keyIDMask].heapPos))
	}
}
