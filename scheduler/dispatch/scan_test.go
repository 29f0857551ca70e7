package dispatch

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestRiskRejected(t *testing.T) {
	d := must(New[int](Config{Workers: 2, Scan: ScanRobust}))
	for _, r := range []Risk{
		{Probability: -0.1},
		{Probability: 1.0001},
		{Probability: math.NaN()},
		{Probability: math.Inf(1)},
		{Probability: 0.5, ScanCost: -time.Nanosecond},
		{Probability: 0.5, Work: -time.Second},
	} {
		before := d.Stats()
		if _, err := d.SubmitRisk(1, t0, r); !errors.Is(err, ErrRisk) {
			t.Errorf("SubmitRisk(%+v): %v, want ErrRisk", r, err)
		}
		if d.Stats() != before || len(d.slots) != 0 {
			t.Errorf("SubmitRisk(%+v) changed the state", r)
		}
	}
	for _, cfg := range []Config{{Scan: numScanPolicies}, {BadRecovery: -time.Second}} {
		if _, err := New[int](cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): %v, want ErrConfig", cfg, err)
		}
	}
	if _, err := ParseScanPolicy("scan-some"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseScanPolicy: %v", err)
	}
	for _, p := range ScanPolicies() {
		if q, err := ParseScanPolicy(p.String()); err != nil || q != p {
			t.Errorf("ParseScanPolicy(%q) = %v, %v", p, q, err)
		}
	}
}

func TestDecide(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		p        ScanPolicy
		r        Risk
		recovery time.Duration
		want     bool
	}{
		{ScanNone, Risk{Probability: 1, ScanCost: 0, Work: ms}, 10 * ms, false},
		{ScanAll, Risk{Probability: 0, ScanCost: 10 * ms, Work: ms}, 0, true},
		// 0.5 × (1 ms + 0) < 1 ms: scanning costs more than it saves.
		{ScanRobust, Risk{Probability: 0.5, ScanCost: ms, Work: ms}, 0, false},
		// 0.5 × (1 ms + 2 ms) > 1 ms.
		{ScanRobust, Risk{Probability: 0.5, ScanCost: ms, Work: ms}, 2 * ms, true},
		// A tie is not scanned.
		{ScanRobust, Risk{Probability: 0.5, ScanCost: ms, Work: ms}, ms, false},
		{ScanRobust, Risk{Probability: 0, ScanCost: 0, Work: ms}, 10 * ms, false},
		{ScanRobust, Risk{Probability: 0.02, ScanCost: ms / 2, Work: ms}, 10 * ms, false},
		{ScanRobust, Risk{Probability: 0.8, ScanCost: ms / 2, Work: ms}, 10 * ms, true},
	} {
		if got := c.p.Decide(c.r, c.recovery); got != c.want {
			t.Errorf("%s.Decide(%+v, %v) = %v, want %v", c.p, c.r, c.recovery, got, c.want)
		}
	}
	// The robust rule picks the cheaper expected cost (ties aside).
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		r := Risk{Probability: rng.Float64(), ScanCost: time.Duration(rng.IntN(1e7)), Work: time.Duration(rng.IntN(1e7))}
		rec := time.Duration(rng.IntN(1e8))
		scan, run := r.ExpectedCost(true, rec), r.ExpectedCost(false, rec)
		if scan == run {
			continue
		}
		if got := ScanRobust.Decide(r, rec); got != (scan < run) {
			t.Fatalf("Decide(%+v, %v) = %v, expected costs scan %v run %v", r, rec, got, scan, run)
		}
		if min(scan, run) > r.ExpectedCost(ScanAll.Decide(r, rec), rec) || min(scan, run) > r.ExpectedCost(ScanNone.Decide(r, rec), rec) {
			t.Fatal("robust costs more than a baseline")
		}
	}
}

