package netpredict

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRecoversLinearTruth: step times generated from the model's own form
// with known weights are predicted to within 1% on unseen telemetry (the
// oracle is the generating formula, not the fit).
func TestRecoversLinearTruth(t *testing.T) {
	w := [NumFeatures]float64{1, 1.4, 1.25, 0.9, 2, 0.003}
	rng := rand.New(rand.NewPCG(7, 8))
	draw := func() (Job, Telemetry) {
		return Job{ComputeSeconds: 0.05 + 0.5*rng.Float64(), CommBytes: 1e7 + 1e9*rng.Float64(), Rounds: rng.IntN(200)},
			Telemetry{BandwidthGbps: 10 + 190*rng.Float64(), RTT: time.Duration(rng.IntN(500)) * time.Microsecond,
				Retransmits: 0.1 * rng.Float64(), CPULoad: 0.8 * rng.Float64()}
	}
	truth := func(j Job, tl Telemetry) float64 {
		x, err := Features(j, tl)
		if err != nil {
			t.Fatal(err)
		}
		y := 0.0
		for i := range x {
			y += w[i] * x[i]
		}
		return y
	}
	var m Model
	if _, err := m.Predict(draw()); !errors.Is(err, ErrUntrained) {
		t.Fatalf("untrained: %v", err)
	}
	for k := 0; k < 200; k++ {
		j, tl := draw()
		if err := m.Observe(j, tl, time.Duration(truth(j, tl)*float64(time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 100; k++ {
		j, tl := draw()
		got, err := m.Predict(j, tl)
		if err != nil {
			t.Fatal(err)
		}
		if want := truth(j, tl); math.Abs(got.Seconds()-want) > 0.01*want {
			t.Fatalf("predicted %v, truth %.6f s", got, want)
		}
	}
	if m.Observations() != 200 {
		t.Fatalf("observations %d", m.Observations())
	}
	// Best picks the truly fastest of candidates that differ only in
	// bandwidth.
	j := Job{ComputeSeconds: 0.1, CommBytes: 5e8, Rounds: 10}
	cands := []Telemetry{{BandwidthGbps: 25}, {BandwidthGbps: 200}, {BandwidthGbps: 100}}
	if b, err := m.Best(j, cands); err != nil || b != 1 {
		t.Fatalf("Best = %d, %v", b, err)
	}
}

// TestBadInput: negative or non-finite telemetry, fractions ≥ 1, bad
// job shapes and step times are typed errors; nothing is recorded.
func TestBadInput(t *testing.T) {
	good := Telemetry{BandwidthGbps: 100, RTT: time.Millisecond}
	j := Job{ComputeSeconds: 1, CommBytes: 1e6, Rounds: 1}
	for _, tl := range []Telemetry{
		{BandwidthGbps: -1}, {BandwidthGbps: 0}, {BandwidthGbps: math.NaN()}, {BandwidthGbps: math.Inf(1)},
		{BandwidthGbps: 1, RTT: -time.Second}, {BandwidthGbps: 1, Retransmits: 1}, {BandwidthGbps: 1, Retransmits: math.NaN()},
		{BandwidthGbps: 1, CPULoad: -0.1}, {BandwidthGbps: 1, CPULoad: 1},
	} {
		var m Model
		if err := m.Observe(j, tl, time.Second); !errors.Is(err, ErrTelemetry) {
			t.Errorf("%+v: %v", tl, err)
		}
		if m.Observations() != 0 {
			t.Errorf("%+v recorded", tl)
		}
	}
	for _, bad := range []Job{{ComputeSeconds: -1}, {ComputeSeconds: math.NaN()}, {CommBytes: math.Inf(1)}, {Rounds: -1}} {
		var m Model
		if err := m.Observe(bad, good, time.Second); !errors.Is(err, ErrJob) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	var m Model
	if err := m.Observe(j, good, 0); !errors.Is(err, ErrJob) {
		t.Errorf("zero step: %v", err)
	}
	if _, err := m.Best(j, nil); !errors.Is(err, ErrTelemetry) {
		t.Errorf("no candidates: %v", err)
	}
}
