package dispatch

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCycle measures one Submit + Next + Complete cycle (with the
// duplicate purged from its queue) on a warm Dispatcher with some backlog.
// Target: ≤ 1 µs and 0 allocations per cycle.
func BenchmarkCycle(b *testing.B) {
	for _, pol := range []Policy{PolicyDAS, PolicyNone, PolicyNaive, PolicyHedged, PolicyBudgeted} {
		for _, ch := range []Choice{ChoiceLeastLoaded, ChoicePowerOfTwo, ChoiceRoundRobin} {
			for _, workers := range []int{16, 1024} {
				b.Run(fmt.Sprintf("%s/%s/w=%d", pol, ch, workers), func(b *testing.B) {
					benchCycle(b, Config{Workers: workers, Policy: pol, Choice: ch, Seed: 1})
				})
			}
		}
	}
}

func benchCycle(b *testing.B, cfg Config) {
	d, err := New[int](cfg)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(0, 0)
	// Backlog: 4 tasks per worker, so queues are not trivially empty.
	for i := range 4 * cfg.Workers {
		if _, err := d.Submit(i, now); err != nil {
			b.Fatal(err)
		}
	}
	cycle := func(i int) {
		now = now.Add(time.Microsecond)
		pl, err := d.Submit(i, now)
		if err != nil {
			b.Fatal(err)
		}
		w := pl.Primary
		t, ok, err := d.Next(w)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		out, err := d.Complete(t.ID, w, now)
		if err != nil {
			b.Fatal(err)
		}
		if out.Cancel != NoWorker {
			// Release the cancelled copy.
			if _, _, err := d.Next(out.Cancel); err != nil {
				b.Fatal(err)
			}
		}
		if cfg.Policy == PolicyHedged {
			d.Hedge(now)
		}
	}
	for i := range 8 * cfg.Workers { // warm the free list and rings
		cycle(i)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	n := 0
	for i := 0; b.Loop(); i++ {
		cycle(i)
		n++
	}
	// CPU time per cycle: unlike ns/op it does not count time the
	// goroutine spent descheduled on a shared machine.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
}

// BenchmarkScan measures one SubmitRisk + Next (+ Scanned) + Complete cycle
// with scanning on: half the tasks are risky enough for ScanRobust to scan
// them, and one scanned task in four is found bad and rejected. Target, as
// for BenchmarkCycle: ≤ 1 µs and 0 allocations per cycle.
func BenchmarkScan(b *testing.B) {
	for _, scan := range []ScanPolicy{ScanRobust, ScanAll} {
		for _, pol := range []Policy{PolicyDAS, PolicyNone} {
			for _, workers := range []int{16, 1024} {
				b.Run(fmt.Sprintf("%s/%s/w=%d", scan, pol, workers), func(b *testing.B) {
					benchScan(b, Config{Workers: workers, Policy: pol, Scan: scan, BadRecovery: 10 * time.Millisecond})
				})
			}
		}
	}
}

func benchScan(b *testing.B, cfg Config) {
	d, err := New[int](cfg)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(0, 0)
	risks := [2]Risk{
		{Probability: 0.02, ScanCost: 500 * time.Microsecond, Work: time.Millisecond}, // not worth a scan
		{Probability: 0.8, ScanCost: 500 * time.Microsecond, Work: time.Millisecond},  // worth a scan
	}
	for i := range 4 * cfg.Workers {
		if _, err := d.SubmitRisk(i, now, risks[i&1]); err != nil {
			b.Fatal(err)
		}
	}
	scans := 0
	cycle := func(i int) {
		now = now.Add(time.Microsecond)
		pl, err := d.SubmitRisk(i, now, risks[i&1])
		if err != nil {
			b.Fatal(err)
		}
		w := pl.Primary
		t, ok, err := d.Next(w)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if t.Scan {
			scans++
			res, err := d.Scanned(t.ID, w, ScanVerdict{Bad: scans%4 == 0, Reason: "bad"})
			if err != nil {
				b.Fatal(err)
			}
			if res.Rejected {
				return
			}
		}
		out, err := d.Complete(t.ID, w, now)
		if err != nil {
			b.Fatal(err)
		}
		if out.Cancel != NoWorker {
			if _, _, err := d.Next(out.Cancel); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 8 * cfg.Workers {
		cycle(i)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	n := 0
	for i := 0; b.Loop(); i++ {
		cycle(i)
		n++
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
}
