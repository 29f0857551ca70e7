package goodput

import (
	"errors"
	"math"
	"testing"
)

func TestNoiseScale(t *testing.T) {
	var ns NoiseScale
	if _, ok := ns.Stats(); ok {
		t.Error("stats before any update")
	}
	// With |g|² = G and tr Σ = V at batch M0, n gradients each at batch
	// M/n = M0·scale/n have E|gᵢ|² = G + V·n/scale and E|ḡ|² = G + V/scale.
	const G, V = 2.0, 30.0
	for _, tc := range []struct {
		n     int
		scale float64
	}{{2, 1}, {4, 2}, {16, 8}} {
		ns.Reset()
		n := float64(tc.n)
		if err := ns.Update(G+V*n/tc.scale, G+V/tc.scale, tc.n, tc.scale); err != nil {
			t.Fatal(err)
		}
		got, ok := ns.Stats()
		if !ok || !near(got.Sqr, G, 1e-12) || !near(got.Var, V, 1e-12) {
			t.Errorf("n=%d scale=%v: %+v, want {%v %v}", tc.n, tc.scale, got, G, V)
		}
	}
	// Bias-corrected EMA: two steps with θ = 0.5 weigh the second 2:1.
	ns = NoiseScale{Theta: 0.5}
	_ = ns.Update(G+2*V, G+V, 2, 1)     // sqr G, var V
	_ = ns.Update(G+2*4*V, G+4*V, 2, 1) // sqr G, var 4V
	got, _ := ns.Stats()
	if want := (0.5*0.5*V + 0.5*4*V) / 0.75; !near(got.Var, want, 1e-12) || !near(got.Sqr, G, 1e-12) {
		t.Errorf("EMA var %v, want %v", got.Var, want)
	}
	// Floors.
	ns.Reset()
	_ = ns.Update(1, 5, 2, 1) // negative var and a large sqr
	if got, _ := ns.Stats(); got.Var != 1e-6 {
		t.Errorf("var floor: %+v", got)
	}
	ns.Reset()
	_ = ns.Update(5, 0, 4, 1) // negative sqr
	if got, _ := ns.Stats(); got.Sqr != 0 {
		t.Errorf("sqr floor: %+v", got)
	}
	for i, args := range [][4]float64{{1, 1, 1, 1}, {math.NaN(), 1, 2, 1}, {1, -1, 2, 1}, {1, 1, 2, 0}, {1, math.Inf(1), 2, 1}} {
		if err := ns.Update(args[0], args[1], int(args[2]), args[3]); !errors.Is(err, ErrInvalidGrad) {
			t.Errorf("case %d: %v", i, err)
		}
	}
}
