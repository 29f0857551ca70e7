package carbon

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"testing"
	"time"
)

var sentinels = []error{ErrInvalid, ErrFormat, ErrValue, ErrOrder, ErrGap, ErrIrregular, ErrEmpty, ErrUnit, ErrRange, ErrInfeasible, ErrUnavailable}

func checkReadResult(t *testing.T, s Series, err error) {
	t.Helper()
	if err != nil {
		for _, e := range sentinels {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("error wraps no sentinel: %v", err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("reader returned an invalid series: %v", err)
	}
}

// head returns the first n lines of a testdata file.
func head(t testing.TB, name string, n int) []byte {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfterN(b, []byte("\n"), n+1)
	return bytes.Join(lines[:min(n, len(lines))], nil)
}

// brokenCSV are the broken files every CSV reader is fed: wrong headers,
// bad numbers, non-monotonic time, gaps, empty.
var brokenCSV = []string{
	"",
	"\n",
	"time,value\n",
	"a,b,c\n1,2,3\n",
	"time,value\n2022-01-01 00:00:00,abc\n",
	"time,value\n2022-01-01 00:00:00,NaN\n",
	"time,value\n2022-01-01 00:00:00,-5\n",
	"time,value\n2022-01-01 00:00:00,1e400\n",
	"time,value\nyesterday,1\n",
	"time,value\n2022-01-01 01:00:00,1\n2022-01-01 00:00:00,2\n",
	"time,value\n2022-01-01 00:00:00,1\n2022-01-01 00:00:00,2\n",
	"time,value\n2022-01-01 00:00:00,1\n2022-01-03 00:00:00,2\n",
	"time,value\n2022-01-01 00:00:00,1\n2022-01-01 00:07:00,2\n2022-01-01 00:15:00,3\n",
	"time,value\n2022-01-01 00:00:00,1,extra\n",
	"\"unterminated,1\n",
	"\ufefftime,value\n2022-01-01T00:00:00Z,1\n2022-01-01T01:00:00Z,\n2022-01-01T02:00:00Z,3\n",
}

func fuzzCSV(f *testing.F, seeds [][]byte, read func(io.Reader, ReadOptions) (Series, error), opts ...ReadOptions) {
	for _, s := range seeds {
		f.Add(s, uint8(0))
	}
	for _, s := range brokenCSV {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, fill uint8) {
		o := ReadOptions{}
		if len(opts) > 0 {
			o = opts[0]
		}
		o.Grid.Fill = Fill(fill % 3)
		if fill > 128 {
			o.Grid.MaxGap = 24 * time.Hour // bound the grid on fuzzed input
		}
		if o.Grid.Fill != FillError && len(b) > 0 && b[0]%2 == 0 {
			o.Grid.MaxGap = 24 * time.Hour
		}
		s, err := read(bytes.NewReader(b), o)
		checkReadResult(t, s, err)
	})
}

func FuzzReadElectricityMaps(f *testing.F) {
	good := head(f, "electricitymaps_ES_2022-01-01_7d.csv", 30)
	wrong := bytes.Replace(good, []byte("(direct)"), []byte("(nope)"), 1)
	bad := bytes.Replace(good, []byte("127.34"), []byte("12x.34"), 1)
	est := bytes.Replace(good, []byte(",true,"), []byte(",maybe,"), 1)
	fuzzCSV(f, [][]byte{good, wrong, bad, est}, ReadElectricityMaps, ReadOptions{Basis: Direct})
}

func FuzzReadElectricityMapsLegacy(f *testing.F) {
	good := head(f, "carbonscaler_US-CAL-CISO_2020-01_hourly_sample.csv", 8)
	fuzzCSV(f, [][]byte{good, bytes.Replace(good, []byte("carbon_intensity_avg"), []byte("ci"), 1)}, ReadElectricityMapsLegacy)
}

func FuzzReadTwoColumn(f *testing.F) {
	fuzzCSV(f, [][]byte{head(f, "letswaitawhile_DE_2019-12-20_3d.csv", 10), head(f, "letswaitawhile_DE_2020-12-19_gap.csv", 80)}, ReadTwoColumn)
}

func FuzzReadWattTimeCSV(f *testing.F) {
	fuzzCSV(f, [][]byte{head(f, "watttime_SYNTHETIC_5min.csv", 13)}, ReadWattTimeCSV)
}

var brokenJSON = []string{
	"", "null", "{}", "[]", "[{}]", "{\"data\":[]}", "{\"data\":[{\"point_time\":\"x\",\"value\":1}]}",
	"{\"data\":[{\"point_time\":\"2024-01-01T00:00:00Z\",\"value\":-1}]}",
	"{\"data\":[{\"point_time\":\"2024-01-01T01:00:00Z\",\"value\":1},{\"point_time\":\"2024-01-01T00:00:00Z\",\"value\":1}]}",
	"{\"data\":[{\"point_time\":\"2024-01-01T00:00:00Z\",\"value\":1}],\"meta\":{\"data_point_period_seconds\":-3}}",
	"[{\"Location\":\"a\",\"Time\":\"2024-01-01T00:00:00Z\",\"Rating\":\"high\",\"Duration\":\"01:00\"}]",
	"[{\"Location\":\"a\",\"Time\":\"2024-01-01T00:00:00Z\",\"Rating\":1,\"Duration\":\"1:xx\"}]",
	"[{\"location\":\"a\",\"forecastData\":[{\"timestamp\":\"2024-01-01T00:00:00Z\",\"value\":1,\"duration\":-5}]}]",
	"[{\"Location\":\"a\",\"Time\":\"2024-01-01T00:00:00Z\",\"Rating\":1,\"Duration\":\"00:00\"}]",
	"{\"data\": [",
}

func fuzzJSON(f *testing.F, seeds [][]byte, read func(io.Reader, ReadOptions) (Series, error)) {
	for _, s := range seeds {
		f.Add(s, uint8(0))
	}
	for _, s := range brokenJSON {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, b []byte, fill uint8) {
		o := ReadOptions{Grid: GridOptions{Fill: Fill(fill % 3)}}
		if o.Grid.Fill != FillError {
			o.Grid.MaxGap = 24 * time.Hour
		}
		s, err := read(bytes.NewReader(b), o)
		checkReadResult(t, s, err)
	})
}

