package carbon

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

func week(t testing.TB) Series {
	s, err := ReadElectricityMaps(open(t, "electricitymaps_US-CAL-CISO_2022-01-01_14d.csv"), ReadOptions{Basis: Direct})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPerfectAndPersistence(t *testing.T) {
	ctx := context.Background()
	s := week(t)
	p, err := NewPerfect(s)
	if err != nil {
		t.Fatal(err)
	}
	from := s.Start.Add(30*time.Hour + 10*time.Minute)
	f, err := p.Forecast(ctx, "US-CAL-CISO", from, 5*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 6 || !f.Start.Equal(s.TimeAt(30)) || f.Values[0] != s.Values[30] {
		t.Fatalf("perfect: %v %v", f.Start, f.Values)
	}
	if _, err := p.Forecast(ctx, "XX", from, time.Hour); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("zone: %v", err)
	}
	if _, err := p.Forecast(ctx, "US-CAL-CISO", s.End(), time.Hour); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("range: %v", err)
	}
	pe, err := NewPersistence(s)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pe.Forecast(ctx, "US-CAL-CISO", s.TimeAt(48), 30*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range g.Values {
		want := s.Values[48+i-24]
		if i >= 24 {
			want = s.Values[48+i-48]
		}
		if v != want {
			t.Fatalf("persistence[%d] = %v, want %v", i, v, want)
		}
	}
	if _, err := pe.Forecast(ctx, "US-CAL-CISO", s.TimeAt(10), time.Hour); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("short history: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Forecast(cctx, "US-CAL-CISO", from, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestNoisy(t *testing.T) {
	ctx := context.Background()
	s := week(t)
	p, _ := NewPerfect(s)
	n := &Noisy{Base: p, Error: 0.1, Seed: 42}
	a, err := n.Forecast(ctx, "US-CAL-CISO", s.Start, 14*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := n.Forecast(ctx, "US-CAL-CISO", s.Start, 14*24*time.Hour)
	var sum, sq float64
	for i := range a.Values {
		if a.Values[i] != b.Values[i] {
			t.Fatal("same seed, different noise")
		}
		d := a.Values[i] - s.Values[i]
		sum += d
		sq += d * d
	}
	sd := math.Sqrt(sq/float64(len(a.Values)) - (sum/float64(len(a.Values)))*(sum/float64(len(a.Values))))
	if want := 0.1 * s.Mean(); math.Abs(sd-want) > 0.15*want {
		t.Fatalf("noise sd %v, want about %v", sd, want)
	}
	c, _ := (&Noisy{Base: p, Error: 0.1, Seed: 43}).Forecast(ctx, "US-CAL-CISO", s.Start, 14*24*time.Hour)
	if c.Values[0] == a.Values[0] && c.Values[1] == a.Values[1] {
		t.Fatal("different seeds, same noise")
	}
	z, _ := (&Noisy{Base: p, Seed: 1}).Forecast(ctx, "US-CAL-CISO", s.Start, time.Hour)
	if z.Values[0] != s.Values[0] {
		t.Fatal("zero error changed the value")
	}
	if _, err := (&Noisy{Base: p, Error: -1}).Forecast(ctx, "US-CAL-CISO", s.Start, time.Hour); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative error: %v", err)
	}
}

type countingForecaster struct {
	mu    sync.Mutex
	calls int
	f     Forecaster
}

func (c *countingForecaster) Forecast(ctx context.Context, zone string, from time.Time, h time.Duration) (Series, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.f.Forecast(ctx, zone, from, h)
}

func TestCacheAndFallback(t *testing.T) {
	ctx := context.Background()
	s := week(t)
	p, _ := NewPerfect(s)
	failing := ForecasterFunc(func(context.Context, string, time.Time, time.Duration) (Series, error) {
		return Series{}, ErrUnavailable
	})
	counter := &countingForecaster{f: Fallback{failing, nil, p}}
	c := &Cache{Base: counter, MaxEntries: 2}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := c.Forecast(ctx, "US-CAL-CISO", s.TimeAt(i%3), 3*time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			f.Values[0] = -1 // callers own their copy
		}()
	}
	wg.Wait()
	if c.Len() > 2 {
		t.Fatalf("cache holds %d > 2", c.Len())
	}
	f, err := c.Forecast(ctx, "US-CAL-CISO", s.TimeAt(2), 3*time.Hour)
	if err != nil || f.Values[0] != s.Values[2] {
		t.Fatalf("cached value %v %v", f.Values, err)
	}
	if _, err := (Fallback{failing}).Forecast(ctx, "Z", s.Start, time.Hour); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("all fail: %v", err)
	}
}

func TestReplanSimulate(t *testing.T) {
	ctx := context.Background()
	s := week(t)
	c := nbody10k(t)
	work := c.WorkPerSecond[7] * 3600 * 24
	deadline := s.Start.Add(72 * time.Hour)
	p, _ := NewPerfect(s)
	once, err := Schedule(s, c, work, deadline, ScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Simulate(ctx, s, &Replanner{Forecaster: p, Zone: "US-CAL-CISO", Curve: c, Deadline: deadline}, work)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Work, work, 1e-9) || !near(got.CarbonG, once.CarbonG, 1e-3) {
		t.Fatalf("replanned with a perfect forecast: %v g for %v work, one-shot %v g", got.CarbonG, got.Work, once.CarbonG)
	}
	noisy := &Noisy{Base: p, Error: 0.2, Seed: 7}
	nz, err := Simulate(ctx, s, &Replanner{Forecaster: noisy, Zone: "US-CAL-CISO", Curve: c, Deadline: deadline}, work)
	if err != nil {
		t.Fatal(err)
	}
	if !near(nz.Work, work, 1e-9) || nz.CarbonG < once.CarbonG*(1-1e-3) {
		t.Fatalf("noisy replan: %v g, perfect %v g", nz.CarbonG, once.CarbonG)
	}
	t.Logf("perfect %.1f g, re-planned with 20%% noise %.1f g", once.CarbonG, nz.CarbonG)
}

func TestCacheTTL(t *testing.T) {
	ctx := context.Background()
	s := week(t)
	p, _ := NewPerfect(s)
	counter := &countingForecaster{f: p}
	now := s.Start
	c := &Cache{Base: counter, TTL: 5 * time.Minute, Now: func() time.Time { return now }}
	ask := func() {
		t.Helper()
		if _, err := c.Forecast(ctx, "US-CAL-CISO", s.Start, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	ask()
	now = now.Add(4 * time.Minute)
	ask()
	if counter.calls != 1 {
		t.Fatalf("within TTL: %d calls, want 1", counter.calls)
	}
	now = now.Add(time.Minute)
	ask()
	if counter.calls != 2 {
		t.Fatalf("after TTL: %d calls, want 2", counter.calls)
	}
	if _, err := (&Cache{Base: p, TTL: -1}).Forecast(ctx, "US-CAL-CISO", s.Start, time.Hour); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative TTL: %v", err)
	}
}
