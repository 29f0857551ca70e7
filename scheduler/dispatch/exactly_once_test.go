package dispatch

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestExactlyOnceUnderFailure is the exactly-once property of Srinivasrao
// et al. (IJDPS 2013: when a worker dies, every task it held completes
// elsewhere exactly once) with duplication and scanning on: millions of
// random operations — submissions of tasks that may be bad, Next, scan
// verdicts, completions, worker failures (also mid-service and mid-scan),
// graceful leaves and joins — and then a drain. Every submitted task must
// end exactly once: won once, or rejected once by its scan, never both;
// none lost; no copy of a task runs before its scan cleared it, none after
// it was rejected, and no task is scanned by two workers at once.
func TestExactlyOnceUnderFailure(t *testing.T) {
	ops := 4_000_000
	if raceEnabled || testing.Short() {
		ops = 400_000
	}
	cases := []struct {
		name string
		cfg  Config
		ops  int
	}{
		{"das/robust", Config{Workers: 4, Policy: PolicyDAS, Scan: ScanRobust, BadRecovery: 10 * time.Millisecond}, ops},
		{"das/scan-all/tied", Config{Workers: 4, Policy: PolicyDAS, Scan: ScanAll, Choice: ChoicePowerOfTwo, Seed: 3, PurgeOnStart: true}, ops / 4},
		{"naive/robust", Config{Workers: 3, Policy: PolicyNaive, Scan: ScanRobust, BadRecovery: 10 * time.Millisecond, Choice: ChoiceRoundRobin}, ops / 4},
		{"hedged/scan-all", Config{Workers: 3, Policy: PolicyHedged, Scan: ScanAll, HedgeDelay: 3 * time.Millisecond}, ops / 4},
		{"budgeted/robust", Config{Workers: 5, Policy: PolicyBudgeted, Scan: ScanRobust, BadRecovery: time.Millisecond}, ops / 4},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := runExactlyOnce(t, c.cfg, c.ops, uint64(i+1))
			t.Logf("%d ops: %d tasks, %d won, %d rejected, %d scans, %d copies held back, %d duplicates, %d re-queued, %d dropped",
				c.ops, st.Submitted, st.Completed, st.Rejected, st.Scans, st.Held, st.Duplicates, st.Requeued, st.Dropped)
		})
	}
}

type hostTask struct {
	id        TaskID
	bad, scan bool // truth, and whether the Dispatcher marked it for scanning
	cleared   bool
	serving   uint8 // copies in service now
	won       uint8
	rejected  uint8
}

type hostWorker struct {
	state   uint8 // wLive, wDraining, wGone
	serving bool
	task    int
	id      TaskID
	scan    bool // the copy in service awaits its scan
}

type exactlyOnce struct {
	t       *testing.T
	d       *Dispatcher[int]
	rng     *rand.Rand
	now     time.Time
	tasks   []hostTask
	workers []hostWorker
	alive   []WorkerID // workers not gone, in no particular order
}

// pick returns a random worker that is not gone, or NoWorker.
func (h *exactlyOnce) pick() WorkerID {
	if len(h.alive) == 0 {
		return NoWorker
	}
	return h.alive[h.rng.IntN(len(h.alive))]
}

// gone marks worker w gone.
func (h *exactlyOnce) gone(w WorkerID) {
	h.workers[w] = hostWorker{state: wGone}
	for i, a := range h.alive {
		if a == w {
			h.alive[i] = h.alive[len(h.alive)-1]
			h.alive = h.alive[:len(h.alive)-1]
			return
		}
	}
}