func FuzzReadWattTimeJSON(f *testing.F) {
	b, _ := os.ReadFile("testdata/watttime_v3_SYNTHETIC_5min.json")
	fuzzJSON(f, [][]byte{b}, ReadWattTimeJSON)
}

func FuzzReadCarbonAwareSDK(f *testing.F) {
	b, _ := os.ReadFile("testdata/carbon-aware-sdk_forecast_SYNTHETIC.json")
	em := []byte(`[{"Location":"eastus","Time":"2021-10-25T14:50:00+00:00","Rating":90,"Duration":"01:00"},{"Location":"eastus","Time":"2021-10-25T15:50:00+00:00","Rating":57,"Duration":"01:00"}]`)
	fuzzJSON(f, [][]byte{b, em}, ReadCarbonAwareSDK)
}

func FuzzReadProfile(f *testing.F) {
	b, _ := os.ReadFile("testdata/carbonscaler_profile_nbody10k.csv")
	f.Add(b)
	f.Add([]byte("nodes,throughput,power\n1,10,5\n2,15,9\n"))
	f.Add([]byte("nodes,throughput,power\n0,0,0\n2,10,5\n"))
	f.Add([]byte("nodes,throughput,power\n0,0,0\n1,10,0\n"))
	f.Add([]byte("nodes,throughput,power\n0,0,0\n1,10,5\n2,9,6\n"))
	f.Add([]byte("nodes,speed\n0,0\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadProfile(bytes.NewReader(b))
		if err != nil {
			checkReadResult(t, Series{}, err)
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzPlan feeds the planner and its validators arbitrary curves,
// intensities and options: no panics, errors wrap sentinels, plans meet
// the work and respect the scale range, and Auto never loses to its own
// bound by more than its tolerance or DP's error.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{10, 200, 30, 90, 40, 250, 7, 7, 1, 3, 0}, 0.5, uint8(0))
	f.Add([]byte{0, 0, 0, 1}, 1.5, uint8(1))
	f.Add([]byte{255, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 0.99, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, frac float64, method uint8) {
		if len(b) < 4 || len(b) > 40 {
			return
		}
		levels := 1 + int(b[0])%5
		c := Curve{WorkPerSecond: []float64{0}, Watts: []float64{0}}
		for k := 1; k <= levels; k++ {
			w := float64(b[k%len(b)]) + 1
			p := float64(b[(k+levels)%len(b)]%50) + 1
			c.WorkPerSecond = append(c.WorkPerSecond, c.WorkPerSecond[k-1]+w)
			c.Watts = append(c.Watts, c.Watts[k-1]+p)
		}
		ci := make([]float64, 0, len(b))
		for _, x := range b[1:] {
			ci = append(ci, float64(x))
		}
		s := hourly(ci...)
		minS := 1 + int(b[1])%levels
		opts := ScheduleOptions{MinScale: minS, Method: Method(method % 3), ChangeCostG: float64(b[2] % 3)}
		if len(ci) > 12 && opts.Method != Greedy {
			opts.Resolution = 200
		}
		work := frac * float64(len(ci)) * c.WorkPerSecond[levels] * 3600
		pl, err := Schedule(s, c, work, s.End(), opts)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrInfeasible) {
				t.Fatalf("unexpected error %v", err)
			}
			if errors.Is(err, ErrInfeasible) && frac <= 1-1e-9 && frac > 0 {
				t.Fatalf("feasible job refused: %v", err)
			}
			return
		}
		if pl.Work < work*(1-1e-9) || math.IsNaN(pl.CarbonG) {
			t.Fatalf("work %v < %v", pl.Work, work)
		}
		for _, sl := range pl.Scales() {
			if sl != 0 && (sl < minS || sl > levels) {
				t.Fatalf("scale %d outside [%d,%d]", sl, minS, levels)
			}
		}
	})
}
