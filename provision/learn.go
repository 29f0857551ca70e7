package provision

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
)

// Rule is the Planner's node-count rule with its two learnable
// thresholds (CarbonFlex learns its runtime provisioning decisions from
// an offline oracle run on the cluster's history; these are what Learn
// fits):
//
//   - Hold: a node that is on stays on while the demand reaches it at
//     some slot within Hold from now (hysteresis; Planner.Hold);
//   - OffAfter: a node going down, or already suspended, is powered off
//     rather than suspended when the demand will not reach it within
//     OffAfter (Planner.OffAfter).
//
// Zero values read as the Planner's defaults (an hour; the break-even
// times of the node figures), so the zero Rule is the default Planner's.
type Rule struct {
	Hold, OffAfter time.Duration
}

// Planner returns p with the rule's thresholds.
func (r Rule) Planner(p Planner) Planner {
	p.Hold, p.OffAfter = r.Hold, r.OffAfter
	return p
}

// Replay applies the rule, slot by slot, to a demand known in the
// OracleInput (the demand of the slots ahead stands in for the plans'
// demand the Planner sees), with the nodes all on before the first slot:
// on is the previous slot's on-count clamped to [Need[s], the most Need
// within Hold]; nodes come up from suspended first, then from off; the
// node going down whose rank the demand next reaches after OffAfter (or
// never) is powered off, otherwise suspended, and a suspended node the
// demand will not reach within OffAfter is powered off. The result is
// charged as Oracle charges (states and transitions at each slot's
// intensity, PUE included), so Replay's CarbonG is never below Oracle's.
// Bad input fails with ErrInvalid.
func Replay(in OracleInput, r Rule) (OracleResult, error) {
	if err := checkOracleInput(in, false); err != nil {
		return OracleResult{}, err
	}
	if r.Hold < 0 || r.OffAfter < 0 {
		return OracleResult{}, fmt.Errorf("%w: Rule: Hold %v, OffAfter %v: want not negative", ErrInvalid, r.Hold, r.OffAfter)
	}
	return replay(in, r, newNext(in.Need, in.Nodes)), nil
}

// next[i][s] is the first slot ≥ s whose need exceeds i (len(need) if
// none): when a node of rank i is next needed.
type nextNeed [][]int32

func newNext(need []int, nodes int) nextNeed {
	S := len(need)
	nx := make(nextNeed, nodes)
	for i := range nodes {
		v := make([]int32, S+1)
		v[S] = int32(S)
		for s := S - 1; s >= 0; s-- {
			v[s] = v[s+1]
			if need[s] > i {
				v[s] = int32(s)
			}
		}
		nx[i] = v
	}
	return nx
}

func replay(in OracleInput, r Rule, nx nextNeed) OracleResult {
	np := cmp.Or(in.Power, energy.DefaultNodePower)
	pue := cmp.Or(in.PUE, 1)
	n, S := in.Nodes, len(in.Need)
	sec := in.Step.Seconds()
	hold := cmp.Or(r.Hold, time.Hour)
	holdSlots := max(1, int((hold+in.Step-1)/in.Step))
	offDown, offSusp := offAfter(np, r.OffAfter)
	slotsOf := func(d time.Duration) int { return int(min(d/in.Step, time.Duration(S+1))) }
	downSlots, suspSlots := slotsOf(offDown), slotsOf(offSusp)
	res := OracleResult{On: make([]int, S), Suspended: make([]int, S)}
	on, susp := n, 0
	for s := range S {
		need := in.Need[s]
		keep := 0 // the most need within Hold: ranks reached before s+holdSlots
		for keep < n && int(nx[keep][s]) < min(S, s+holdSlots) {
			keep++
		}
		target := min(max(on, need), max(keep, need))
		joules := 0.0
		// Ranks (as the Planner's): target on; then the nodes going
		// down, then the suspended ones, then the off ones.
		up := max(target-on, 0)
		resume := min(up, susp)
		boot := up - resume
		joules += float64(resume)*np.Resume.Joules + float64(boot)*np.Boot.Joules
		susp -= resume
		newSusp, moved := 0, resume+boot+max(on-target, 0)
		rank := target
		down := max(on-target, 0)
		for range down { // on → suspended or off
			if far(nx, rank, s, downSlots) {
				joules += np.Shutdown.Joules
			} else {
				joules += np.Suspend.Joules
				newSusp++
			}
			rank++
		}
		for range susp { // suspended → off when not needed soon
			if far(nx, rank, s, suspSlots) {
				joules += np.Shutdown.Joules
				moved++
			} else {
				newSusp++
			}
			rank++
		}
		res.Transitions += moved
		on, susp = target, newSusp
		res.On[s], res.Suspended[s] = on, susp
		joules += sec * (float64(on)*in.OnWatts + float64(susp)*np.SuspendedWatts + float64(n-on-susp)*np.OffWatts)
		kwh := joules * pue / carbon.JoulesPerKWh
		res.KWh += kwh
		res.CarbonG += kwh * in.IntensityGPerKWh[s]
	}
	return res
}

