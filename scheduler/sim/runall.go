package sim

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// RunAll runs independent simulations in parallel, at most parallel at a
// time (0 = GOMAXPROCS), and returns their results in the order of cfgs.
// It returns the first error in cfgs order; the other runs are cancelled.
// Configs must not share policies or placers that are unsafe for
// concurrent use. The goroutines it starts end before it returns.
func RunAll(ctx context.Context, cfgs []Config, parallel int) ([]Result, error) {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]Result, len(cfgs))
	errs := make([]error, len(cfgs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = Run(ctx, cfgs[i])
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// Prefer a run's own failure to the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}
