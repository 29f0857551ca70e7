package carbon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxJSONBytes bounds what the JSON readers accept.
const maxJSONBytes = 256 << 20

func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxJSONBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if len(b) > maxJSONBytes {
		return nil, fmt.Errorf("%w: document larger than %d bytes", ErrInvalid, maxJSONBytes)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%w: empty document", ErrEmpty)
	}
	return b, nil
}

// wattTimeDoc is the shape of a WattTime v3 signal response.
type wattTimeDoc struct {
	Data []struct {
		PointTime string   `json:"point_time"`
		Value     *float64 `json:"value"`
	} `json:"data"`
	Meta struct {
		Region     string `json:"region"`
		SignalType string `json:"signal_type"`
		Units      string `json:"units"`
		Period     *int64 `json:"data_point_period_seconds"`
	} `json:"meta"`
}

// ReadWattTimeJSON reads a WattTime v3 response from historical, forecast
// or signal-index: {"data":[{"point_time","value"}], "meta":{"region",
// "signal_type","units","data_point_period_seconds"}}. signal_type
// co2_moer is Marginal and co2_aoer Average; units lbs_co2_per_mwh,
// g_co2_per_kwh and kg_co2_per_mwh are understood (others are an error
// unless opts.Unit names the unit). The grid step defaults to
// data_point_period_seconds. Null values are gaps.
func ReadWattTimeJSON(r io.Reader, opts ReadOptions) (Series, error) {
	if err := checkBasis(opts.Basis); err != nil {
		return Series{}, err
	}
	b, err := readAllLimited(r)
	if err != nil {
		return Series{}, err
	}
	var doc wattTimeDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return Series{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	unit := opts.Unit
	if unit == "" {
		switch strings.ToLower(doc.Meta.Units) {
		case "lbs_co2_per_mwh", "":
			unit = LbsPerMWh
		case "g_co2_per_kwh", "gco2_per_kwh":
			unit = GPerKWh
		case "kg_co2_per_mwh":
			unit = KgPerMWh
		default:
			return Series{}, fmt.Errorf("%w: meta.units %q; set ReadOptions.Unit", ErrUnit, doc.Meta.Units)
		}
	}
	sig := Marginal
	switch strings.ToLower(doc.Meta.SignalType) {
	case "co2_aoer":
		sig = Average
	case "co2_moer", "":
	default:
		sig = SignalUnknown
	}
	if doc.Meta.Period != nil {
		p := *doc.Meta.Period
		if p <= 0 || p > int64(366*24*3600) {
			return Series{}, fmt.Errorf("%w: meta.data_point_period_seconds %d", ErrValue, p)
		}
		if opts.Grid.Step == 0 {
			opts.Grid.Step = time.Duration(p) * time.Second
		}
	}
	if len(doc.Data) == 0 {
		return Series{}, fmt.Errorf("%w: data is empty", ErrEmpty)
	}
	if len(doc.Data) > maxRows {
		return Series{}, fmt.Errorf("%w: more than %d points", ErrInvalid, maxRows)
	}
	pts := make([]Point, 0, len(doc.Data))
	for i, d := range doc.Data {
		tm, err := parseTime(d.PointTime)
		if err != nil {
			return Series{}, fmt.Errorf("data[%d].point_time: %w", i, err)
		}
		if d.Value == nil {
			continue
		}
		v := *d.Value
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Series{}, fmt.Errorf("%w: data[%d].value %v", ErrValue, i, v)
		}
		pts = append(pts, Point{Time: tm, Value: v})
	}
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: every value is null", ErrEmpty)
	}
	return finish(pts, opts, Series{Unit: unit, Signal: sig, Basis: opts.Basis, Zone: doc.Meta.Region, Source: "watttime"})
}

// sdkDuration is a Carbon Aware SDK duration: "hh:mm", "hh:mm:ss",
// "d.hh:mm:ss" or a number of minutes.
type sdkDuration struct {
	d   time.Duration
	set bool
}

// UnmarshalJSON accepts a clock string or a number of minutes.
func (s *sdkDuration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] != '"' {
		m, err := strconv.ParseFloat(string(b), 64)
		if err != nil || m < 0 || m > 1e7 || math.IsNaN(m) {
			return fmt.Errorf("%w: duration %s", ErrValue, b)
		}
		s.d, s.set = time.Duration(m*float64(time.Minute)), true
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	d, err := parseClock(str)
	if err != nil {
		return err
	}
	s.d, s.set = d, true
	return nil
}

