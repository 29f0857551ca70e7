package carbon

import (
	"errors"
	"testing"
	"time"
)

func TestEmissionsFromPower(t *testing.T) {
	ci := hourly(100, 300)
	// 1 kW for 90 minutes from 00:30: 0.5 kWh at 100 and 1 kWh at 300.
	iv, err := EnergyFromPower([]PowerSample{{t0.Add(30 * time.Minute), 1000}}, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Emissions(iv, ci, AccountOptions{PUE: 1.5, Work: 7, EmbodiedG: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := (0.5*100 + 1.0*300) * 1.5
	if !near(r.OperationalG, want, 1e-12) || !near(r.FacilityKWh, 1.5*1.5, 1e-12) || !near(r.TotalG, want+10, 1e-12) || !near(r.GPerWork, (want+10)/7, 1e-12) {
		t.Fatalf("%+v, want %v g", r, want)
	}
	if !near(r.MeanIntensityGPerKWh, 350.0/1.5, 1e-12) {
		t.Fatalf("mean intensity %v", r.MeanIntensityGPerKWh)
	}
	lbs := ci
	lbs.Unit = LbsPerMWh
	r2, _ := Emissions(iv, lbs, AccountOptions{})
	if !near(r2.OperationalG, 350*GPerKWhPerLbsPerMWh, 1e-12) {
		t.Fatalf("lbs: %v", r2.OperationalG)
	}
	for _, tc := range []struct {
		name string
		iv   []EnergyInterval
		opts AccountOptions
		err  error
	}{
		{"outside", []EnergyInterval{{t0.Add(-time.Hour), t0, 1}}, AccountOptions{}, ErrRange},
		{"pue", iv, AccountOptions{PUE: 0.5}, ErrInvalid},
		{"empty", []EnergyInterval{{t0, t0, 1}}, AccountOptions{}, ErrOrder},
		{"neg", []EnergyInterval{{t0, t0.Add(time.Hour), -1}}, AccountOptions{}, ErrValue},
	} {
		if _, err := Emissions(tc.iv, ci, tc.opts); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestEnergyFromCounters(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name   string
		r      []CounterReading
		opts   CounterOptions
		joules []float64
		stats  CounterStats
		err    error
	}{
		{"monotone", []CounterReading{{at(0), 100}, {at(1), 700}, {at(2), 1300}}, CounterOptions{}, []float64{600, 600}, CounterStats{}, nil},
		{"reset", []CounterReading{{at(0), 5000}, {at(1), 5600}, {at(2), 200}}, CounterOptions{}, []float64{600, 200}, CounterStats{Resets: 1}, nil},
		{"wrap", []CounterReading{{at(0), 900}, {at(1), 300}}, CounterOptions{WrapJoules: 1000}, []float64{400}, CounterStats{Wraps: 1}, nil},
		{"too much power", []CounterReading{{at(0), 0}, {at(1), 1e9}}, CounterOptions{MaxWatts: 1000}, nil, CounterStats{}, ErrValue},
		{"backwards time", []CounterReading{{at(1), 0}, {at(0), 1}}, CounterOptions{}, nil, CounterStats{}, ErrOrder},
		{"one reading", []CounterReading{{at(0), 0}}, CounterOptions{}, nil, CounterStats{}, ErrEmpty},
		{"above wrap", []CounterReading{{at(0), 0}, {at(1), 2000}}, CounterOptions{WrapJoules: 1000}, nil, CounterStats{}, ErrValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			iv, st, err := EnergyFromCounters(tc.r, tc.opts)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if st != tc.stats || len(iv) != len(tc.joules) {
				t.Fatalf("stats %+v intervals %v", st, iv)
			}
			for i, j := range tc.joules {
				if iv[i].Joules != j {
					t.Fatalf("interval %d: %v J, want %v", i, iv[i].Joules, j)
				}
			}
		})
	}
}

func TestPlanIntervalsMatchScheduleCarbon(t *testing.T) {
	s := week(t)
	c := nbody10k(t)
	pl, err := Schedule(s, c, c.WorkPerSecond[7]*3600*10, s.Start.Add(48*time.Hour), ScheduleOptions{PUE: 1.2})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Emissions(pl.Intervals(), s, AccountOptions{PUE: 1.2, Work: pl.Work})
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.OperationalG, pl.CarbonG, 1e-9) || !near(r.EnergyJoules, pl.EnergyJoules, 1e-9) {
		t.Fatalf("accounting %v g / %v J, plan %v g / %v J", r.OperationalG, r.EnergyJoules, pl.CarbonG, pl.EnergyJoules)
	}
}