// TestScanFlow walks one scanned task through both verdicts under DAS: the
// duplicate waits while its primary is scanned, a bad verdict rejects the
// task and purges it, a clean one releases the duplicate.
func TestScanFlow(t *testing.T) {
	d := must(New[string](Config{Workers: 2, Policy: PolicyDAS, Choice: ChoiceRoundRobin, Scan: ScanAll}))
	pl := must(d.SubmitRisk("bad", t0, Risk{Probability: 0.9, ScanCost: time.Millisecond}))
	if !pl.Scan || pl.Duplicate == NoWorker {
		t.Fatalf("placement %+v", pl)
	}
	a, ok, err := d.Next(pl.Primary)
	if err != nil || !ok || !a.Scan {
		t.Fatalf("primary: %+v %v %v", a, ok, err)
	}
	// The duplicate's worker gets nothing: the copy is held.
	if b, ok, err := d.Next(pl.Duplicate); err != nil || ok {
		t.Fatalf("duplicate ran before the verdict: %+v %v %v", b, ok, err)
	}
	if _, err := d.Complete(a.ID, pl.Primary, t0); !errors.Is(err, ErrScanOrder) {
		t.Fatalf("Complete before the verdict: %v", err)
	}
	res, err := d.Scanned(a.ID, pl.Primary, ScanVerdict{Bad: true, Reason: "signature match"})
	if err != nil || !res.Rejected || res.Reason != "signature match" {
		t.Fatalf("reject: %+v %v", res, err)
	}
	before := d.Stats()
	if before.Rejected != 1 || before.InFlight != 0 || before.Held != 1 || before.Scans != 1 {
		t.Fatalf("stats %+v", before)
	}
	if _, err := d.Complete(a.ID, pl.Primary, t0); !errors.Is(err, ErrRejected) {
		t.Fatalf("Complete of a rejected task: %v, want ErrRejected", err)
	}
	if _, err := d.Scanned(a.ID, pl.Primary, ScanVerdict{}); !errors.Is(err, ErrRejected) {
		t.Fatalf("second verdict: %v, want ErrRejected", err)
	}
	if d.Stats() != before {
		t.Fatal("refused calls changed the stats")
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}

	// A clean verdict releases the held duplicate to its idle worker.
	pl = must(d.SubmitRisk("good", t0, Risk{Probability: 0.1}))
	a, _, _ = d.Next(pl.Primary)
	if _, ok, _ := d.Next(pl.Duplicate); ok {
		t.Fatal("duplicate ran before the verdict")
	}
	res, err = d.Scanned(a.ID, pl.Primary, ScanVerdict{})
	if err != nil || res.Rejected || res.Released != pl.Duplicate {
		t.Fatalf("clear: %+v %v", res, err)
	}
	if _, err := d.Scanned(a.ID, pl.Primary, ScanVerdict{}); !errors.Is(err, ErrScanOrder) {
		t.Fatalf("second verdict: %v, want ErrScanOrder", err)
	}
	b, ok, err := d.Next(pl.Duplicate)
	if err != nil || !ok || b.Scan || !b.Duplicate || b.ID != a.ID {
		t.Fatalf("released duplicate: %+v %v %v", b, ok, err)
	}
	out, err := d.Complete(b.ID, pl.Duplicate, t0.Add(time.Millisecond))
	if err != nil || !out.Won || out.Cancel != pl.Primary {
		t.Fatalf("complete: %+v %v", out, err)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
}

// With scanning off (the zero Config.Scan), risky submissions are never
// marked for scanning and Scanned is refused.
func TestScanOff(t *testing.T) {
	d := must(New[int](Config{Workers: 2}))
	pl := must(d.SubmitRisk(1, t0, Risk{Probability: 1, Work: time.Second}))
	if pl.Scan {
		t.Fatal("scanned with scanning off")
	}
	tk, _, _ := d.Next(pl.Primary)
	if tk.Scan {
		t.Fatal("Task.Scan with scanning off")
	}
	if _, err := d.Scanned(tk.ID, pl.Primary, ScanVerdict{Bad: true}); !errors.Is(err, ErrScanOrder) {
		t.Fatalf("Scanned with scanning off: %v", err)
	}
	if out, err := d.Complete(tk.ID, pl.Primary, t0); err != nil || !out.Won {
		t.Fatalf("complete: %+v %v", out, err)
	}
}

// FuzzRisk: SubmitRisk accepts exactly the risks Validate accepts; a
// rejected one changes nothing; an accepted one is scanned exactly when
// Decide says so.
func FuzzRisk(f *testing.F) {
	f.Add(0.5, int64(time.Millisecond), int64(time.Millisecond), int64(10*time.Millisecond), uint8(1))
	f.Add(-0.0, int64(-1), int64(0), int64(0), uint8(2))
	f.Add(math.NaN(), int64(0), int64(-5), int64(1), uint8(0))
	f.Fuzz(func(t *testing.T, p float64, scan, work, recovery int64, pol uint8) {
		cfg := Config{Workers: 2, Scan: ScanPolicy(pol % uint8(numScanPolicies)), BadRecovery: time.Duration(recovery)}
		d, err := New[int](cfg)
		if recovery < 0 {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("BadRecovery %d: %v", recovery, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		r := Risk{Probability: p, ScanCost: time.Duration(scan), Work: time.Duration(work)}
		valid := p >= 0 && p <= 1 && scan >= 0 && work >= 0
		if (r.Validate() == nil) != valid {
			t.Fatalf("Validate(%+v) = %v", r, r.Validate())
		}
		pl, err := d.SubmitRisk(1, t0, r)
		if !valid {
			if !errors.Is(err, ErrRisk) || d.Stats() != (Stats{Live: 2}) {
				t.Fatalf("SubmitRisk(%+v): %v, stats %+v", r, err, d.Stats())
			}
			return
		}
		if err != nil || pl.Scan != cfg.Scan.Decide(r, cfg.BadRecovery) {
			t.Fatalf("SubmitRisk(%+v): %+v, %v", r, pl, err)
		}
	})
}
