package provision

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/energy"
)

// bruteOracle enumerates every state of every node in every slot (3^(nodes
// × slots) schedules) with energy.NodePower.Change's transitions.
func bruteOracle(in OracleInput) float64 {
	np := in.Power
	if np == (energy.NodePower{}) {
		np = energy.DefaultNodePower
	}
	n, S := in.Nodes, len(in.Need)
	cells := n * S
	best := math.Inf(1)
	seq := make([]energy.NodeState, cells)
	var walk func(k int)
	walk = func(k int) {
		if k < cells {
			for _, s := range []energy.NodeState{energy.On, energy.Suspended, energy.Off} {
				seq[k] = s
				walk(k + 1)
			}
			return
		}
		g := 0.0
		for s := range S {
			on, joules := 0, 0.0
			for i := range n {
				cur := seq[s*n+i]
				prev := energy.On
				if s > 0 {
					prev = seq[(s-1)*n+i]
				}
				joules += np.Change(prev, cur).Joules
				if cur == energy.On {
					on++
					joules += in.OnWatts * in.Step.Seconds()
				} else {
					joules += np.Watts(cur) * in.Step.Seconds()
				}
			}
			if on < in.Need[s] {
				return
			}
			g += joules / 3.6e6 * in.IntensityGPerKWh[s]
		}
		best = min(best, g)
	}
	walk(0)
	return best
}

// TestOracleBruteForce: the DP's optimum equals brute force over every
// node's state in every slot, on 200 random instances of up to 3 nodes
// and 4 slots, with default and random node figures.
func TestOracleBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 1))
	for trial := range 200 {
		n, S := 1+rng.IntN(3), 1+rng.IntN(4)
		if n == 3 {
			S = min(S, 3)
		}
		in := OracleInput{Nodes: n, Step: time.Duration(1+rng.IntN(60)) * time.Minute, OnWatts: 10 + 100*rng.Float64()}
		for range S {
			in.Need = append(in.Need, rng.IntN(n+1))
			in.IntensityGPerKWh = append(in.IntensityGPerKWh, 50+500*rng.Float64())
		}
		if trial%2 == 1 {
			tr := func() energy.Transition {
				return energy.Transition{Duration: time.Second, Joules: 1e5 * rng.Float64()}
			}
			in.Power = energy.NodePower{SuspendedWatts: 30 * rng.Float64(), OffWatts: 10 * rng.Float64(), Suspend: tr(), Resume: tr(), Shutdown: tr(), Boot: tr()}
		}
		r, err := Oracle(in)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteOracle(in)
		if math.Abs(r.CarbonG-want) > 1e-9*max(1, want) {
			t.Fatalf("trial %d %+v: DP %v g, brute force %v g", trial, in, r.CarbonG, want)
		}
		for s := range S {
			if r.On[s] < in.Need[s] || r.On[s]+r.Suspended[s] > n {
				t.Fatalf("trial %d: slot %d: %d on, %d suspended for need %d of %d", trial, s, r.On[s], r.Suspended[s], in.Need[s], n)
			}
		}
	}
}

// TestOracleShape: a long idle stretch is spent off, a short gap
// suspended, and bad input fails with ErrInvalid.
func TestOracleShape(t *testing.T) {
	in := OracleInput{Nodes: 2, Step: time.Hour, OnWatts: 42,
		Need:             []int{2, 0, 2, 0, 0, 0, 0, 0, 2},
		IntensityGPerKWh: []float64{300, 300, 300, 300, 300, 300, 300, 300, 300}}
	r, err := Oracle(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Suspended[1] != 2 || r.On[3]+r.Suspended[3] != 0 || r.On[8] != 2 {
		t.Errorf("on %v, suspended %v", r.On, r.Suspended)
	}
	for _, bad := range []OracleInput{
		{Nodes: 0, Need: []int{0}, IntensityGPerKWh: []float64{1}, Step: time.Hour},
		{Nodes: MaxOracleNodes + 1, Need: []int{0}, IntensityGPerKWh: []float64{1}, Step: time.Hour},
		{Nodes: 1, Need: []int{2}, IntensityGPerKWh: []float64{1}, Step: time.Hour},
		{Nodes: 1, Need: []int{0, 0}, IntensityGPerKWh: []float64{1}, Step: time.Hour},
		{Nodes: 1, Need: []int{0}, IntensityGPerKWh: []float64{math.NaN()}, Step: time.Hour},
		{Nodes: 1, Need: []int{0}, IntensityGPerKWh: []float64{1}},
		{Nodes: 1, Need: []int{0}, IntensityGPerKWh: []float64{1}, Step: time.Hour, Power: energy.NodePower{OffWatts: -1}},
	} {
		if _, err := Oracle(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}
