package carbon

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Forecaster predicts carbon intensity. Forecast returns a regular series
// for zone whose first interval contains from and whose last interval
// reaches from+horizon. Implementations must honour ctx and return errors
// wrapping ErrUnavailable when they have nothing for the zone or span.
type Forecaster interface {
	Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error)
}

// ForecasterFunc adapts a function to Forecaster, for example a client of
// the Carbon Aware SDK's forecasts/current that decodes with
// ReadCarbonAwareSDK.
type ForecasterFunc func(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error)

// Forecast calls f. It is safe for concurrent use when f is.
func (f ForecasterFunc) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error) {
	return f(ctx, zone, from, horizon)
}

// pickZone returns the series for zone.
func pickZone(truth []Series, zone string) (Series, error) {
	for _, s := range truth {
		if s.Zone == zone {
			return s, nil
		}
	}
	return Series{}, fmt.Errorf("%w: no series for zone %q", ErrUnavailable, zone)
}

// checkSpan reports a cancelled ctx or a horizon that is not positive.
func checkSpan(ctx context.Context, horizon time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if horizon <= 0 {
		return fmt.Errorf("%w: horizon %v must be positive", ErrInvalid, horizon)
	}
	return nil
}

func validateAll(truth []Series) error {
	seen := map[string]bool{}
	for i, s := range truth {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("series %d (zone %q): %w", i, s.Zone, err)
		}
		if seen[s.Zone] {
			return fmt.Errorf("%w: two series for zone %q", ErrInvalid, s.Zone)
		}
		seen[s.Zone] = true
	}
	return nil
}

// Perfect replays the true series: a forecast with no error, the oracle
// that CarbonScaler's artifact assumes. It is immutable after NewPerfect
// and safe for concurrent use.
type Perfect struct {
	truth []Series
}

// NewPerfect returns a Perfect forecaster over one series per zone.
func NewPerfect(truth ...Series) (*Perfect, error) {
	if err := validateAll(truth); err != nil {
		return nil, err
	}
	return &Perfect{truth: slices.Clone(truth)}, nil
}

// Forecast returns the true values over [from, from+horizon).
func (p *Perfect) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return Series{}, err
	}
	s, err := pickZone(p.truth, zone)
	if err != nil {
		return Series{}, err
	}
	out, err := s.Slice(from, from.Add(horizon))
	if err != nil {
		return Series{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	out.Source = "perfect(" + s.Source + ")"
	return out, nil
}

// Persistence predicts each future interval by the latest observed value
// at the same time of day: the value one Period earlier, or two Periods
// earlier when that is still in the future, and so on. The interval that
// contains from and later ones are unobserved; earlier ones are history.
// It is immutable after NewPersistence (set Period before use) and safe
// for concurrent use.
type Persistence struct {
	truth []Series
	// Period is the seasonality; zero means 24 h.
	Period time.Duration
}

// NewPersistence returns a Persistence forecaster over the observed
// history, one series per zone, with a 24-hour period.
func NewPersistence(history ...Series) (*Persistence, error) {
	if err := validateAll(history); err != nil {
		return nil, err
	}
	return &Persistence{truth: slices.Clone(history)}, nil
}

// Forecast returns the persistence forecast over [from, from+horizon), on
// the history's step, starting with the interval that contains from.
func (p *Persistence) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return Series{}, err
	}
	s, err := pickZone(p.truth, zone)
	if err != nil {
		return Series{}, err
	}
	period := p.Period
	if period == 0 {
		period = 24 * time.Hour
	}
	if period < 0 || period%s.Step != 0 {
		return Series{}, fmt.Errorf("%w: Persistence.Period %v is not a positive multiple of the step %v", ErrInvalid, period, s.Step)
	}
	if from.Before(s.Start) {
		return Series{}, fmt.Errorf("%w: %v before history start %v", ErrUnavailable, from, s.Start)
	}
	first := int(from.Sub(s.Start) / s.Step) // index of the interval holding from
	start := s.TimeAt(first)
	n := int((from.Add(horizon).Sub(start) + s.Step - 1) / s.Step)
	per := int(period / s.Step)
	if first < per {
		return Series{}, fmt.Errorf("%w: persistence at %v needs %v of history before it", ErrUnavailable, from, period)
	}
	if n > 10_000_000 {
		return Series{}, fmt.Errorf("%w: horizon %v too long", ErrInvalid, horizon)
	}
	v := make([]float64, n)
	for i := range n {
		j := first + i
		k := (i/per + 1) * per // smallest multiple of per with j-k < first
		if j-k >= len(s.Values) {
			return Series{}, fmt.Errorf("%w: history ends at %v", ErrUnavailable, s.End())
		}
		v[i] = s.Values[j-k]
	}
	out := s.withValues(start, s.Step, v, nil)
	out.Source = "persistence(" + s.Source + ")"
	return out, nil
}

