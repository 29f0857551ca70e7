package carbon

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// ReadOptions configure the readers. The zero value works for every reader
// except ReadElectricityMaps, which needs Basis chosen explicitly.
type ReadOptions struct {
	// Basis selects the column in an Electricity Maps portal CSV (Direct
	// or LifeCycle; required there) and labels the result of the other
	// readers (default BasisUnknown, or what the format states).
	Basis Basis
	// Signal labels the result when the format does not say; zero keeps
	// the format's own (Average for Electricity Maps, Marginal for
	// WattTime MOER, unknown otherwise).
	Signal Signal
	// Unit labels the values when the format does not say. Zero means
	// GPerKWh, except for WattTime CSV, where it means LbsPerMWh.
	Unit Unit
	// Zone selects the rows of one zone in files with several zones, and
	// labels the result when the file names none.
	Zone string
	// Column names the value column in a two-column or legacy wide CSV.
	// Zero means the second column, or "carbon_intensity_avg".
	Column string
	// Grid puts the points on a regular grid; see FromPoints. Gaps and
	// off-grid points are errors unless Grid.Fill says otherwise.
	Grid GridOptions
}

// maxRows bounds what a reader accepts, so a hostile file cannot exhaust
// memory through the grid.
const maxRows = 5_000_000

// timeLayouts are tried in order by parseTime. Naive times are UTC.
var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
}

func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: timestamp %q", ErrFormat, s)
}

// parseValue parses a non-negative finite number. ok is false for an empty
// field (a missing value).
func parseValue(s string) (v float64, ok bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, false, fmt.Errorf("%w: %q", ErrValue, s)
	}
	return v, true, nil
}

// csvTable reads a whole CSV with a header row.
type csvTable struct {
	header []string // lower-cased, trimmed, BOM removed
	raw    []string // header as written
	rows   [][]string
	first  int // line number of rows[0]
}

func readCSV(r io.Reader) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = false
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: empty file", ErrEmpty)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	t := &csvTable{raw: head, first: 2}
	for i, h := range head {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		t.header = append(t.header, strings.ToLower(strings.TrimSpace(h)))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(head) {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("%w: line %d has %d fields, header has %d", ErrFormat, line, len(rec), len(head))
		}
		if len(t.rows) >= maxRows {
			return nil, fmt.Errorf("%w: more than %d rows", ErrInvalid, maxRows)
		}
		t.rows = append(t.rows, rec)
	}
	if len(t.rows) == 0 {
		return nil, fmt.Errorf("%w: header only", ErrEmpty)
	}
	return t, nil
}

// col returns the index of the first header equal to one of names, or -1.
func (t *csvTable) col(names ...string) int {
	for _, n := range names {
		for i, h := range t.header {
			if h == n {
				return i
			}
		}
	}
	return -1
}

// points reads time column tc and value column vc of every row, skipping
// empty values. With zc >= 0 it keeps the rows of one zone through zf;
// what names column zc in errors ("zone", "region").
//
// It also returns the smallest positive difference between the times of
// consecutive kept rows, empty ones included, so that a missing value
// cannot widen the inferred grid step (a gap, not a longer step).
func (t *csvTable) points(tc, vc, zc int, what string, zf *zoneFilter) ([]Point, time.Duration, error) {
	pts := make([]Point, 0, len(t.rows))
	var step time.Duration
	var prev time.Time
	seen := false
	for i, rec := range t.rows {
		line := t.first + i
		if zc >= 0 {
			keep, err := zf.keep(strings.TrimSpace(rec[zc]), "line", line, what)
			if err != nil {
				return nil, 0, err
			}
			if !keep {
				continue
			}
		}
		tm, err := parseTime(rec[tc])
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", line, err)
		}
		v, ok, err := parseValue(rec[vc])
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: column %q: %w", line, t.header[vc], err)
		}
		step, prev, seen = minStep(step, prev, seen, tm)
		if ok {
			pts = append(pts, Point{Time: tm, Value: v})
		}
	}
	return pts, step, nil
}

// minStep folds time tm into the smallest positive difference step
// between consecutive row times (prev, when seen, is the previous one).
func minStep(step time.Duration, prev time.Time, seen bool, tm time.Time) (time.Duration, time.Time, bool) {
	if seen {
		if d := tm.Sub(prev); d > 0 && (step == 0 || d < step) {
			step = d
		}
	}
	return step, tm, true
}

// gridWith returns g with its Step set to the step the rows imply when g
// leaves it zero and the rows had one.
func gridWith(g GridOptions, rowStep time.Duration) GridOptions {
	if g.Step == 0 && rowStep > 0 {
		g.Step = rowStep
	}
	return g
}

