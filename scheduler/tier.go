package scheduler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goodsched/goodsched/placement"
)

// Tier is a job's service tier (Singularity's pricing tiers): what it is
// guaranteed once it has started. The framework enforces it for every
// policy, after the policy's targets, the way it pins non-preemptible
// jobs and keeps queues within their entitlements; RoundJob.Guarantee
// tells the policy beforehand.
type Tier int

// Tiers. The zero value, TierNone, guarantees nothing beyond what a job
// without a tier gets (today's behaviour).
const (
	// TierNone: no tier.
	TierNone Tier = iota
	// TierPremium: once started, never preempted, shrunk or moved (it is
	// pinned to its devices, like a non-preemptible job).
	TierPremium
	// TierStandard: once started, it keeps at least StandardShare of its
	// requested devices (Job.Requested, else MinReplicas, else 1; rounded
	// up, at least its minimum) in every round, so at least that share of
	// its requested device-time in every hour. A rigid one, or one at or
	// below that count, is pinned; an elastic one above it may shrink to
	// it but no further.
	TierStandard
	// TierBasic: best effort, preemptible to zero.
	TierBasic
)

// StandardShare is the share of its requested devices a started
// TierStandard job always keeps.
const StandardShare = 0.7

var tierNames = [...]string{"", "premium", "standard", "basic"}

// String returns the tier's name ("premium", "standard", "basic"; "" for
// TierNone).
func (t Tier) String() string {
	if t >= 0 && int(t) < len(tierNames) {
		return tierNames[t]
	}
	return fmt.Sprintf("tier(%d)", int(t))
}

// MarshalText writes the tier's name.
func (t Tier) MarshalText() ([]byte, error) {
	if t < 0 || int(t) >= len(tierNames) {
		return nil, fmt.Errorf("%w: %d", ErrUnknownTier, int(t))
	}
	return []byte(tierNames[t]), nil
}

// UnmarshalText reads a tier's name (ParseTier).
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseTier returns the tier of a name: "premium", "standard", "basic"
// or "" (TierNone), case-insensitive; anything else is ErrUnknownTier.
func ParseTier(s string) (Tier, error) {
	i := slices.Index(tierNames[:], strings.ToLower(strings.TrimSpace(s)))
	if i < 0 {
		return 0, fmt.Errorf("%w: %q (want premium, standard or basic)", ErrUnknownTier, s)
	}
	return Tier(i), nil
}

// TierReport is how one tier fared in a round.
type TierReport struct {
	// Tier is the tier.
	Tier Tier `json:"tier"`
	// Jobs and Running count the tier's jobs, and those that run after
	// the round.
	Jobs    int `json:"jobs"`
	Running int `json:"running"`
	// Preempted and Shrunk count its jobs that ran and were stopped, or
	// run on fewer devices than before.
	Preempted int `json:"preempted"`
	Shrunk    int `json:"shrunk"`
	// BelowGuarantee counts its started jobs that hold fewer devices than
	// their guarantee after the round (0 unless the framework's
	// enforcement failed, for example on unhealthy devices).
	BelowGuarantee int `json:"below_guarantee"`
}

// guarantee is the fewest devices a running job of this tier keeps (0
// for none).
func (j *jobInfo) guarantee() int {
	if j.curCount == 0 {
		return 0
	}
	switch j.Job.Tier {
	case TierPremium:
		return j.curCount
	case TierStandard:
		g := max(j.Min, ceilShare(j.Job.requested()))
		return min(g, j.curCount)
	}
	return 0
}

// ceilShare is ⌈StandardShare × n⌉, exact for small n (0.7×10 is 7).
func ceilShare(n int) int {
	return (n*7 + 9) / 10
}

// tierPinned reports whether the job's tier pins it to its devices: a
// running premium job, or a running standard job that may not shrink.
func (j *jobInfo) tierPinned() bool {
	switch j.Job.Tier {
	case TierPremium:
		return j.curCount > 0
	case TierStandard:
		return j.curCount > 0 && (j.rigid || j.mixedNow || j.guarantee() >= j.curCount)
	}
	return false
}

// enforceTiers raises a running standard job's target below its
// guarantee to the guarantee, on its current type (the tiers that pin a
// job are handled with the pinned jobs).
func (r *Round) enforceTiers(tg []Target) {
	for i := range r.jobs {
		j := &r.jobs[i]
		if j.Job.Tier != TierStandard || j.Pinned || j.Guarantee == 0 || tg[i].Count >= j.Guarantee {
			continue
		}
		tg[i].Type, tg[i].Count, tg[i].MaxNodes, tg[i].Shares = j.CurrentType, j.Guarantee, 0, nil
		tg[i].Reason, tg[i].Note = ReasonTier, "standard tier keeps "+strconv.Itoa(j.Guarantee)+" of its "+strconv.Itoa(j.curCount)+" devices"
	}
}

// tierReport is Plan.Tiers: nil when no job has a tier.
func (r *Round) tierReport(assigned [][]string) []TierReport {
	var rep []TierReport
	for i := range r.jobs {
		j := &r.jobs[i]
		if j.Job.Tier == TierNone {
			continue
		}
		k := slices.IndexFunc(rep, func(t TierReport) bool { return t.Tier == j.Job.Tier })
		if k < 0 {
			rep = append(rep, TierReport{Tier: j.Job.Tier})
			k = len(rep) - 1
		}
		t := &rep[k]
		t.Jobs++
		n := len(assigned[i])
		if n > 0 {
			t.Running++
		}
		switch a := placement.ActionOf(j.Current, assigned[i]); {
		case a == placement.Stop:
			t.Preempted++
		case j.curCount > 0 && n > 0 && n < j.curCount:
			t.Shrunk++
		}
		if n < j.Guarantee {
			t.BelowGuarantee++
		}
	}
	slices.SortFunc(rep, func(a, b TierReport) int { return int(a.Tier) - int(b.Tier) })
	return rep
}
