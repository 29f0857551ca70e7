// Package tiers is the arithmetic of service tiers (Singularity's
// pricing tiers): what a started job of each tier is guaranteed, and the
// per-tier report of a round. The scheduler enforces the tiers for every
// policy through its Round (scheduler.Job.Tier, RoundJob.Guarantee,
// Plan.Tiers); this package decides nothing and imports nothing of
// goodsched.
package tiers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknown reports a Tier that is not one of the constants, or a name
// Parse does not know.
var ErrUnknown = errors.New("tiers: unknown tier")

// Tier is a job's service tier. The zero value, None, guarantees nothing.
type Tier int

// Tiers.
const (
	// None: no tier (a job without one).
	None Tier = iota
	// Premium: once started, never preempted, shrunk or moved.
	Premium
	// Standard: once started, it keeps at least StandardShare of its
	// requested devices (rounded up, at least its minimum), so at least
	// that share of its requested device-time in every hour.
	Standard
	// Basic: best effort, preemptible to zero.
	Basic
)

// StandardShare is the share of its requested devices a started Standard
// job always keeps.
const StandardShare = 0.7

var names = [...]string{"", "premium", "standard", "basic"}

// Valid reports whether t is one of the constants.
func (t Tier) Valid() bool { return t >= None && t <= Basic }

// String returns the tier's name ("premium", "standard", "basic"; "" for
// None).
func (t Tier) String() string {
	if t.Valid() {
		return names[t]
	}
	return fmt.Sprintf("tier(%d)", int(t))
}

// MarshalText writes the tier's name.
func (t Tier) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrUnknown, int(t))
	}
	return []byte(names[t]), nil
}

// UnmarshalText reads a tier's name (Parse).
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Parse returns the tier of a name: "premium", "standard", "basic", or ""
// for None; case and surrounding spaces are ignored. Anything else is
// ErrUnknown.
func Parse(s string) (Tier, error) {
	i := slices.Index(names[:], strings.ToLower(strings.TrimSpace(s)))
	if i < 0 {
		return None, fmt.Errorf("%w: %q (want premium, standard or basic)", ErrUnknown, s)
	}
	return Tier(i), nil
}

// Share is the share of its requested device-time a started job of the
// tier is guaranteed in every hour: 1 (Premium), StandardShare
// (Standard), 0 (Basic, None).
func (t Tier) Share() float64 {
	switch t {
	case Premium:
		return 1
	case Standard:
		return StandardShare
	}
	return 0
}

// Guarantee returns the fewest devices a job of tier t that holds cur
// devices keeps this round: cur for Premium; for Standard
// ⌈StandardShare × requested⌉, at least least (its minimum count), at
// most cur; 0 for the
// others and for a job that does not run (cur 0).
func Guarantee(t Tier, least, requested, cur int) int {
	if cur <= 0 {
		return 0
	}
	switch t {
	case Premium:
		return cur
	case Standard:
		return min(max(least, (requested*7+9)/10), cur) // ⌈0.7·requested⌉, exact
	}
	return 0
}

// Pins reports whether the tier pins a running job to its devices: a
// Premium job, or a Standard one that may not shrink to its guarantee (it
// is not resizable, or its guarantee is all it holds).
func Pins(t Tier, cur, guarantee int, resizable bool) bool {
	switch t {
	case Premium:
		return cur > 0
	case Standard:
		return cur > 0 && (!resizable || guarantee >= cur)
	}
	return false
}

// Report is how one tier fared in a round.
type Report struct {
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
	// their guarantee after the round.
	BelowGuarantee int `json:"below_guarantee"`
}

// Add counts into reports (kept sorted by tier) one job of tier t (None
// is not counted) that held from devices before the round and holds to
// after it, with the guarantee it had.
func Add(reports []Report, t Tier, from, to, guarantee int) []Report {
	if t == None {
		return reports
	}
	k := slices.IndexFunc(reports, func(r Report) bool { return r.Tier == t })
	if k < 0 {
		reports = append(reports, Report{Tier: t})
		slices.SortFunc(reports, func(a, b Report) int { return int(a.Tier) - int(b.Tier) })
		k = slices.IndexFunc(reports, func(r Report) bool { return r.Tier == t })
	}
	r := &reports[k]
	r.Jobs++
	switch {
	case to > 0:
		r.Running++
		if from > to {
			r.Shrunk++
		}
	case from > 0:
		r.Preempted++
	}
	if to < guarantee {
		r.BelowGuarantee++
	}
	return reports
}
