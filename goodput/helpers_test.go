package goodput

import (
	"cmp"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// models are the six Pollux profiles under testdata/pollux.
var models = []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}

func readProfile(t testing.TB, model, file string) []ProfileRow {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "pollux", model, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []ProfileRow
	if file == "placements.csv" {
		rows, err = ReadPlacements(f)
	} else {
		rows, err = ReadScalability(f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// aggregate averages rows per (nodes, replicas, local), as the Estimator
// and Pollux's agent do, sorted by key.
func aggregate(rows []ProfileRow) []Observation {
	type key struct{ n, k, m int }
	sum := map[key]*[3]float64{}
	for _, r := range rows {
		k := key{r.Nodes, r.Replicas, r.Local}
		s := sum[k]
		if s == nil {
			s = &[3]float64{}
			sum[k] = s
		}
		s[0] += r.StepSeconds - r.SyncSeconds
		s[1] += r.StepSeconds
		s[2]++
	}
	var out []Observation
	for k, s := range sum {
		out = append(out, Observation{Nodes: k.n, Replicas: k.k, Local: k.m, AccumSeconds: s[0] / s[2], OptimSeconds: s[1] / s[2]})
	}
	slices.SortFunc(out, func(a, b Observation) int {
		return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Local, b.Local))
	})
	return out
}

// every returns every step-th element.
func every[T any](xs []T, step int) []T {
	var out []T
	for i := 0; i < len(xs); i += step {
		out = append(out, xs[i])
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed+1)) }
