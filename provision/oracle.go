package provision

import (
	"cmp"
	"math"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
)

// OracleInput is a provisioning problem known in advance: identical nodes,
// how many of them must be on in each slot (for the work scheduled then)
// and the grid's intensity.
type OracleInput struct {
	// Nodes is the number of nodes (at most MaxOracleNodes).
	Nodes int
	// Need[s] is how many nodes must be on in slot s (0 ≤ Need[s] ≤
	// Nodes).
	Need []int
	// Step is the slot length.
	Step time.Duration
	// IntensityGPerKWh[s] is the grid's intensity in slot s.
	IntensityGPerKWh []float64
	// OnWatts is a node's draw while on, beyond what its busy devices
	// draw anyway (for example its devices' idle watts); it is charged
	// for every node on.
	OnWatts float64
	// Nodes' states and transitions (the zero value is
	// energy.DefaultNodePower), and the PUE (0 = 1).
	Power energy.NodePower
	PUE   float64
}

// MaxOracleNodes bounds OracleInput.Nodes: the DP's states are the
// (on, suspended) pairs, (n+1)(n+2)/2 of them, and each slot tries every
// pair of states.
const MaxOracleNodes = 24

// OracleResult is the optimal provisioning of an OracleInput.
type OracleResult struct {
	// On and Suspended are the nodes on and suspended in each slot (the
	// rest are off).
	On, Suspended []int
	// CarbonG is the emissions of the plan: nodes on (OnWatts), suspended
	// and off, and every transition (its energy at the intensity of the
	// slot it starts), PUE included; KWh its facility energy.
	CarbonG, KWh float64
	// Transitions counts node state changes.
	Transitions int
}

// Oracle returns the provisioning of least emissions for in: an exact DP
// over the slots whose state is how many nodes are on and how many
// suspended (identical nodes; all on before the first slot), with at
// least Need[s] on in slot s. Transitions happen at slot boundaries and
// take no time (their energy is charged), so for a host that applies them
// it is a lower bound: an offline optimum that knows the whole future.
// Bad input fails with ErrInvalid.
func Oracle(in OracleInput) (OracleResult, error) {
	if err := checkOracleInput(in, true); err != nil {
		return OracleResult{}, err
	}
	n := in.Nodes
	np := cmp.Or(in.Power, energy.DefaultNodePower)
	pue := cmp.Or(in.PUE, 1)
	// States: index of (a on, b suspended), a+b ≤ n.
	type st struct{ a, b int }
	var states []st
	for a := 0; a <= n; a++ {
		for b := 0; a+b <= n; b++ {
			states = append(states, st{a, b})
		}
	}
	// move[i][j]: least transition joules (and count) from state i to j.
	moveJ := make([][]float64, len(states))
	moveN := make([][]int, len(states))
	for i, x := range states {
		moveJ[i] = make([]float64, len(states))
		moveN[i] = make([]int, len(states))
		for j, y := range states {
			moveJ[i][j], moveN[i][j] = cheapestMove(x.a, x.b, n-x.a-x.b, y.a, y.b, n-y.a-y.b, np)
		}
	}
	sec := in.Step.Seconds()
	kwh := func(joules float64) float64 { return joules * pue / carbon.JoulesPerKWh }
	stateJ := func(x st) float64 {
		return sec * (float64(x.a)*in.OnWatts + float64(x.b)*np.SuspendedWatts + float64(n-x.a-x.b)*np.OffWatts)
	}
	inf := math.Inf(1)
	S := len(in.Need)
	cost := make([]float64, len(states))
	from := make([][]int32, S)
	start := len(states) - 1 // (n, 0): states are ordered by a, then b
	for i := range cost {
		cost[i] = inf
	}
	cost[start] = 0
	next := make([]float64, len(states))
	for s := range S {
		ci := in.IntensityGPerKWh[s]
		from[s] = make([]int32, len(states))
		for j, y := range states {
			next[j] = inf
			if y.a < in.Need[s] {
				continue
			}
			here := kwh(stateJ(y)) * ci
			for i := range states {
				if cost[i] == inf {
					continue
				}
				if c := cost[i] + kwh(moveJ[i][j])*ci + here; c < next[j] {
					next[j], from[s][j] = c, int32(i)
				}
			}
		}
		cost, next = next, cost
	}
	best := -1
	for j := range states {
		if cost[j] < inf && (best < 0 || cost[j] < cost[best]) {
			best = j
		}
	}
	r := OracleResult{On: make([]int, S), Suspended: make([]int, S), CarbonG: cost[best]}
	j := best
	for s := S - 1; s >= 0; s-- {
		i := int(from[s][j])
		r.On[s], r.Suspended[s] = states[j].a, states[j].b
		r.KWh += kwh(stateJ(states[j]) + moveJ[i][j])
		r.Transitions += moveN[i][j]
		j = i
	}
	return r, nil
}

// cheapestMove is the least transition energy (and the number of
// changes) taking a nodes on, b suspended and c off to x on, y suspended
// and z off, trying every number of resumes.
func cheapestMove(a, b, c, x, y, z int, np energy.NodePower) (float64, int) {
	bestJ, bestN := math.Inf(1), 0
	offToSusp := np.Boot.Joules + np.Suspend.Joules
	// r resumes (suspended → on); the rest of the nodes coming on boot.
	for r := 0; r <= min(b, x); r++ {
		// Of the on nodes a, k stay on; x − k − r must boot from off.
		for k := max(0, x-r-c); k <= min(a, x-r); k++ {
			boot := x - k - r
			if boot > c {
				continue
			}
			// Left: a−k on, b−r suspended, c−boot off, to fill y and z.
			onLeft, suspLeft, offLeft := a-k, b-r, c-boot
			// Suspended slots y: keep suspended ones first, then suspend
			// on ones, then off → suspended.
			keepS := min(suspLeft, y)
			susp := min(onLeft, y-keepS)
			offS := y - keepS - susp
			if offS > offLeft {
				continue
			}
			// The rest go off: on → off (shutdown), suspended → off
			// (shutdown); off stay off.
			shutOn := onLeft - susp
			shutSusp := suspLeft - keepS
			j := float64(r)*np.Resume.Joules + float64(boot)*np.Boot.Joules + float64(susp)*np.Suspend.Joules +
				float64(offS)*offToSusp + float64(shutOn+shutSusp)*np.Shutdown.Joules
			if j < bestJ {
				bestJ, bestN = j, r+boot+susp+offS+shutOn+shutSusp
			}
		}
	}
	return bestJ, bestN
}
