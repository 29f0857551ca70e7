package goodput

import (
	"math"
	"testing"
)

// TestGradientMatchesFiniteDifferences checks the analytic gradient of the
// objective against central differences, for both forms, on real data
// covering every sync term.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	obs := every(aggregate(readProfile(t, "yolov3", "placements.csv")), 5)
	for _, form := range []Form{FormPollux, FormAllReduce} {
		t.Run(form.String(), func(t *testing.T) {
			pr := &problem{form: form}
			for _, o := range obs {
				pr.addObs(form == FormAllReduce, o)
			}
			for i := range nParams {
				pr.fixed[i] = MinCoef
				pr.free = append(pr.free, i)
			}
			pr.ratios = [][2]int{{iBetaN, iAlphaN}, {iBetaR, iAlphaR}, {iBetaT, iAlphaT}, {iDeltaT, iAlphaT}}
			pr.allocScratch()
			u := make([]float64, nParams)
			start := [nParams]float64{0.2, 0.02, 0.05, 0.01, 0.4, 0.03, 0.3, 0.05, 0.02, 2.5}
			pr.toU(start, u)
			g := make([]float64, nParams)
			pr.eval(u, g)
			for j := range u {
				const h = 1e-6
				up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
				up[j] += h
				dn[j] -= h
				fd := (pr.eval(up, nil) - pr.eval(dn, nil)) / (2 * h)
				if math.Abs(fd-g[j]) > 1e-6+1e-4*math.Abs(fd) {
					t.Errorf("%s: analytic %.8g, finite difference %.8g", paramNames[pr.free[j]], g[j], fd)
				}
			}
		})
	}
}
