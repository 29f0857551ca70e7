package carbon

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Issue 17: hostile or careless inputs to Series and the readers return
// typed errors; none crashes or passes silently.

func hourSeries(n int) Series {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(100 + i)
	}
	return Series{Start: time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC), Step: time.Hour, Values: v, Unit: GPerKWh}
}

func TestResampleUpsampleBound(t *testing.T) {
	s := hourSeries(24)
	for _, step := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond} {
		_, err := s.Resample(step)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Resample(%v) of a day of hours: err %v, want ErrInvalid (more than MaxValues)", step, err)
		}
	}
	got, err := s.Resample(time.Minute)
	if err != nil || got.Len() != 24*60 {
		t.Fatalf("Resample(1m): %d values, %v; want 1440", got.Len(), err)
	}
}

func TestSeriesValidateBounds(t *testing.T) {
	s := hourSeries(3)
	s.Step = time.Duration(math.MaxInt64 / 2)
	if err := s.Validate(); !errors.Is(err, ErrRange) {
		t.Errorf("series whose end overflows: err %v, want ErrRange", err)
	}
	s = hourSeries(3)
	s.Unit = "furlongs"
	if err := s.Validate(); !errors.Is(err, ErrUnit) {
		t.Errorf("unit furlongs: err %v, want ErrUnit", err)
	}
	s.Unit = ""
	if err := s.Validate(); err != nil {
		t.Errorf("unknown (empty) unit: %v, want nil", err)
	}
}

func TestReadFarApartTimestamps(t *testing.T) {
	in := "time,v\n0001-01-01 00:00:00,1\n9999-01-01 00:00:00,2\n"
	s, err := ReadTwoColumn(strings.NewReader(in), ReadOptions{})
	if !errors.Is(err, ErrRange) {
		t.Fatalf("timestamps 9998 years apart: series %v..%v, err %v; want ErrRange", s.Start, s.End(), err)
	}
}

func TestReadEmptyCellIsAGap(t *testing.T) {
	in := "time,v\n2022-01-01 00:00:00,1\n2022-01-01 01:00:00,\n2022-01-01 02:00:00,3\n"
	s, err := ReadTwoColumn(strings.NewReader(in), ReadOptions{})
	if !errors.Is(err, ErrGap) {
		t.Fatalf("empty cell: step %v, %d values, err %v; want ErrGap (not a 2 h step)", s.Step, s.Len(), err)
	}
	s, err = ReadTwoColumn(strings.NewReader(in), ReadOptions{Grid: GridOptions{Fill: FillHold}})
	if err != nil || s.Step != time.Hour || s.Len() != 3 || !s.Estimated[1] {
		t.Fatalf("empty cell with FillHold: step %v, %d values, %v, err %v; want 3 hourly values, the middle estimated", s.Step, s.Len(), s.Estimated, err)
	}
	em := "Datetime (UTC),Zone Id,Carbon Intensity gCO₂eq/kWh (direct)\n2022-01-01 00:00:00,ES,1\n2022-01-01 01:00:00,ES,\n2022-01-01 02:00:00,ES,3\n"
	if _, err := ReadElectricityMaps(strings.NewReader(em), ReadOptions{Basis: Direct}); !errors.Is(err, ErrGap) {
		t.Errorf("Electricity Maps empty cell: err %v, want ErrGap", err)
	}
}

func TestReadUnknownUnit(t *testing.T) {
	in := "time,v\n2022-01-01 00:00:00,1\n2022-01-01 01:00:00,2\n"
	if _, err := ReadTwoColumn(strings.NewReader(in), ReadOptions{Unit: "furlongs"}); !errors.Is(err, ErrUnit) {
		t.Errorf("ReadOptions.Unit furlongs: err %v, want ErrUnit", err)
	}
	if _, err := ReadTwoColumn(strings.NewReader(in), ReadOptions{Unit: KgPerMWh}); err != nil {
		t.Errorf("ReadOptions.Unit kg/MWh: %v", err)
	}
}

// FuzzResample drives Resample with arbitrary lengths, steps and targets
// (the resolution a user picks, carbonplan's -slot): a typed error or a
// valid series of at most MaxValues values, never a panic or an
// allocation the bound does not allow.
func FuzzResample(f *testing.F) {
	f.Add(uint16(24), int64(time.Hour), int64(time.Nanosecond))
	f.Add(uint16(24), int64(time.Hour), int64(time.Millisecond))
	f.Add(uint16(24), int64(time.Hour), int64(time.Minute))
	f.Add(uint16(96), int64(15*time.Minute), int64(time.Hour))
	f.Add(uint16(1), int64(math.MaxInt64/2), int64(1))
	f.Add(uint16(7), int64(time.Hour), int64(-1))
	f.Add(uint16(0), int64(time.Hour), int64(time.Hour))
	f.Fuzz(func(t *testing.T, n uint16, step, to int64) {
		s := hourSeries(int(n))
		s.Step = time.Duration(step)
		got, err := s.Resample(time.Duration(to))
		if err != nil {
			for _, e := range sentinels {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("Resample returned an invalid series: %v", err)
		}
	})
}

// FuzzPlanResolution drives the DP planner's user-chosen resolution
// (carbonplan's -resolution) and slot count: a typed error or a plan
// that does the work, never a panic or an unbounded table.
func FuzzPlanResolution(f *testing.F) {
	f.Add(int64(4000), uint8(24), uint8(1))
	f.Add(int64(0), uint8(3), uint8(0))
	f.Add(int64(-1), uint8(3), uint8(1))
	f.Add(int64(math.MaxInt64), uint8(48), uint8(1))
	f.Add(int64(1_000_001), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, res int64, slots, method uint8) {
		if slots == 0 {
			return
		}
		c := Curve{WorkPerSecond: []float64{0, 1, 1.8, 2.4}, Watts: []float64{0, 100, 210, 330}}
		v := make([]float64, int(slots))
		for i := range v {
			v[i] = float64(50 + (i*37)%200)
		}
		s := hourly(v...)
		work := 0.5 * float64(len(v)) * 2.4 * 3600
		r := int(res)
		if int64(r) != res {
			r = math.MaxInt
		}
		opts := ScheduleOptions{Method: Method(method % 3), Resolution: r}
		pl, err := Schedule(s, c, work, s.End(), opts)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrInfeasible) {
				t.Fatalf("Resolution %d: error wraps no sentinel: %v", r, err)
			}
			return
		}
		if pl.Work < work*(1-1e-9) {
			t.Fatalf("Resolution %d: work %v < %v", r, pl.Work, work)
		}
	})
}
