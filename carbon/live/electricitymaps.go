package live

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// ElectricityMaps is a client of the Electricity Maps API v3
// (api.electricitymap.org): carbon-intensity/latest, /history (the past
// 24 hours) and /forecast, authenticated by the auth-token header. Values
// are average intensities in gCO2eq/kWh, hourly, with the Basis asked for
// (emissionFactorType lifecycle or direct). Set fields before first use;
// it is then safe for concurrent use.
type ElectricityMaps struct {
	// Token is the API key, sent as the auth-token header.
	Token string
	// BaseURL defaults to https://api.electricitymap.org.
	BaseURL string
	// Basis is Direct or LifeCycle; zero means LifeCycle, the service's
	// default.
	Basis carbon.Basis
	// Zones maps the caller's zone names to Electricity Maps zone keys;
	// a zone without an entry is sent as is.
	Zones map[string]string
	// HTTP is the client; nil means one with a 30 s timeout.
	HTTP *http.Client
}

const emName = "electricitymaps"

// emPoint is one carbon-intensity value in a v3 response.
type emPoint struct {
	Zone            string   `json:"zone"`
	CarbonIntensity *float64 `json:"carbonIntensity"`
	Datetime        string   `json:"datetime"`
	IsEstimated     bool     `json:"isEstimated"`
}

// Latest returns the latest value for zone as a one-hour series.
func (e *ElectricityMaps) Latest(ctx context.Context, zone string) (carbon.Series, error) {
	var p emPoint
	if err := e.get(ctx, "latest", zone, &p); err != nil {
		return carbon.Series{}, err
	}
	return e.series(zone, "latest", []emPoint{p})
}

// History returns the past 24 hours for zone.
func (e *ElectricityMaps) History(ctx context.Context, zone string) (carbon.Series, error) {
	var doc struct {
		History []emPoint `json:"history"`
	}
	if err := e.get(ctx, "history", zone, &doc); err != nil {
		return carbon.Series{}, err
	}
	return e.series(zone, "history", doc.History)
}

// Forecast implements carbon.Forecaster with the forecast endpoint; when
// from lies before the forecast's first hour, the past 24 hours are
// prepended from the history endpoint.
func (e *ElectricityMaps) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (carbon.Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return carbon.Series{}, err
	}
	var doc struct {
		Forecast []emPoint `json:"forecast"`
	}
	if err := e.get(ctx, "forecast", zone, &doc); err != nil {
		return carbon.Series{}, err
	}
	pts := doc.Forecast
	if len(pts) > 0 {
		if first, err := time.Parse(time.RFC3339Nano, pts[0].Datetime); err == nil && from.Before(first) {
			var hist struct {
				History []emPoint `json:"history"`
			}
			if err := e.get(ctx, "history", zone, &hist); err != nil {
				return carbon.Series{}, err
			}
			var before []emPoint
			for _, p := range hist.History {
				if t, err := time.Parse(time.RFC3339Nano, p.Datetime); err == nil && t.Before(first) {
					before = append(before, p)
				}
			}
			pts = append(before, pts...)
		}
	}
	s, err := e.series(zone, "forecast", pts)
	if err != nil {
		return carbon.Series{}, err
	}
	return cover(emName, s, from, horizon)
}

func (e *ElectricityMaps) get(ctx context.Context, endpoint, zone string, out any) error {
	if e.Token == "" {
		return unavailable(emName, fmt.Errorf("%w: ElectricityMaps.Token is empty", ErrAuth))
	}
	basis := "lifecycle"
	switch e.Basis {
	case carbon.Direct:
		basis = "direct"
	case carbon.LifeCycle, carbon.BasisUnknown:
	default:
		return fmt.Errorf("%w: ElectricityMaps.Basis %d", carbon.ErrInvalid, e.Basis)
	}
	base := e.BaseURL
	if base == "" {
		base = "https://api.electricitymap.org"
	}
	q := url.Values{"zone": {mapped(e.Zones, zone)}, "emissionFactorType": {basis}}
	req, err := newRequest(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v3/carbon-intensity/"+endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("auth-token", e.Token)
	b, err := do(e.HTTP, emName, req)
	if err != nil {
		return err
	}
	return decode(emName, endpoint, b, out)
}

// series puts hourly points on the grid; a null value or a missing hour
// is a gap, which fails with carbon.ErrGap.
func (e *ElectricityMaps) series(zone, endpoint string, in []emPoint) (carbon.Series, error) {
	pts := make([]carbon.Point, 0, len(in))
	for i, p := range in {
		t, err := time.Parse(time.RFC3339Nano, p.Datetime)
		if err != nil {
			return carbon.Series{}, unavailable(emName, fmt.Errorf("%w: %s[%d].datetime %q", carbon.ErrFormat, endpoint, i, p.Datetime))
		}
		if p.CarbonIntensity == nil {
			continue
		}
		pts = append(pts, carbon.Point{Time: t, Value: *p.CarbonIntensity, Estimated: p.IsEstimated})
	}
	s, err := carbon.FromPoints(pts, carbon.GridOptions{Step: time.Hour})
	if err != nil {
		return carbon.Series{}, unavailable(emName, fmt.Errorf("%s: %w", endpoint, err))
	}
	s.Unit, s.Signal, s.Zone, s.Source = carbon.GPerKWh, carbon.Average, zone, emName
	s.Basis = carbon.LifeCycle
	if e.Basis == carbon.Direct {
		s.Basis = carbon.Direct
	}
	if err := s.Validate(); err != nil {
		return carbon.Series{}, unavailable(emName, err)
	}
	return s, nil
}
