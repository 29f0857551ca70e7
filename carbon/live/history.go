package live

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/carbondata"
)

// History answers any time from a year of recorded intensity, the last
// provider of a chain: the value for time t is the recorded value at the
// same hour of the same weekday, t shifted by whole 52-week periods into
// the record. Every value it returns is flagged Estimated, and Source
// says "history". It is immutable after NewHistory and safe for
// concurrent use.
type History struct {
	byZone map[string]carbon.Series
}

// NewHistory builds a History over one series per zone; each must be
// hourly or finer and span at least 52 weeks.
func NewHistory(series ...carbon.Series) (*History, error) {
	h := &History{byZone: map[string]carbon.Series{}}
	for i, s := range series {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("history series %d (zone %q): %w", i, s.Zone, err)
		}
		if s.End().Sub(s.Start) < period || period%s.Step != 0 {
			return nil, fmt.Errorf("%w: history series %d (zone %q) spans %v on a %v step; need 52 weeks on a step dividing them", carbon.ErrInvalid, i, s.Zone, s.End().Sub(s.Start), s.Step)
		}
		if _, dup := h.byZone[s.Zone]; dup {
			return nil, fmt.Errorf("%w: two history series for zone %q", carbon.ErrInvalid, s.Zone)
		}
		h.byZone[s.Zone] = s
	}
	return h, nil
}

// period is the shift that keeps hour of day and weekday: 52 weeks.
const period = 52 * 7 * 24 * time.Hour

// Embedded returns a History over carbondata's 2022 series of California
// (zone "US-CAL-CISO"), Spain ("ES") and Norway ("NO") with the basis given
// (Direct or LifeCycle; match the live providers it backs). It
// decompresses the embedded files on each call: call it once at setup.
func Embedded(basis carbon.Basis) (*History, error) {
	var ss []carbon.Series
	for _, name := range []string{carbondata.California2022, carbondata.Spain2022, carbondata.Norway2022} {
		f, err := carbondata.FS.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", carbon.ErrUnavailable, err)
		}
		s, err := carbon.Read(f, carbon.ReadOptions{Basis: basis})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ss = append(ss, s)
	}
	return NewHistory(ss...)
}

// Forecast implements carbon.Forecaster.
func (h *History) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (carbon.Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return carbon.Series{}, err
	}
	s, ok := h.byZone[zone]
	if !ok {
		return carbon.Series{}, fmt.Errorf("%w: no history for zone %q", carbon.ErrUnavailable, zone)
	}
	// the interval holding from, on the record's grid shifted by periods
	off := from.Sub(s.Start) % period
	if off < 0 {
		off += period
	}
	first := int(off / s.Step)
	start := from.Add(-(off % s.Step))
	n := int((from.Add(horizon).Sub(start) + s.Step - 1) / s.Step)
	if n > carbon.MaxValues {
		return carbon.Series{}, fmt.Errorf("%w: horizon %v too long", carbon.ErrInvalid, horizon)
	}
	per := int(period / s.Step)
	v := make([]float64, n)
	est := make([]bool, n)
	for i := range n {
		v[i] = s.Values[(first+i)%per]
		est[i] = true
	}
	out := s
	out.Start, out.Values, out.Estimated = start, v, est
	out.Source = "history(" + s.Source + ")"
	return out, nil
}