// finish puts points on the grid and fills in metadata.
func finish(pts []Point, opts ReadOptions, meta Series) (Series, error) {
	if err := checkUnit(opts.Unit); err != nil {
		return Series{}, fmt.Errorf("ReadOptions.Unit: %w", err)
	}
	s, err := FromPoints(pts, opts.Grid)
	if err != nil {
		return Series{}, err
	}
	s.Unit, s.Signal, s.Basis, s.Zone, s.Source = meta.Unit, meta.Signal, meta.Basis, meta.Zone, meta.Source
	if opts.Signal != SignalUnknown {
		s.Signal = opts.Signal
	}
	if s.Zone == "" {
		s.Zone = opts.Zone
	}
	if err := s.Validate(); err != nil {
		return Series{}, err
	}
	return s, nil
}

// zoneFilter keeps the rows of one zone: want if set, else the first zone
// seen; a second zone when none was asked for is an error.
type zoneFilter struct {
	want string // ReadOptions.Zone
	zone string // the zone kept so far (want, or the first seen)
}

// keep reports whether a row of zone z is kept. pos and n name the row in
// the error ("line", 7); what names the field ("zone", "region").
func (f *zoneFilter) keep(z, pos string, n int, what string) (bool, error) {
	switch {
	case f.want != "" && z != f.want:
		return false, nil
	case f.zone == "":
		f.zone = z
	case z != f.zone:
		return false, fmt.Errorf("%w: %s %d: %s %q after %q; set ReadOptions.Zone", ErrFormat, pos, n, what, z, f.zone)
	}
	return true, nil
}

func unitOr(u, def Unit) Unit {
	if u == "" {
		return def
	}
	return u
}

func checkBasis(b Basis) error {
	if b < BasisUnknown || b > LifeCycle {
		return fmt.Errorf("%w: ReadOptions.Basis %d", ErrInvalid, b)
	}
	return nil
}

// ReadElectricityMaps reads an Electricity Maps data-portal CSV (columns
// "Datetime (UTC)", "Zone Id", "Carbon Intensity gCO₂eq/kWh (direct)",
// "Carbon Intensity gCO₂eq/kWh (LCA)", "Data Estimated", ...). The portal
// has both a direct and a life-cycle column, so opts.Basis must be Direct
// or LifeCycle; anything else is an error wrapping ErrInvalid. Values are
// average intensities in g/kWh; "Data Estimated" flags are kept. A file
// with several zones needs opts.Zone. Empty intensity cells are gaps,
// handled by opts.Grid.
func ReadElectricityMaps(r io.Reader, opts ReadOptions) (Series, error) {
	if opts.Basis != Direct && opts.Basis != LifeCycle {
		return Series{}, fmt.Errorf("%w: ReadOptions.Basis must be Direct or LifeCycle for the Electricity Maps portal CSV, which has both columns", ErrInvalid)
	}
	t, err := readCSV(r)
	if err != nil {
		return Series{}, err
	}
	tc := t.col("datetime (utc)", "datetime")
	if tc < 0 {
		return Series{}, fmt.Errorf("%w: no \"Datetime (UTC)\" column in header %q", ErrFormat, t.raw)
	}
	want := "(direct)"
	if opts.Basis == LifeCycle {
		want = "(lca)"
	}
	vc := -1
	for i, h := range t.header {
		if strings.HasPrefix(h, "carbon intensity") && strings.HasSuffix(h, want) {
			vc = i
			break
		}
	}
	if vc < 0 {
		return Series{}, fmt.Errorf("%w: no \"Carbon Intensity ... %s\" column in header %q", ErrFormat, want, t.raw)
	}
	zc := t.col("zone id")
	ec := t.col("data estimated")
	zf := zoneFilter{want: opts.Zone, zone: opts.Zone}
	pts := make([]Point, 0, len(t.rows))
	var rowStep time.Duration
	var prev time.Time
	seen := false
	for i, rec := range t.rows {
		line := t.first + i
		if zc >= 0 {
			keep, err := zf.keep(strings.TrimSpace(rec[zc]), "line", line, "zone")
			if err != nil {
				return Series{}, err
			}
			if !keep {
				continue
			}
		}
		tm, err := parseTime(rec[tc])
		if err != nil {
			return Series{}, fmt.Errorf("line %d: %w", line, err)
		}
		v, ok, err := parseValue(rec[vc])
		if err != nil {
			return Series{}, fmt.Errorf("line %d: column %q: %w", line, t.raw[vc], err)
		}
		rowStep, prev, seen = minStep(rowStep, prev, seen, tm)
		if !ok {
			continue
		}
		p := Point{Time: tm, Value: v}
		if ec >= 0 {
			switch strings.ToLower(strings.TrimSpace(rec[ec])) {
			case "true", "1", "yes":
				p.Estimated = true
			case "false", "0", "no", "":
			default:
				return Series{}, fmt.Errorf("%w: line %d: Data Estimated %q", ErrValue, line, rec[ec])
			}
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: no intensity values (zone %q)", ErrEmpty, opts.Zone)
	}
	opts.Grid = gridWith(opts.Grid, rowStep)
	return finish(pts, opts, Series{Unit: GPerKWh, Signal: Average, Basis: opts.Basis, Zone: zf.zone, Source: "electricitymaps"})
}

// ReadElectricityMapsLegacy reads the legacy Electricity Maps wide export
// (about 110 columns: "datetime", "zone_name", "carbon_intensity_avg",
// ...), as shipped with CarbonScaler. The value column is opts.Column, by
// default "carbon_intensity_avg"; the result is an average intensity in
// g/kWh whose basis is opts.Basis (the export does not state it).
func ReadElectricityMapsLegacy(r io.Reader, opts ReadOptions) (Series, error) {
	if err := checkBasis(opts.Basis); err != nil {
		return Series{}, err
	}
	t, err := readCSV(r)
	if err != nil {
		return Series{}, err
	}
	tc := t.col("datetime")
	if tc < 0 {
		return Series{}, fmt.Errorf("%w: no \"datetime\" column", ErrFormat)
	}
	name := strings.ToLower(strings.TrimSpace(opts.Column))
	if name == "" {
		name = "carbon_intensity_avg"
	}
	vc := t.col(name)
	if vc < 0 {
		return Series{}, fmt.Errorf("%w: no %q column", ErrFormat, name)
	}
	zc := t.col("zone_name", "zone")
	zf := zoneFilter{want: opts.Zone, zone: opts.Zone}
	pts, rowStep, err := t.points(tc, vc, zc, "zone", &zf)
	opts.Grid = gridWith(opts.Grid, rowStep)
	if err != nil {
		return Series{}, err
	}
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: no values in column %q", ErrEmpty, name)
	}
	return finish(pts, opts, Series{Unit: unitOr(opts.Unit, GPerKWh), Signal: Average, Basis: opts.Basis, Zone: zf.zone, Source: "electricitymaps-legacy"})
}

