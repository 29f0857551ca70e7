package unrelated

import (
	"math"
	"math/rand"
	"testing"
)

// TestGradientMatchesFiniteDifferences checks backward against numeric
// derivatives of the cross-entropy loss.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	n := newNetwork(rng, 5, 3)
	feats := make([][]float64, 4)
	for c := range feats {
		feats[c] = make([]float64, NumFeatures)
		for f := range feats[c] {
			feats[c][f] = rng.NormFloat64()
		}
	}
	target := []float64{0.1, 0.6, 0.3, 0}
	loss := func() float64 {
		s := n.Scores(feats)
		top := s[argmax(s)]
		sum := 0.0
		for _, v := range s {
			sum += math.Exp(v - top)
		}
		l := 0.0
		for c, v := range s {
			l -= target[c] * (v - top - math.Log(sum))
		}
		return l
	}
	g := shaped(5, 3)
	f := n.forward(feats)
	sum := 0.0
	for _, v := range f.scores {
		sum += math.Exp(v)
	}
	ds := make([]float64, len(feats))
	for c, v := range f.scores {
		ds[c] = math.Exp(v)/sum - target[c]
	}
	n.backward(f, ds, g)
	grads := g.params()
	for q, p := range n.params() {
		for k := range p {
			old := p[k]
			p[k] = old + 1e-6
			up := loss()
			p[k] = old - 1e-6
			down := loss()
			p[k] = old
			if num := (up - down) / 2e-6; math.Abs(num-grads[q][k]) > 1e-5 {
				t.Fatalf("param %d[%d]: backward %v, numeric %v", q, k, grads[q][k], num)
			}
		}
	}
}