// parseClock parses "hh:mm", "hh:mm:ss" or "d.hh:mm:ss".
func parseClock(str string) (time.Duration, error) {
	str = strings.TrimSpace(str)
	var days int64
	if i := strings.IndexByte(str, '.'); i >= 0 && i < strings.IndexByte(str+":", ':') {
		d, err := strconv.ParseInt(str[:i], 10, 32)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%w: duration %q", ErrValue, str)
		}
		days, str = d, str[i+1:]
	}
	parts := strings.Split(str, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("%w: duration %q", ErrValue, str)
	}
	var total float64
	mult := []float64{3600, 60, 1}
	for i, p := range parts {
		x, err := strconv.ParseFloat(p, 64)
		if err != nil || x < 0 || x > 1e6 || math.IsNaN(x) {
			return 0, fmt.Errorf("%w: duration %q", ErrValue, str)
		}
		total += x * mult[i]
	}
	total += float64(days) * 86400
	return time.Duration(total * float64(time.Second)), nil
}

// sdkPoint covers both the SDK's emissions data ({Location, Time, Rating,
// Duration}) and forecast data ({location, timestamp, duration, value}).
type sdkPoint struct {
	Location  string      `json:"location"`
	Time      string      `json:"time"`
	Timestamp string      `json:"timestamp"`
	Rating    *float64    `json:"rating"`
	Value     *float64    `json:"value"`
	Duration  sdkDuration `json:"duration"`
}

type sdkEntry struct {
	sdkPoint
	ForecastData *[]sdkPoint `json:"forecastData"`
}

// ReadCarbonAwareSDK reads Carbon Aware SDK JSON: either emissions data
// (the JSON data source and /emissions/bylocations: an array of {Location,
// Time, Rating, Duration}) or a forecast (/emissions/forecasts/current: an
// array of {location, forecastData:[{timestamp, value, duration}]}).
// Field names match case-insensitively. A document with several locations
// needs opts.Zone. The grid step defaults to the common duration. Unit
// defaults to g/kWh; the SDK does not state the signal, so it is opts'.
func ReadCarbonAwareSDK(r io.Reader, opts ReadOptions) (Series, error) {
	if err := checkBasis(opts.Basis); err != nil {
		return Series{}, err
	}
	b, err := readAllLimited(r)
	if err != nil {
		return Series{}, err
	}
	var entries []sdkEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return Series{}, fmt.Errorf("%w: want a JSON array of emissions or forecasts: %v", ErrFormat, err)
	}
	var flat []sdkPoint
	for _, e := range entries {
		if e.ForecastData != nil {
			for _, p := range *e.ForecastData {
				if p.Location == "" {
					p.Location = e.Location
				}
				flat = append(flat, p)
			}
			continue
		}
		flat = append(flat, e.sdkPoint)
	}
	if len(flat) > maxRows {
		return Series{}, fmt.Errorf("%w: more than %d points", ErrInvalid, maxRows)
	}
	zf := zoneFilter{want: opts.Zone, zone: opts.Zone}
	var step time.Duration
	pts := make([]Point, 0, len(flat))
	for i, p := range flat {
		keep, err := zf.keep(p.Location, "point", i, "location")
		if err != nil {
			return Series{}, err
		}
		if !keep {
			continue
		}
		ts := p.Time
		if ts == "" {
			ts = p.Timestamp
		}
		tm, err := parseTime(ts)
		if err != nil {
			return Series{}, fmt.Errorf("point %d: %w", i, err)
		}
		v := p.Rating
		if v == nil {
			v = p.Value
		}
		if p.Duration.set {
			if p.Duration.d <= 0 {
				return Series{}, fmt.Errorf("%w: point %d: duration %v", ErrValue, i, p.Duration.d)
			}
			if step != 0 && p.Duration.d != step {
				return Series{}, fmt.Errorf("%w: point %d: duration %v differs from %v", ErrIrregular, i, p.Duration.d, step)
			}
			step = p.Duration.d
		}
		if v == nil {
			continue
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
			return Series{}, fmt.Errorf("%w: point %d value %v", ErrValue, i, *v)
		}
		pts = append(pts, Point{Time: tm, Value: *v})
	}
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: no values (zone %q)", ErrEmpty, opts.Zone)
	}
	if opts.Grid.Step == 0 {
		opts.Grid.Step = step
	}
	return finish(pts, opts, Series{Unit: unitOr(opts.Unit, GPerKWh), Basis: opts.Basis, Zone: zf.zone, Source: "carbon-aware-sdk"})
}
