package dispatch

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(0, 0)

// must returns v, panicking (failing the test) on a non-nil error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"negative workers", Config{Workers: -1}},
		{"policy", Config{Policy: numPolicies}},
		{"choice", Config{Choice: numChoices}},
		{"hedge delay", Config{HedgeDelay: -time.Second}},
		{"quantile", Config{HedgeQuantile: 1}},
		{"quantile negative", Config{HedgeQuantile: -0.5}},
		{"window", Config{HedgeWindow: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New[int](tc.cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
		})
	}
	if _, err := New[int](Config{}); err != nil {
		t.Fatalf("zero config: %v", err)
	}
}

func FuzzConfig(f *testing.F) {
	f.Add(1, uint8(0), uint8(0), int64(0), 0.0, 0)
	f.Add(-3, uint8(9), uint8(9), int64(-1), 1.5, -1)
	f.Add(4, uint8(3), uint8(1), int64(time.Millisecond), 0.99, 64)
	f.Fuzz(func(t *testing.T, workers int, pol, choice uint8, delay int64, q float64, window int) {
		if workers > 1<<12 {
			workers = 1 << 12
		}
		d, err := New[int](Config{Workers: workers, Policy: Policy(pol), Choice: Choice(choice), HedgeDelay: time.Duration(delay), HedgeQuantile: q, HedgeWindow: min(window, 1<<12)})
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		if err := d.check(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestParse(t *testing.T) {
	for _, p := range Policies() {
		got, err := ParsePolicy(p.String())
		if err != nil || got != p {
			t.Fatalf("ParsePolicy(%q) = %v, %v", p, got, err)
		}
	}
	for c := Choice(0); c < numChoices; c++ {
		got, err := ParseChoice(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseChoice(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParsePolicy("clone"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if _, err := ParseChoice("random"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
}

func TestBadCalls(t *testing.T) {
	d := must(New[int](Config{Workers: 2, Choice: ChoiceRoundRobin}))
	pl := must(d.Submit(1, t0))
	tk, ok, err := d.Next(pl.Primary)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"unknown task", func() error { _, err := d.Complete(TaskID(999<<32|77), pl.Primary, t0); return err }, ErrUnknownTask},
		{"zero task", func() error { _, err := d.Complete(0, pl.Primary, t0); return err }, ErrUnknownTask},
		{"future generation", func() error { _, err := d.Complete(tk.ID+1<<32, pl.Primary, t0); return err }, ErrUnknownTask},
		{"not serving", func() error { _, err := d.Complete(tk.ID, pl.Duplicate, t0); return err }, ErrNotServing},
		{"unknown worker complete", func() error { _, err := d.Complete(tk.ID, 9, t0); return err }, ErrUnknownWorker},
		{"negative worker next", func() error { _, _, err := d.Next(-1); return err }, ErrUnknownWorker},
		{"busy", func() error { _, _, err := d.Next(pl.Primary); return err }, ErrBusy},
		{"unknown worker leave", func() error { _, err := d.Leave(5); return err }, ErrUnknownWorker},
		{"unknown worker fail", func() error { _, err := d.Fail(5); return err }, ErrUnknownWorker},
		{"unknown worker load", func() error { _, err := d.WorkerLoad(5); return err }, ErrUnknownWorker},
		{"unknown worker cancelled", func() error { _, _, err := d.Cancelled(5); return err }, ErrUnknownWorker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	out := must(d.Complete(tk.ID, pl.Primary, t0.Add(time.Millisecond)))
	if !out.Won || out.Purged != pl.Duplicate || out.Latency != time.Millisecond {
		t.Fatalf("outcome %+v", out)
	}
	if _, err := d.Complete(tk.ID, pl.Primary, t0); !errors.Is(err, ErrCompleted) {
		t.Fatalf("second complete: %v", err)
	}
	if _, err := d.Complete(tk.ID, pl.Duplicate, t0); !errors.Is(err, ErrCompleted) {
		t.Fatalf("complete by the other worker: %v", err)
	}
	// A worker that left.
	if _, err := d.Leave(pl.Duplicate); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Next(pl.Duplicate); !errors.Is(err, ErrWorkerGone) {
		t.Fatalf("next after leave: %v", err)
	}
	if _, err := d.Leave(pl.Duplicate); !errors.Is(err, ErrWorkerGone) {
		t.Fatalf("second leave: %v", err)
	}
	if _, err := d.Fail(pl.Duplicate); !errors.Is(err, ErrWorkerGone) {
		t.Fatalf("fail after leave: %v", err)
	}
	if _, err := d.Fail(pl.Primary); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Submit(2, t0); !errors.Is(err, ErrNoWorkers) {
		t.Fatalf("submit without workers: %v", err)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
}

// TestStrictPriority: primaries are served before duplicates, FIFO within
// each class, and a duplicate in service is not preempted.
func TestStrictPriority(t *testing.T) {
	// RR: a→(p0,d1) b→(p1,d0) c→(p0,d1) e→(p1,d0)
	d2 := must(New[string](Config{Workers: 2, Choice: ChoiceRoundRobin}))
	for _, s := range []string{"a", "b", "c", "e"} {
		must(d2.Submit(s, t0))
	}
	// Worker 0 holds primaries a, c (high) and duplicates b, e (low).
	want := []struct {
		p   string
		dup bool
	}{{"a", false}, {"c", false}, {"b", true}, {"e", true}}
	for i, w := range want {
		tk, ok, err := d2.Next(0)
		if err != nil || !ok {
			t.Fatalf("step %d: %v %v", i, ok, err)
		}
		if tk.Payload != w.p || tk.Duplicate != w.dup {
			t.Fatalf("step %d: got %q dup=%v, want %q dup=%v", i, tk.Payload, tk.Duplicate, w.p, w.dup)
		}
		// A new primary arriving while a duplicate is in service waits.
		if tk.Duplicate && tk.Payload == "b" {
			must(d2.Submit("f", t0)) // RR: primary on worker 0
			if _, _, err := d2.Next(0); !errors.Is(err, ErrBusy) {
				t.Fatalf("preempted: %v", err)
			}
			out := must(d2.Complete(tk.ID, 0, t0))
			if !out.Won {
				t.Fatal("duplicate b should win")
			}
			nt, _, _ := d2.Next(0)
			if nt.Payload != "f" {
				t.Fatalf("after b, got %q want primary f", nt.Payload)
			}
			must(d2.Complete(nt.ID, 0, t0))
			continue
		}
		must(d2.Complete(tk.ID, 0, t0))
	}
	if _, ok, _ := d2.Next(0); ok {
		t.Fatal("worker 0 should be empty")
	}
	// Worker 1's copies were all purged except f's duplicate? f went p0,d1 and
	// completed on 0, so worker 1 must be empty too.
	if l := must(d2.WorkerLoad(1)); l.High+l.Low != 0 {
		t.Fatalf("worker 1 left with %+v", l)
	}
	if err := d2.check(); err != nil {
		t.Fatal(err)
	}
}

func TestPurgeAndCancel(t *testing.T) {
	d := must(New[int](Config{Workers: 2, Choice: ChoiceRoundRobin}))
	pl := must(d.Submit(7, t0))
	a, _, _ := d.Next(pl.Primary)
	b, _, _ := d.Next(pl.Duplicate)
	if a.ID != b.ID || a.Duplicate || !b.Duplicate {
		t.Fatalf("copies %+v %+v", a, b)
	}
	out := must(d.Complete(a.ID, pl.Primary, t0))
	if !out.Won || out.Cancel != pl.Duplicate || out.Purged != NoWorker {
		t.Fatalf("outcome %+v", out)
	}
	if id, ok, _ := d.Cancelled(pl.Duplicate); !ok || id != a.ID {
		t.Fatal("duplicate's worker not told")
	}
	// Next releases the cancelled copy.
	if _, ok, err := d.Next(pl.Duplicate); ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, _ := d.Cancelled(pl.Duplicate); ok {
		t.Fatal("cancel flag not cleared")
	}
	st := d.Stats()
	if st.Cancelled != 1 || st.Completed != 1 || st.InFlight != 0 || st.Duplicates != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestChoice(t *testing.T) {
	t.Run("least loaded", func(t *testing.T) {
		d := must(New[int](Config{Workers: 3, Policy: PolicyNone}))
		for i, want := range []WorkerID{0, 1, 2, 0, 1, 2} {
			if pl := must(d.Submit(i, t0)); pl.Primary != want {
				t.Fatalf("task %d on %d, want %d", i, pl.Primary, want)
			}
		}
		// Drain worker 1: it becomes least loaded.
		for range 2 {
			tk, _, _ := d.Next(1)
			must(d.Complete(tk.ID, 1, t0))
		}
		if pl := must(d.Submit(9, t0)); pl.Primary != 1 {
			t.Fatalf("got %d, want 1", pl.Primary)
		}
	})
	t.Run("round robin", func(t *testing.T) {
		d := must(New[int](Config{Workers: 3}))
		for i, want := range [][2]WorkerID{{0, 1}, {1, 2}, {2, 0}, {0, 1}} {
			pl := must(d.Submit(i, t0))
			_ = want
			if i == 0 && (pl.Primary != 0 || pl.Duplicate != 1) {
				t.Fatalf("least-loaded default: %+v", pl)
			}
		}
		r := must(New[int](Config{Workers: 3, Choice: ChoiceRoundRobin}))
		for i, want := range [][2]WorkerID{{0, 1}, {1, 2}, {2, 0}, {0, 1}} {
			pl := must(r.Submit(i, t0))
			if pl.Primary != want[0] || pl.Duplicate != want[1] {
				t.Fatalf("task %d: %+v, want %v", i, pl, want)
			}
		}
	})
	t.Run("power of two is seeded", func(t *testing.T) {
		run := func(seed uint64) []WorkerID {
			d := must(New[int](Config{Workers: 8, Choice: ChoicePowerOfTwo, Seed: seed}))
			var out []WorkerID
			for i := range 64 {
				pl := must(d.Submit(i, t0))
				if pl.Primary == pl.Duplicate || pl.Duplicate == NoWorker {
					t.Fatalf("bad placement %+v", pl)
				}
				out = append(out, pl.Primary, pl.Duplicate)
			}
			if err := d.check(); err != nil {
				t.Fatal(err)
			}
			return out
		}
		a, b, c := run(1), run(1), run(2)
		same := func(x, y []WorkerID) bool {
			for i := range x {
				if x[i] != y[i] {
					return false
				}
			}
			return true
		}
		if !same(a, b) || same(a, c) {
			t.Fatal("power of two not determined by its seed")
		}
		// Power of two never picks a more loaded worker than both samples:
		// with 8 workers and 64 tasks, loads stay balanced within 2.
		d := must(New[int](Config{Workers: 8, Choice: ChoicePowerOfTwo, Policy: PolicyNone, Seed: 3}))
		for i := range 800 {
			must(d.Submit(i, t0))
		}
		lo, hi := 1<<30, 0
		for w := range 8 {
			l := must(d.WorkerLoad(WorkerID(w)))
			lo, hi = min(lo, l.High), max(hi, l.High)
		}
		if hi-lo > 8 {
			t.Fatalf("power of two imbalance %d..%d", lo, hi)
		}
	})
}

func TestBudgeted(t *testing.T) {
	d := must(New[int](Config{Workers: 2, Policy: PolicyBudgeted, Choice: ChoiceRoundRobin}))
	p1 := must(d.Submit(1, t0)) // both idle: duplicated
	if p1.Duplicate == NoWorker {
		t.Fatal("idle worker available, no duplicate")
	}
	p2 := must(d.Submit(2, t0)) // nobody idle now
	if p2.Duplicate != NoWorker {
		t.Fatalf("duplicate onto a busy worker: %+v", p2)
	}
}

func TestHedged(t *testing.T) {
	d := must(New[int](Config{Workers: 3, Policy: PolicyHedged, HedgeDelay: 10 * time.Millisecond, Choice: ChoiceRoundRobin}))
	pl := must(d.Submit(1, t0))
	if pl.Duplicate != NoWorker {
		t.Fatal("hedged duplicate placed at submit")
	}
	pl2 := must(d.Submit(2, t0.Add(5*time.Millisecond)))
	if at, ok := d.NextHedge(); !ok || !at.Equal(t0.Add(10*time.Millisecond)) {
		t.Fatalf("NextHedge = %v %v", at, ok)
	}
	if _, ok := d.Hedge(t0.Add(9 * time.Millisecond)); ok {
		t.Fatal("hedged early")
	}
	h, ok := d.Hedge(t0.Add(10 * time.Millisecond))
	if !ok || h.ID != pl.ID || h.Duplicate == pl.Primary || h.Duplicate == NoWorker {
		t.Fatalf("hedge %+v %v", h, ok)
	}
	if _, ok := d.Hedge(t0.Add(10 * time.Millisecond)); ok {
		t.Fatal("second hedge not due yet")
	}
	// Task 2 completes before its hedge: no hedge for it.
	tk, _, _ := d.Next(pl2.Primary)
	must(d.Complete(tk.ID, pl2.Primary, t0.Add(12*time.Millisecond)))
	if _, ok := d.Hedge(t0.Add(time.Hour)); ok {
		t.Fatal("hedge for a completed task")
	}
	if _, ok := d.NextHedge(); ok {
		t.Fatal("nothing should be pending")
	}
	if st := d.Stats(); st.Duplicates != 1 {
		t.Fatalf("stats %+v", st)
	}

	// Adaptive: no hedge until enough latencies are known.
	a := must(New[int](Config{Workers: 2, Policy: PolicyHedged, HedgeWindow: 16}))
	if _, ok := a.HedgeDelay(); ok {
		t.Fatal("delay known without samples")
	}
	for i := range 20 {
		pl := must(a.Submit(i, t0))
		tk, _, _ := a.Next(pl.Primary)
		must(a.Complete(tk.ID, pl.Primary, t0.Add(time.Duration(i+1)*time.Millisecond)))
	}
	delay, ok := a.HedgeDelay()
	// The quantile is refreshed every window/8 = 2 completions: the last
	// refresh saw latencies 4..19 ms, whose 0.95 quantile (index 14 of 16)
	// is 18 ms.
	if !ok || delay != 18*time.Millisecond {
		t.Fatalf("adaptive delay %v %v", delay, ok)
	}
}

func TestSelectKth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 60; n++ {
		for range 20 {
			a := make([]time.Duration, n)
			for i := range a {
				a[i] = time.Duration(r.IntN(10))
			}
			k := r.IntN(n)
			want := append([]time.Duration(nil), a...)
			sortDurations(want)
			if got := selectKth(a, k); got != want[k] {
				t.Fatalf("n=%d k=%d got %v want %v", n, k, got, want[k])
			}
		}
	}
}

func sortDurations(a []time.Duration) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func TestLeaveAndFail(t *testing.T) {
	d := must(New[int](Config{Workers: 3, Choice: ChoiceRoundRobin}))
	var pls []Placement
	for i := range 6 {
		pls = append(pls, must(d.Submit(i, t0)))
	}
	// Worker 0 starts a task, then leaves gracefully: its queue moves, it
	// may still complete the task in service.
	tk, _, _ := d.Next(0)
	wake, err := d.Leave(0)
	if err != nil {
		t.Fatal(err)
	}
	// Workers 1 and 2 are idle and received worker 0's queued copies.
	if len(wake) != 2 || slices.Contains(wake, 0) {
		t.Fatalf("wake %v", wake)
	}
	if l := must(d.WorkerLoad(0)); l.Live || l.High+l.Low != 0 || !l.Serving {
		t.Fatalf("left worker load %+v", l)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
	if out, err := d.Complete(tk.ID, 0, t0); err != nil || !out.Won {
		t.Fatalf("draining complete: %+v %v", out, err)
	}
	if _, err := d.Complete(tk.ID, 0, t0); !errors.Is(err, ErrWorkerGone) {
		t.Fatalf("after drain: %v", err)
	}
	// Worker 1 fails in service: its copy returns to a queue.
	tk1, _, _ := d.Next(1)
	if _, err := d.Fail(1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Complete(tk1.ID, 1, t0); !errors.Is(err, ErrWorkerGone) {
		t.Fatalf("complete by failed worker: %v", err)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
	// Only worker 2 is left: everything (5 tasks) must reach it exactly once.
	if l := must(d.WorkerLoad(2)); l.High != 5 || l.Low != 0 {
		t.Fatalf("survivor load %+v", l)
	}
	// The last worker fails: tasks wait, then a new worker gets them all.
	if _, err := d.Fail(2); err != nil {
		t.Fatal(err)
	}
	w := must(d.Join())
	if l := must(d.WorkerLoad(w)); l.High != 5 {
		t.Fatalf("joined worker load %+v", l)
	}
	done := map[int]bool{0: true}
	for {
		tk, ok, err := d.Next(w)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if done[tk.Payload] {
			t.Fatalf("task %d served twice", tk.Payload)
		}
		done[tk.Payload] = true
		must(d.Complete(tk.ID, w, t0))
	}
	if len(done) != 6 {
		t.Fatalf("completed %v", done)
	}
	if st := d.Stats(); st.InFlight != 0 || st.Completed != 6 {
		t.Fatalf("stats %+v", st)
	}
	_ = pls
}

// TestFailPromotesDuplicate: when the primary's worker fails and no third
// worker exists, the duplicate is promoted to the high class.
func TestFailPromotesDuplicate(t *testing.T) {
	d := must(New[int](Config{Workers: 2, Choice: ChoiceRoundRobin}))
	must(d.Submit(1, t0)) // p0 d1
	must(d.Submit(2, t0)) // p1 d0
	if _, err := d.Fail(0); err != nil {
		t.Fatal(err)
	}
	l := must(d.WorkerLoad(1))
	if l.High != 2 || l.Low != 0 {
		t.Fatalf("load %+v, want both tasks high on worker 1", l)
	}
	tk, _, _ := d.Next(1)
	if tk.Duplicate {
		t.Fatal("promoted sole copy reported as a duplicate")
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
}

func TestOpsProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 1))
	for trial := range 150 {
		data := make([]byte, 2*(50+r.IntN(300)))
		for i := range data {
			data[i] = byte(r.UintN(256))
		}
		cfg := Config{Workers: 1 + r.IntN(5), Policy: Policy(trial % int(numPolicies)), Choice: Choice(r.IntN(int(numChoices))), Seed: uint64(trial), HedgeWindow: 16}
		if trial%3 == 0 {
			cfg.HedgeDelay = 3 * time.Millisecond
		}
		cfg.PurgeOnStart = trial%4 == 1
		cfg.Scan, cfg.BadRecovery = ScanPolicy(trial/int(numPolicies)%int(numScanPolicies)), 5*time.Millisecond
		runOps(t, cfg, data)
	}
}

// FuzzParse: ParsePolicy and ParseChoice accept exactly the names they
// print, and reject everything else with ErrConfig.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"das", "none", "naive", "hedged", "budgeted", "least-loaded", "power-of-two", "round-robin", "", "DAS", "das "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ParsePolicy(s); err == nil {
			if p.String() != s {
				t.Fatalf("ParsePolicy(%q) = %v", s, p)
			}
		} else if !errors.Is(err, ErrConfig) {
			t.Fatal(err)
		}
		if c, err := ParseChoice(s); err == nil {
			if c.String() != s {
				t.Fatalf("ParseChoice(%q) = %v", s, c)
			}
		} else if !errors.Is(err, ErrConfig) {
			t.Fatal(err)
		}
	})
}