func runExactlyOnce(t *testing.T, cfg Config, ops int, seed uint64) Stats {
	d, err := New[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &exactlyOnce{t: t, d: d, rng: rand.New(rand.NewPCG(seed, 99)), now: time.Unix(0, 0)}
	h.workers = make([]hostWorker, cfg.Workers)
	for w := range cfg.Workers {
		h.alive = append(h.alive, WorkerID(w))
	}
	for op := range ops {
		h.now = h.now.Add(time.Duration(h.rng.IntN(300)) * time.Microsecond)
		switch r := h.rng.IntN(200); {
		case r < 24:
			h.submit()
		case r < 120:
			h.next(h.pick())
		case r < 192:
			h.progress(h.pick())
		case r < 193:
			h.hedge(h.now)
		case r < 197:
			if len(h.alive) < 8 {
				h.join()
			}
		case r < 199:
			h.fail(h.pick())
		default:
			h.leave(h.pick())
		}
		if op%65536 == 0 {
			h.checkAll()
		}
	}
	h.drain()
	st := d.Stats()
	for i := range h.tasks {
		k := &h.tasks[i]
		switch {
		case int(k.won)+int(k.rejected) != 1:
			t.Fatalf("task %d: won %d, rejected %d", i, k.won, k.rejected)
		case k.rejected == 1 && !(k.bad && k.scan):
			t.Fatalf("task %d rejected but bad=%v scanned=%v", i, k.bad, k.scan)
		case k.bad && k.scan && k.rejected != 1:
			t.Fatalf("task %d: bad and scanned, yet it ran", i)
		}
	}
	if st.Submitted != uint64(len(h.tasks)) || st.Completed+st.Rejected != st.Submitted || st.InFlight != 0 {
		t.Fatalf("stats %+v for %d tasks", st, len(h.tasks))
	}
	return st
}

func (h *exactlyOnce) checkAll() {
	h.t.Helper()
	if err := h.d.check(); err != nil {
		h.t.Fatal(err)
	}
	var open int
	for i := range h.tasks {
		if h.tasks[i].won+h.tasks[i].rejected == 0 {
			open++
		}
	}
	if st := h.d.Stats(); st.InFlight != open {
		h.t.Fatalf("in flight %d, host counts %d open tasks", st.InFlight, open)
	}
}

var riskLevels = [...]float64{0, 0.05, 0.5, 0.95}

func (h *exactlyOnce) submit() {
	p := riskLevels[h.rng.IntN(len(riskLevels))]
	bad := h.rng.Float64() < p
	i := len(h.tasks)
	pl, err := h.d.SubmitRisk(i, h.now, Risk{Probability: p, ScanCost: time.Millisecond, Work: 2 * time.Millisecond})
	if errors.Is(err, ErrNoWorkers) {
		return
	}
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	if want := h.d.cfg.Scan.Decide(Risk{Probability: p, ScanCost: time.Millisecond, Work: 2 * time.Millisecond}, h.d.cfg.BadRecovery); pl.Scan != want {
		h.t.Fatalf("task %d (risk %v): Placement.Scan %v, want %v", i, p, pl.Scan, want)
	}
	h.tasks = append(h.tasks, hostTask{id: pl.ID, bad: bad, scan: pl.Scan})
}

func (h *exactlyOnce) next(w WorkerID) {
	if w == NoWorker {
		return
	}
	hw := &h.workers[w]
	if hw.state != wLive || hw.serving {
		return
	}
	tk, ok, err := h.d.Next(w)
	if err != nil {
		h.t.Fatalf("next on worker %d: %v", w, err)
	}
	if !ok {
		return
	}
	k := &h.tasks[tk.Payload]
	switch {
	case k.rejected > 0:
		h.t.Fatalf("task %d handed to worker %d after its scan rejected it", tk.Payload, w)
	case k.won > 0:
		h.t.Fatalf("task %d handed to worker %d after it was won", tk.Payload, w)
	case tk.ID != k.id:
		h.t.Fatalf("task %d: id %#x, want %#x", tk.Payload, tk.ID, k.id)
	case tk.Scan != (k.scan && !k.cleared):
		h.t.Fatalf("task %d: Task.Scan %v, marked %v, cleared %v", tk.Payload, tk.Scan, k.scan, k.cleared)
	case k.scan && !k.cleared && k.serving > 0:
		h.t.Fatalf("task %d: a second copy in service before its scan's verdict", tk.Payload)
	}
	k.serving++
	*hw = hostWorker{state: wLive, serving: true, task: tk.Payload, id: tk.ID, scan: tk.Scan}
}

// progress moves worker w's copy on: a scan verdict, or a completion.
func (h *exactlyOnce) progress(w WorkerID) {
	if w == NoWorker {
		return
	}
	hw := &h.workers[w]
	if hw.state == wGone || !hw.serving {
		return
	}
	k := &h.tasks[hw.task]
	if hw.scan {
		if h.rng.IntN(16) == 0 {
			// Running before the verdict is refused, and changes nothing.
			before := h.d.Stats()
			if _, err := h.d.Complete(hw.id, w, h.now); !errors.Is(err, ErrScanOrder) {
				h.t.Fatalf("complete of task %d before its scan: %v, want ErrScanOrder", hw.task, err)
			}
			if h.d.Stats() != before {
				h.t.Fatal("a refused Complete changed the stats")
			}
		}
		res, err := h.d.Scanned(hw.id, w, ScanVerdict{Bad: k.bad, Reason: "test verdict"})
		if err != nil {
			h.t.Fatalf("scanned task %d on worker %d: %v", hw.task, w, err)
		}
		if res.Rejected != k.bad {
			h.t.Fatalf("task %d: rejected %v, bad %v", hw.task, res.Rejected, k.bad)
		}
		if !k.bad {
			k.cleared, hw.scan = true, false
			return
		}
		k.rejected++
		k.serving--
		h.stop(w)
		// Completing the rejected task is refused, and changes nothing.
		before := h.d.Stats()
		if _, err := h.d.Complete(hw.id, w, h.now); !errors.Is(err, ErrRejected) && !errors.Is(err, ErrWorkerGone) {
			h.t.Fatalf("complete of rejected task %d: %v, want ErrRejected", hw.task, err)
		}
		if h.d.Stats() != before {
			h.t.Fatal("a refused Complete changed the stats")
		}
		return
	}
	out, err := h.d.Complete(hw.id, w, h.now)
	if err != nil {
		h.t.Fatalf("complete task %d on worker %d: %v", hw.task, w, err)
	}
	if out.Won {
		k.won++
	}
	k.serving--
	h.stop(w)
}

func (h *exactlyOnce) stop(w WorkerID) {
	hw := &h.workers[w]
	hw.serving, hw.scan = false, false
	if hw.state == wDraining {
		h.gone(w)
	}
}

func (h *exactlyOnce) hedge(now time.Time) {
	for {
		if _, ok := h.d.Hedge(now); !ok {
			return
		}
	}
}

func (h *exactlyOnce) join() {
	w, err := h.d.Join()
	if err != nil {
		h.t.Fatal(err)
	}
	if int(w) != len(h.workers) {
		h.t.Fatalf("joined worker %d, want %d", w, len(h.workers))
	}
	h.workers = append(h.workers, hostWorker{})
	h.alive = append(h.alive, w)
}

func (h *exactlyOnce) fail(w WorkerID) {
	if w == NoWorker {
		return
	}
	hw := &h.workers[w]
	if _, err := h.d.Fail(w); err != nil {
		h.t.Fatalf("fail worker %d: %v", w, err)
	}
	if hw.serving {
		h.tasks[hw.task].serving--
		// Its copy was re-queued: the crashed worker can report nothing.
		if _, err := h.d.Complete(hw.id, w, h.now); !errors.Is(err, ErrWorkerGone) {
			h.t.Fatalf("complete after fail: %v", err)
		}
	}
	h.gone(w)
}

func (h *exactlyOnce) leave(w WorkerID) {
	if w == NoWorker || h.workers[w].state != wLive {
		return
	}
	if _, err := h.d.Leave(w); err != nil {
		h.t.Fatalf("leave worker %d: %v", w, err)
	}
	if h.workers[w].serving {
		h.workers[w].state = wDraining
	} else {
		h.gone(w)
	}
}

// drain serves everything left, joining a worker if none is live.
func (h *exactlyOnce) drain() {
	if h.d.Stats().Live == 0 {
		h.join()
	}
	for {
		before := h.d.Stats()
		for w := range h.workers {
			if h.workers[w].serving {
				h.progress(WorkerID(w))
			} else {
				h.next(WorkerID(w))
			}
		}
		h.hedge(h.now.Add(time.Hour))
		after := h.d.Stats()
		busy := false
		for w := range h.workers {
			busy = busy || h.workers[w].serving
		}
		if after == before && !busy {
			break
		}
	}
	h.checkAll()
}
