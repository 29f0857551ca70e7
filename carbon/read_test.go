package carbon

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func open(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func TestReaders(t *testing.T) {
	utc := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	tests := []struct {
		name   string
		file   string
		read   func(*os.File, ReadOptions) (Series, error)
		opts   ReadOptions
		n      int
		start  time.Time
		step   time.Duration
		first  float64
		unit   Unit
		signal Signal
		basis  Basis
		zone   string
		est    int // number of Estimated flags
	}{
		{"em-direct", "electricitymaps_US-CAL-CISO_2022-01-01_14d.csv", rdEM, ReadOptions{Basis: Direct}, 336, utc("2022-01-01T00:00:00Z"), time.Hour, 209.26, GPerKWh, Average, Direct, "US-CAL-CISO", 0},
		{"em-lca", "electricitymaps_US-CAL-CISO_2022-01-01_14d.csv", rdEM, ReadOptions{Basis: LifeCycle}, 336, utc("2022-01-01T00:00:00Z"), time.Hour, 274.07, GPerKWh, Average, LifeCycle, "US-CAL-CISO", 0},
		{"em-es-estimated", "electricitymaps_ES_2022-01-01_7d.csv", rdEM, ReadOptions{Basis: Direct}, 168, utc("2022-01-01T00:00:00Z"), time.Hour, -1, GPerKWh, Average, Direct, "ES", 1},
		{"em-no", "electricitymaps_NO_2022-01-01_7d.csv", rdEM, ReadOptions{Basis: Direct}, 168, utc("2022-01-01T00:00:00Z"), time.Hour, -1, GPerKWh, Average, Direct, "NO", 0},
		{"legacy-hold", "carbonscaler_US-CAL-CISO_2020-01_hourly_sample.csv", rdLegacy, ReadOptions{Grid: GridOptions{Fill: FillHold}}, 1346, utc("2020-01-01T00:00:00Z"), time.Hour, 332.39, GPerKWh, Average, BasisUnknown, "US-CAL-CISO", 1286},
		{"lwa-de", "letswaitawhile_DE_2019-12-20_3d.csv", rdTwo, ReadOptions{Basis: LifeCycle, Signal: Average}, 288, utc("2019-12-20T00:00:00Z"), 15 * time.Minute, 218.29003068829462, GPerKWh, Average, LifeCycle, "DE", 0},
		{"lwa-de-gap-linear", "letswaitawhile_DE_2020-12-19_gap.csv", rdTwo, ReadOptions{Grid: GridOptions{Fill: FillLinear}}, 103, utc("2020-12-19T14:30:00Z"), 15 * time.Minute, -1, GPerKWh, SignalUnknown, BasisUnknown, "DE", 2},
		{"watttime-csv", "watttime_SYNTHETIC_5min.csv", rdWTC, ReadOptions{}, 12, utc("2024-03-01T00:00:00Z"), 5 * time.Minute, 900, LbsPerMWh, Marginal, BasisUnknown, "SYNTH_NORTH", 0},
		{"watttime-json", "watttime_v3_SYNTHETIC_5min.json", rdWTJ, ReadOptions{}, 12, utc("2024-03-01T00:00:00Z"), 5 * time.Minute, 900, LbsPerMWh, Marginal, BasisUnknown, "SYNTH_NORTH", 0},
		{"sdk-emissions", "carbon-aware-sdk_test-data-aws-emissions_SYNTHETIC.json", rdSDK, ReadOptions{Zone: "us-east-1"}, -1, utc("2021-10-25T14:50:00Z"), time.Hour, 90, GPerKWh, SignalUnknown, BasisUnknown, "us-east-1", 0},
		{"sdk-forecast", "carbon-aware-sdk_forecast_SYNTHETIC.json", rdSDK, ReadOptions{}, 3, utc("2024-03-01T00:00:00Z"), time.Hour, 250, GPerKWh, SignalUnknown, BasisUnknown, "synth-east", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.read(open(t, tc.file), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if tc.n >= 0 && s.Len() != tc.n {
				t.Errorf("len %d, want %d", s.Len(), tc.n)
			}
			if !s.Start.Equal(tc.start) || s.Step != tc.step {
				t.Errorf("start %v step %v, want %v %v", s.Start, s.Step, tc.start, tc.step)
			}
			if tc.first >= 0 && s.Values[0] != tc.first {
				t.Errorf("first %v, want %v", s.Values[0], tc.first)
			}
			if s.Unit != tc.unit || s.Signal != tc.signal || s.Basis != tc.basis || s.Zone != tc.zone {
				t.Errorf("meta %q %v %v %q, want %q %v %v %q", s.Unit, s.Signal, s.Basis, s.Zone, tc.unit, tc.signal, tc.basis, tc.zone)
			}
			est := 0
			for _, e := range s.Estimated {
				if e {
					est++
				}
			}
			if est != tc.est {
				t.Errorf("%d estimated, want %d", est, tc.est)
			}
		})
	}
}

func rdEM(f *os.File, o ReadOptions) (Series, error)     { return ReadElectricityMaps(f, o) }
func rdLegacy(f *os.File, o ReadOptions) (Series, error) { return ReadElectricityMapsLegacy(f, o) }
func rdTwo(f *os.File, o ReadOptions) (Series, error)    { return ReadTwoColumn(f, o) }
func rdWTC(f *os.File, o ReadOptions) (Series, error)    { return ReadWattTimeCSV(f, o) }
func rdWTJ(f *os.File, o ReadOptions) (Series, error)    { return ReadWattTimeJSON(f, o) }
func rdSDK(f *os.File, o ReadOptions) (Series, error)    { return ReadCarbonAwareSDK(f, o) }

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		run  func() error
	}{
		{"em basis required", ErrInvalid, func() error {
			_, err := ReadElectricityMaps(open(t, "electricitymaps_NO_2022-01-01_7d.csv"), ReadOptions{})
			return err
		}},
		{"legacy gap refused", ErrGap, func() error {
			_, err := ReadElectricityMapsLegacy(open(t, "carbonscaler_US-CAL-CISO_2020-01_hourly_sample.csv"), ReadOptions{})
			return err
		}},
		{"legacy gap over MaxGap", ErrGap, func() error {
			_, err := ReadElectricityMapsLegacy(open(t, "carbonscaler_US-CAL-CISO_2020-01_hourly_sample.csv"), ReadOptions{Grid: GridOptions{Fill: FillHold, MaxGap: 6 * time.Hour}})
			return err
		}},
		{"de gap refused", ErrGap, func() error {
			_, err := ReadTwoColumn(open(t, "letswaitawhile_DE_2020-12-19_gap.csv"), ReadOptions{})
			return err
		}},
		{"sdk several zones", ErrFormat, func() error {
			_, err := ReadCarbonAwareSDK(open(t, "carbon-aware-sdk_test-data-aws-emissions_SYNTHETIC.json"), ReadOptions{})
			return err
		}},
		{"sdk unknown zone", ErrEmpty, func() error {
			_, err := ReadCarbonAwareSDK(open(t, "carbon-aware-sdk_test-data-aws-emissions_SYNTHETIC.json"), ReadOptions{Zone: "mars-1"})
			return err
		}},
		{"wrong header", ErrFormat, func() error {
			_, err := ReadElectricityMaps(strings.NewReader("a,b\n1,2\n"), ReadOptions{Basis: Direct})
			return err
		}},
		{"bad number", ErrValue, func() error {
			_, err := ReadTwoColumn(strings.NewReader("time,X\n2022-01-01 00:00:00,abc\n"), ReadOptions{})
			return err
		}},
		{"negative", ErrValue, func() error {
			_, err := ReadTwoColumn(strings.NewReader("time,X\n2022-01-01 00:00:00,-1\n"), ReadOptions{})
			return err
		}},
		{"backwards", ErrOrder, func() error {
			_, err := ReadTwoColumn(strings.NewReader("time,X\n2022-01-01 01:00:00,1\n2022-01-01 00:00:00,2\n"), ReadOptions{})
			return err
		}},
		{"duplicate", ErrOrder, func() error {
			_, err := ReadWattTimeCSV(strings.NewReader("point_time,value\n2022-01-01T00:00:00Z,1\n2022-01-01T00:00:00Z,2\n"), ReadOptions{})
			return err
		}},
		{"off grid", ErrIrregular, func() error {
			_, err := ReadTwoColumn(strings.NewReader("time,X\n2022-01-01 00:00:00,1\n2022-01-01 01:00:00,2\n2022-01-01 01:30:00,2\n2022-01-01 02:45:00,2\n"), ReadOptions{Grid: GridOptions{Step: time.Hour}})
			return err
		}},
		{"empty", ErrEmpty, func() error {
			_, err := ReadTwoColumn(strings.NewReader(""), ReadOptions{})
			return err
		}},
		{"header only", ErrEmpty, func() error {
			_, err := ReadWattTimeCSV(strings.NewReader("point_time,value\n"), ReadOptions{})
			return err
		}},
		{"json empty", ErrEmpty, func() error {
			_, err := ReadWattTimeJSON(strings.NewReader(" "), ReadOptions{})
			return err
		}},
		{"json units", ErrUnit, func() error {
			_, err := ReadWattTimeJSON(strings.NewReader(`{"data":[{"point_time":"2024-01-01T00:00:00Z","value":1}],"meta":{"units":"furlongs"}}`), ReadOptions{})
			return err
		}},
		{"sdk mixed durations", ErrIrregular, func() error {
			_, err := ReadCarbonAwareSDK(strings.NewReader(`[{"Location":"a","Time":"2024-01-01T00:00:00Z","Rating":1,"Duration":"01:00"},{"Location":"a","Time":"2024-01-01T01:00:00Z","Rating":1,"Duration":"00:30"}]`), ReadOptions{})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

func TestConvertAndResample(t *testing.T) {
	s, err := ReadWattTimeCSV(open(t, "watttime_SYNTHETIC_5min.csv"), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Convert(GPerKWh)
	if err != nil {
		t.Fatal(err)
	}
	if want := 900 * 0.45359237; !near(g.Values[0], want, 1e-12) || g.Unit != GPerKWh {
		t.Fatalf("converted %v %q, want %v", g.Values[0], g.Unit, want)
	}
	if _, err := (Series{Start: s.Start, Step: time.Hour, Values: []float64{1}}).Convert(GPerKWh); !errors.Is(err, ErrUnit) {
		t.Fatalf("unknown unit: %v", err)
	}
	h, err := g.Resample(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 1 || !near(h.Values[0], g.Mean(), 1e-12) {
		t.Fatalf("hourly %v, want mean %v", h.Values, g.Mean())
	}
	if _, err := g.Resample(25 * time.Minute); !errors.Is(err, ErrIrregular) {
		t.Fatalf("partial resample: %v", err)
	}
	if _, err := g.Resample(7 * time.Minute); !errors.Is(err, ErrIrregular) {
		t.Fatalf("odd resample: %v", err)
	}
	up, err := h.Resample(15 * time.Minute)
	if err != nil || up.Len() != 4 || up.Values[3] != h.Values[0] {
		t.Fatalf("upsample %v %v", up.Values, err)
	}
	sl, err := g.Slice(g.TimeAt(2).Add(time.Minute), g.TimeAt(5))
	if err != nil || sl.Len() != 3 || sl.Values[0] != g.Values[2] {
		t.Fatalf("slice %v %v", sl.Values, err)
	}
}

func TestFromPointsMixedSteps(t *testing.T) {
	// The GB Let's Wait Awhile series mixes 15- and 30-minute steps.
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	pts := []Point{{t0, 10, false}, {t0.Add(15 * time.Minute), 20, false}, {t0.Add(45 * time.Minute), 40, false}}
	if _, err := FromPoints(pts, GridOptions{}); !errors.Is(err, ErrGap) {
		t.Fatalf("want ErrGap, got %v", err)
	}
	s, err := FromPoints(pts, GridOptions{Fill: FillLinear})
	if err != nil {
		t.Fatal(err)
	}
	if s.Step != 15*time.Minute || len(s.Values) != 4 || s.Values[2] != 30 || !s.Estimated[2] || s.Estimated[1] {
		t.Fatalf("got %+v", s)
	}
	s, err = FromPoints(pts, GridOptions{Fill: FillHold, Step: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Values) != 1 || s.Values[0] != 10 {
		// 00:00 on grid, 00:15 and 00:45 off grid: the grid ends at 00:00.
		t.Fatalf("30-min hold: %+v", s)
	}
}