// ReadTwoColumn reads a CSV of time and value, such as Let's Wait Awhile's
// "time,DE" files. The value column is opts.Column or the second column;
// the zone defaults to that column's header. Unit defaults to g/kWh;
// signal and basis are opts' (the format states neither).
func ReadTwoColumn(r io.Reader, opts ReadOptions) (Series, error) {
	if err := checkBasis(opts.Basis); err != nil {
		return Series{}, err
	}
	t, err := readCSV(r)
	if err != nil {
		return Series{}, err
	}
	if len(t.header) < 2 {
		return Series{}, fmt.Errorf("%w: need a time and a value column, header is %q", ErrFormat, t.raw)
	}
	vc := 1
	if opts.Column != "" {
		if vc = t.col(strings.ToLower(strings.TrimSpace(opts.Column))); vc < 1 {
			return Series{}, fmt.Errorf("%w: no value column %q after the time column", ErrFormat, opts.Column)
		}
	}
	pts, rowStep, err := t.points(0, vc, -1, "", nil)
	opts.Grid = gridWith(opts.Grid, rowStep)
	if err != nil {
		return Series{}, err
	}
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: no values", ErrEmpty)
	}
	zone := opts.Zone
	if zone == "" {
		zone = strings.TrimSpace(t.raw[vc])
	}
	return finish(pts, opts, Series{Unit: unitOr(opts.Unit, GPerKWh), Basis: opts.Basis, Zone: zone, Source: "csv"})
}

// ReadWattTimeCSV reads a WattTime CSV download: a "point_time" (or
// "timestamp") column and a "value" (or "moer") column, optionally "region"
// or "ba". WattTime reports lbs/MWh, so the unit defaults to LbsPerMWh
// (convert with Series.Convert); the signal defaults to Marginal (MOER).
func ReadWattTimeCSV(r io.Reader, opts ReadOptions) (Series, error) {
	if err := checkBasis(opts.Basis); err != nil {
		return Series{}, err
	}
	t, err := readCSV(r)
	if err != nil {
		return Series{}, err
	}
	tc := t.col("point_time", "timestamp")
	vc := t.col("value", "moer")
	if tc < 0 || vc < 0 {
		return Series{}, fmt.Errorf("%w: need \"point_time\" and \"value\" columns, header is %q", ErrFormat, t.raw)
	}
	rc := t.col("region", "ba")
	zf := zoneFilter{want: opts.Zone, zone: opts.Zone}
	pts, rowStep, err := t.points(tc, vc, rc, "region", &zf)
	opts.Grid = gridWith(opts.Grid, rowStep)
	if err != nil {
		return Series{}, err
	}
	if len(pts) == 0 {
		return Series{}, fmt.Errorf("%w: no values", ErrEmpty)
	}
	return finish(pts, opts, Series{Unit: unitOr(opts.Unit, LbsPerMWh), Signal: Marginal, Basis: opts.Basis, Zone: zf.zone, Source: "watttime"})
}