// Noisy adds Gaussian error to another forecaster's output, the error
// model of Let's Wait Awhile: σ = Error × mean of the forecast window.
// The noise of each interval depends only on Seed, the zone, from and the
// interval's time, so results do not depend on call order; values are
// clamped at zero. Noisy is safe for concurrent use when Base is.
type Noisy struct {
	// Base supplies the values the noise is added to (usually Perfect).
	Base Forecaster
	// Error is σ as a fraction of the window mean, for example 0.05.
	Error float64
	// Seed selects the noise.
	Seed uint64
}

// Forecast returns Base's forecast with noise added.
func (n *Noisy) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error) {
	if n.Base == nil {
		return Series{}, fmt.Errorf("%w: Noisy.Base is nil", ErrInvalid)
	}
	if math.IsNaN(n.Error) || math.IsInf(n.Error, 0) || n.Error < 0 {
		return Series{}, fmt.Errorf("%w: Noisy.Error %v", ErrInvalid, n.Error)
	}
	s, err := n.Base.Forecast(ctx, zone, from, horizon)
	if err != nil {
		return Series{}, err
	}
	sigma := n.Error * s.Mean()
	h := fnv.New64a()
	h.Write([]byte(zone))
	zh := h.Sum64()
	v := make([]float64, len(s.Values))
	for i, x := range s.Values {
		r := rand.New(rand.NewPCG(n.Seed^zh, uint64(from.UnixNano())*0x9e3779b97f4a7c15^uint64(s.TimeAt(i).UnixNano())))
		v[i] = max(0, x+sigma*r.NormFloat64())
	}
	out := s.withValues(s.Start, s.Step, v, cloneBools(s.Estimated))
	out.Source = fmt.Sprintf("noisy(%s, e=%g, seed=%d)", s.Source, n.Error, n.Seed)
	return out, nil
}

// Fallback asks its providers in order and returns the first success; if
// all fail, the error joins theirs. A context error stops the search. It
// is safe for concurrent use when its providers are.
type Fallback []Forecaster

// Forecast implements Forecaster.
func (f Fallback) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error) {
	if len(f) == 0 {
		return Series{}, fmt.Errorf("%w: Fallback has no providers", ErrUnavailable)
	}
	var errs []error
	for i, p := range f {
		if p == nil {
			errs = append(errs, fmt.Errorf("provider %d: %w: nil", i, ErrInvalid))
			continue
		}
		s, err := p.Forecast(ctx, zone, from, horizon)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return Series{}, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("provider %d: %w", i, err))
	}
	return Series{}, fmt.Errorf("%w: all %d providers failed: %w", ErrUnavailable, len(f), errors.Join(errs...))
}

// Cache remembers successful forecasts of Base by (zone, from, horizon)
// and evicts the oldest entry beyond MaxEntries. Errors are not cached.
// With a positive TTL an entry older than TTL is a miss, so a live
// provider is asked again once its forecast may have been updated; a host
// that rounds from down to its slot lets every round of a slot share one
// entry. Combine with Fallback for caching with ordered fallback:
// &Cache{Base: Fallback{primary, secondary}}. It is safe for concurrent
// use when Base is; callers get copies, never shared slices.
type Cache struct {
	// Base is asked on a miss.
	Base Forecaster
	// MaxEntries bounds the cache; zero means 1024.
	MaxEntries int
	// TTL, when positive, is how long an entry is served; zero keeps
	// entries until they are evicted. Negative is an error.
	TTL time.Duration
	// Now reads the clock for TTL; nil means time.Now. It is called only
	// when TTL is positive.
	Now func() time.Time

	mu    sync.Mutex
	m     map[cacheKey]cacheEntry
	order []cacheKey
}

type cacheEntry struct {
	s  Series
	at time.Time
}

type cacheKey struct {
	zone    string
	from    int64
	horizon time.Duration
}

// Forecast implements Forecaster.
func (c *Cache) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (Series, error) {
	if c.Base == nil {
		return Series{}, fmt.Errorf("%w: Cache.Base is nil", ErrInvalid)
	}
	if c.TTL < 0 {
		return Series{}, fmt.Errorf("%w: Cache.TTL %v is negative", ErrInvalid, c.TTL)
	}
	if err := ctx.Err(); err != nil {
		return Series{}, err
	}
	var now time.Time
	if c.TTL > 0 {
		if c.Now != nil {
			now = c.Now()
		} else {
			now = time.Now()
		}
	}
	k := cacheKey{strings.Clone(zone), from.UnixNano(), horizon}
	c.mu.Lock()
	if e, ok := c.m[k]; ok && (c.TTL == 0 || now.Sub(e.at) < c.TTL) {
		c.mu.Unlock()
		s := e.s
		return s.withValues(s.Start, s.Step, slices.Clone(s.Values), cloneBools(s.Estimated)), nil
	}
	c.mu.Unlock()
	s, err := c.Base.Forecast(ctx, zone, from, horizon)
	if err != nil {
		return Series{}, err
	}
	stored := s.withValues(s.Start, s.Step, slices.Clone(s.Values), cloneBools(s.Estimated))
	limit := c.MaxEntries
	if limit <= 0 {
		limit = 1024
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[cacheKey]cacheEntry{}
	}
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = cacheEntry{stored, now}
	for len(c.order) > limit {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.mu.Unlock()
	return s, nil
}

// Len returns the number of cached forecasts.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
