package dispatch

import (
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
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range wins {
		if n := wins[i].Load(); n != 1 {
			t.Fatalf("task %d completed %d times", i, n)
		}
	}
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
