package unrelated

import (
	"bytes"
	"errors"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func TestShippedBeatsRuleOnHeldOutInstances(t *testing.T) {
	net, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	var gapL, gapR float64
	const N = 60
	for k := 1; k <= N; k++ {
		in := Random(rand.New(rand.NewSource(int64(k))), 8, 4)
		_, opt, err := Optimal(in)
		if err != nil {
			t.Fatal(err)
		}
		_, l, err := Run(in, Learned{Network: net})
		if err != nil {
			t.Fatal(err)
		}
		_, r, _ := Run(in, Rule{})
		if l.Total() < opt.Total()-1e-9 {
			t.Fatalf("instance %d: learned %v below the optimum %v", k, l.Total(), opt.Total())
		}
		gapL += l.Total()/opt.Total() - 1
		gapR += r.Total()/opt.Total() - 1
	}
	if gapL >= gapR {
		t.Fatalf("mean gap learned %.3f, rule %.3f: the network does not beat the rule", gapL/N, gapR/N)
	}
}

func TestTrainIsReproducible(t *testing.T) {
	cfg := TrainConfig{Seed: 4, Instances: 12, Rounds: 1, Epochs: 2, Hidden: 4, MaxJobs: 5, MaxMachines: 3}
	a, ra, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, rb, _ := Train(cfg)
	if !reflect.DeepEqual(a, b) || ra != rb {
		t.Fatal("two trainings with one config differ")
	}
	var buf bytes.Buffer
	if err := a.Write(&buf); err != nil {
		t.Fatal(err)
	}
	c, err := ReadNetwork(&buf)
	if err != nil || !reflect.DeepEqual(a, c) {
		t.Fatalf("round trip: %v", err)
	}
	if _, _, err := Train(TrainConfig{MaxJobs: 40}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized training accepted: %v", err)
	}
}

func TestReadNetworkRejects(t *testing.T) {
	for _, s := range []string{
		`{"feature_version": 99, "hidden": 1, "w1": [[0]], "b1": [0], "w2": [0]}`,
		`{"feature_version": 1, "hidden": 2, "w1": [[0]], "b1": [0], "w2": [0]}`,
		`{"feature_version": 1, "hidden": 1, "w1": [[0, 1]], "b1": [0], "w2": [0]}`,
		`not json`,
	} {
		if _, err := ReadNetwork(strings.NewReader(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
}

func TestCandidatesFeasible(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	in := Random(rng, 6, 3)
	s, _ := Start(in)
	for !s.Done() {
		acts, feats := Candidates(s)
		if len(acts) != s.PendingCount()+int(b2f(s.CanRetire())) || len(feats) != len(acts) {
			t.Fatalf("%d candidates for %d pending", len(acts), s.PendingCount())
		}
		for _, x := range feats {
			if len(x) != NumFeatures {
				t.Fatalf("%d features", len(x))
			}
		}
		if err := s.Step(acts[rng.Intn(len(acts))]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMarginalCostMatchesEvaluate checks the marginal cost the features
// read against Evaluate: appending job j to machine k at the start adds
// exactly marginalCost to the cost of the instance's initial occupations.
func TestMarginalCostMatchesEvaluate(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		in := Random(rand.New(rand.NewSource(seed)), 4, 3)
		s, err := Start(in)
		if err != nil {
			t.Fatal(err)
		}
		makespan := 0.0
		for _, r := range s.Ready {
			makespan = max(makespan, r)
		}
		empty := Instance{Machines: in.Machines}
		base, err := empty.Evaluate(Schedule{Sequences: make([][]int, len(in.Machines))})
		if err != nil {
			t.Fatal(err)
		}
		for j, job := range in.Jobs {
			one := Instance{Machines: in.Machines, Jobs: []Job{job}}
			for k := range in.Machines {
				seqs := make([][]int, len(in.Machines))
				seqs[k] = []int{0}
				c, err := one.Evaluate(Schedule{Sequences: seqs})
				if err != nil {
					t.Fatal(err)
				}
				want := c.Total() - base.Total()
				if got := marginalCost(s, j, k, makespan); math.Abs(got-want) > 1e-9 {
					t.Fatalf("seed %d, job %d on machine %d: marginal cost %v, Evaluate says %v", seed, j, k, got, want)
				}
			}
		}
	}
}