// far reports whether the node of rank i is not needed within off slots
// after slot s (the Planner looks from the next slot on).
func far(nx nextNeed, i, s, off int) bool {
	if i >= len(nx) {
		return true
	}
	v := nx[i]
	S := len(v) - 1
	k := int(v[s+1])
	return k == S || k-s > off
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// LearnOptions are the candidate thresholds Learn searches (nil: the
// defaults, DefaultHolds and DefaultOffAfters).
type LearnOptions struct {
	Holds, OffAfters []time.Duration
}

// The default candidates: from one minute (no hysteresis at a
// one-minute step) to two hours, and from five minutes to a day.
var (
	DefaultHolds     = []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour, 90 * time.Minute, 2 * time.Hour}
	DefaultOffAfters = []time.Duration{5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 90 * time.Minute, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
)

// Learned is what Learn fitted, with how well it fits its training
// traces.
type Learned struct {
	Rule
	// Disagreement is the fitted rule's mean, over every training slot,
	// of |on − the oracle's on| + |suspended − the oracle's suspended|
	// (nodes).
	Disagreement float64
	// ReplayCarbonG is the fitted rule replayed on the training traces,
	// OracleCarbonG the oracle on them (sums over the traces).
	ReplayCarbonG, OracleCarbonG float64
}

// Learn fits the Rule's thresholds to the oracle's decisions on training
// traces (CarbonFlex's approach: learn runtime provisioning from an
// offline optimum on the cluster's history). For each trace it runs
// Oracle, then replays every candidate (Hold, OffAfter) pair
// (opts, or the defaults) and keeps the pair whose node states differ
// least from the oracle's, summed over every slot of every trace; ties
// go to the less carbon in replay, then to the earlier candidate (Holds
// outer, OffAfters inner, in the order given). The fit is exhaustive and
// deterministic. Bad traces or candidates fail with ErrInvalid.
func Learn(train []OracleInput, opts LearnOptions) (Learned, error) {
	if len(train) == 0 {
		return Learned{}, fmt.Errorf("%w: Learn: no training traces", ErrInvalid)
	}
	holds := cmpOr(opts.Holds, DefaultHolds)
	offs := cmpOr(opts.OffAfters, DefaultOffAfters)
	for _, d := range slices.Concat(holds, offs) {
		if d <= 0 {
			return Learned{}, fmt.Errorf("%w: LearnOptions: candidate %v is not positive", ErrInvalid, d)
		}
	}
	type fit struct {
		diff, carbon float64
	}
	fits := make([]fit, len(holds)*len(offs))
	var out Learned
	slots := 0
	for k, in := range train {
		orc, err := Oracle(in)
		if err != nil {
			return Learned{}, fmt.Errorf("Learn: trace %d: %w", k, err)
		}
		out.OracleCarbonG += orc.CarbonG
		slots += len(in.Need)
		nx := newNext(in.Need, in.Nodes)
		for h, hold := range holds {
			for o, off := range offs {
				r := replay(in, Rule{Hold: hold, OffAfter: off}, nx)
				f := &fits[h*len(offs)+o]
				f.carbon += r.CarbonG
				for s := range r.On {
					f.diff += float64(abs(r.On[s]-orc.On[s]) + abs(r.Suspended[s]-orc.Suspended[s]))
				}
			}
		}
	}
	best := 0
	for i, f := range fits {
		if b := fits[best]; f.diff < b.diff || (f.diff == b.diff && f.carbon < b.carbon) {
			best = i
		}
	}
	out.Rule = Rule{Hold: holds[best/len(offs)], OffAfter: offs[best%len(offs)]}
	out.Disagreement = fits[best].diff / float64(slots)
	out.ReplayCarbonG = fits[best].carbon
	return out, nil
}

func cmpOr[T any](a, b []T) []T {
	if len(a) > 0 {
		return a
	}
	return b
}

// checkOracleInput checks in as Oracle does (bounding Nodes only when
// bounded).
func checkOracleInput(in OracleInput, bounded bool) error {
	n := in.Nodes
	if n < 1 || (bounded && n > MaxOracleNodes) {
		return fmt.Errorf("%w: OracleInput.Nodes %d: want 1..%d", ErrInvalid, n, MaxOracleNodes)
	}
	if len(in.Need) != len(in.IntensityGPerKWh) || len(in.Need) == 0 {
		return fmt.Errorf("%w: OracleInput: %d needs for %d intensities (want as many, at least one)", ErrInvalid, len(in.Need), len(in.IntensityGPerKWh))
	}
	if in.Step <= 0 || !(in.OnWatts >= 0) || math.IsInf(in.OnWatts, 0) || (in.PUE != 0 && !(in.PUE >= 1)) || math.IsInf(in.PUE, 0) {
		return fmt.Errorf("%w: OracleInput: Step %v, OnWatts %v, PUE %v", ErrInvalid, in.Step, in.OnWatts, in.PUE)
	}
	if err := in.Power.Validate(); err != nil {
		return fmt.Errorf("%w: OracleInput.Power: %w", ErrInvalid, err)
	}
	for s, k := range in.Need {
		if k < 0 || k > n {
			return fmt.Errorf("%w: OracleInput.Need[%d] = %d: want 0..%d", ErrInvalid, s, k, n)
		}
		if c := in.IntensityGPerKWh[s]; !(c >= 0) || math.IsInf(c, 0) {
			return fmt.Errorf("%w: OracleInput.IntensityGPerKWh[%d] = %v", ErrInvalid, s, c)
		}
	}
	return nil
}
