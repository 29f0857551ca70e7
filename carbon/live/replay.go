package live

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// Issued is a forecast as its provider published it.
type Issued struct {
	// At is when the forecast was generated.
	At time.Time
	// Series is the forecast; its Zone selects it in Replay.
	Series carbon.Series
}

// Replay serves historical forecasts as they were known: Forecast at time
// from returns the latest forecast issued at or before from that covers
// [from, from+horizon), so a back-test sees the forecast error a live
// run would have seen, never the future. It is immutable after NewReplay
// and safe for concurrent use.
type Replay struct {
	byZone map[string][]Issued // sorted by At
}

// NewReplay validates the forecasts and indexes them by zone. Two
// forecasts of one zone issued at the same time are an error.
func NewReplay(forecasts ...Issued) (*Replay, error) {
	r := &Replay{byZone: map[string][]Issued{}}
	for i, f := range forecasts {
		if err := f.Series.Validate(); err != nil {
			return nil, fmt.Errorf("forecast %d (zone %q, issued %v): %w", i, f.Series.Zone, f.At, err)
		}
		if f.At.IsZero() {
			return nil, fmt.Errorf("%w: forecast %d (zone %q) has no issue time", carbon.ErrInvalid, i, f.Series.Zone)
		}
		r.byZone[f.Series.Zone] = append(r.byZone[f.Series.Zone], f)
	}
	for z, fs := range r.byZone {
		slices.SortStableFunc(fs, func(a, b Issued) int { return a.At.Compare(b.At) })
		for i := 1; i < len(fs); i++ {
			if fs[i].At.Equal(fs[i-1].At) {
				return nil, fmt.Errorf("%w: two forecasts of zone %q issued at %v", carbon.ErrInvalid, z, fs[i].At)
			}
		}
	}
	return r, nil
}

// Forecast implements carbon.Forecaster.
func (r *Replay) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (carbon.Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return carbon.Series{}, err
	}
	fs := r.byZone[zone]
	// the last forecast issued at or before from
	i, _ := slices.BinarySearchFunc(fs, from, func(f Issued, t time.Time) int {
		if f.At.After(t) {
			return 1
		}
		return -1
	})
	for j := i - 1; j >= 0; j-- {
		if s, err := fs[j].Series.Slice(from, from.Add(horizon)); err == nil {
			s.Source = fmt.Sprintf("replay(%s issued %s)", fs[j].Series.Source, fs[j].At.UTC().Format(time.RFC3339))
			return s, nil
		}
	}
	return carbon.Series{}, fmt.Errorf("%w: no forecast of zone %q issued by %v covers %v", carbon.ErrUnavailable, zone, from, horizon)
}
