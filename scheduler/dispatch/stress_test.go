package dispatch

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStress runs 8 goroutines, each both submitting tasks and serving as
// one worker, over a million DAS tasks (100,000 with -short), and checks
// that every task is won exactly once and nothing is left in flight. A
// smaller naive-duplication run makes copies race in service far more
// often, exercising cancellation.
func TestStress(t *testing.T) {
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	t.Run("das", func(t *testing.T) { stress(t, Config{Workers: 8, Policy: PolicyDAS}, total) })
	t.Run("naive", func(t *testing.T) {
		stress(t, Config{Workers: 8, Policy: PolicyNaive, Choice: ChoicePowerOfTwo, Seed: 5}, total/10)
	})
}

func stress(t *testing.T, cfg Config, total int) {
	const goroutines = 8
	perG := total / goroutines
	total = perG * goroutines
	d, err := New[int32](cfg)
	if err != nil {
		t.Fatal(err)
	}
	wins := make([]atomic.Int32, total)
	var completed, lost atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := WorkerID(g)
			now := time.Unix(0, 0)
			submitted := 0
			for submitted < perG || completed.Load() < int64(total) {
				// Submit one task per copy served until this goroutine's
				// share is in; copies land on every worker, so siblings race.
				if submitted < perG {
					if _, err := d.Submit(int32(g*perG+submitted), now); err != nil {
						errs <- err
						return
					}
					submitted++
				}
				task, ok, err := d.Next(w)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					runtime.Gosched()
					continue
				}
				if task.Payload%8 == 0 {
					// A slow copy: let the sibling's worker catch up, then
					// poll the cancel signal as a real worker would.
					runtime.Gosched()
					if _, _, err := d.Cancelled(w); err != nil {
						errs <- err
						return
					}
				}
				out, err := d.Complete(task.ID, w, now)
				if err != nil {
					errs <- err
					return
				}
				if out.Won {
					wins[task.Payload].Add(1)
					completed.Add(1)
				} else {
					lost.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	checkWonOnce(t, errs, wins)
	st := d.Stats()
	if st.Submitted != uint64(total) || st.Completed != uint64(total) || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tasks, %d duplicates, %d purged from queues, %d cancelled in service (%d late completions)",
		total, st.Duplicates, st.Purged, st.Cancelled, lost.Load())
}

// TestStressChurn: 8 goroutines serve and submit while each now and then
// fails or leaves its worker (sometimes in the middle of serving a copy)
// and joins a new one. Every task must still complete exactly once. With
// scanning on, a task ends exactly once by winning or by being rejected by
// its scan, and only bad tasks are rejected.
func TestStressChurn(t *testing.T) {
	total := 200_000
	if testing.Short() {
		total = 40_000
	}
	cfg := Config{Workers: 8, Policy: PolicyDAS, Choice: ChoicePowerOfTwo, Seed: 9}
	t.Run("das", func(t *testing.T) { stressChurn(t, cfg, total) })
	cfg.Scan, cfg.BadRecovery = ScanRobust, 10*time.Millisecond
	t.Run("das/robust", func(t *testing.T) { stressChurn(t, cfg, total/2) })
}

// churnRisk: one task in four is risky (and scanned under ScanRobust); one
// in eight is bad, all of them risky ones.
func churnRisk(payload int32) (Risk, bool) {
	p := 0.01
	if payload%4 == 0 {
		p = 0.9
	}
	return Risk{Probability: p, ScanCost: time.Millisecond, Work: time.Millisecond}, payload%8 == 0
}

func stressChurn(t *testing.T, cfg Config, total int) {
	goroutines := cfg.Workers
	perG := total / goroutines
	total = perG * goroutines
	d, err := New[int32](cfg)
	if err != nil {
		t.Fatal(err)
	}
	wins := make([]atomic.Int32, total) // wins and rejections
	var completed, rejected atomic.Int64
	// finish scans (if asked) and completes task on worker w.
	finish := func(task Task[int32], w WorkerID, now time.Time) error {
		if task.Scan {
			_, bad := churnRisk(task.Payload)
			res, err := d.Scanned(task.ID, w, ScanVerdict{Bad: bad, Reason: "stress"})
			if err != nil {
				return err
			}
			if res.Rejected {
				if !bad {
					return fmt.Errorf("task %d rejected but good", task.Payload)
				}
				wins[task.Payload].Add(1)
				completed.Add(1)
				rejected.Add(1)
				return nil
			}
		}
		out, err := d.Complete(task.ID, w, now)
		if err != nil {
			return err
		}
		if out.Won {
			if _, bad := churnRisk(task.Payload); bad && cfg.Scan == ScanRobust {
				return fmt.Errorf("bad task %d ran", task.Payload)
			}
			wins[task.Payload].Add(1)
			completed.Add(1)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := WorkerID(g)
			now := time.Unix(0, 0)
			submitted, iter := 0, 0
			rejoin := func() bool {
				nw, err := d.Join()
				if err != nil {
					errs <- err
					return false
				}
				w = nw
				return true
			}
			for submitted < perG || completed.Load() < int64(total) {
				iter++
				if submitted < perG {
					risk, _ := churnRisk(int32(g*perG + submitted))
					_, err := d.SubmitRisk(int32(g*perG+submitted), now, risk)
					if err != nil && !errors.Is(err, ErrNoWorkers) {
						errs <- err
						return
					}
					if err == nil {
						submitted++
					}
				}
				task, ok, err := d.Next(w)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					runtime.Gosched()
					continue
				}
				switch {
				case iter%997 == 0:
					// Crash while serving: the copy is re-queued elsewhere,
					// and this worker can no longer complete it.
					if _, err := d.Fail(w); err != nil {
						errs <- err
						return
					}
					if _, err := d.Complete(task.ID, w, now); !errors.Is(err, ErrWorkerGone) {
						errs <- fmt.Errorf("complete after fail: %v", err)
						return
					}
					if !rejoin() {
						return
					}
					continue
				case iter%1009 == 0:
					// Graceful leave: finish the copy in service, then go.
					if _, err := d.Leave(w); err != nil {
						errs <- err
						return
					}
					if err := finish(task, w, now); err != nil {
						errs <- err
						return
					}
					if !rejoin() {
						return
					}
					continue
				}
				if err := finish(task, w, now); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	checkWonOnce(t, errs, wins)
	st := d.Stats()
	if st.Completed+st.Rejected != uint64(total) || st.Rejected != uint64(rejected.Load()) || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	if cfg.Scan == ScanRobust && st.Rejected != uint64(total/8) {
		t.Fatalf("%d rejected, want the %d bad tasks", st.Rejected, total/8)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tasks, %d workers joined in all, %d copies re-queued, %d dropped", total, len(d.workers), st.Requeued, st.Dropped)
}

// checkWonOnce fails t on the first error the stress goroutines reported
// (once every goroutine that sends on errs has returned) and on any
// task that was not won exactly once.
func checkWonOnce(t *testing.T, errs chan error, wins []atomic.Int32) {
	t.Helper()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range wins {
		if n := wins[i].Load(); n != 1 {
			t.Fatalf("task %d completed %d times", i, n)
		}
	}
}
