package placement

import (
	"context"
	"fmt"
)

// RoundPlacer realises targets with Chooser.Round: jobs whose devices meet
// their target keep them, others shrink or grow in place where they can,
// the rest are re-placed largest first, NVLink- and interference-aware.
// A job whose new target cannot be met keeps the devices it held
// (reported as unplaced, with the round's typed reason). It is the
// scheduler's default Placer. With speed data (PlaceInput.Speeds) it
// keeps much slower devices for what does not fit elsewhere and moves
// gangs off them (speedplace.go); without, it places as ever.
//
// Interference avoidance follows PlaceInput.AllowInterference (the
// scheduler's Config.AllowInterference, the one setting for it): a
// Chooser.AllowInterference set here fails Validate instead of being
// silently overridden.
// RoundPlacer is safe for concurrent use when its Chooser's Filters and
// Scores are.
type RoundPlacer struct {
	// Chooser is the strategy, filters and scores; the zero value packs.
	Chooser Chooser
}

var _ Placer = RoundPlacer{}

// Validate rejects a Chooser.AllowInterference (scheduler.New calls it).
func (p RoundPlacer) Validate() error {
	if p.Chooser.AllowInterference {
		return fmt.Errorf("%w: RoundPlacer.Chooser.AllowInterference: set Config.AllowInterference instead (the one setting the policy and the placer both read)", ErrInvalid)
	}
	return nil
}

// Place implements Placer.
func (p RoundPlacer) Place(ctx context.Context, in PlaceInput) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	st := in.State
	if st == nil {
		var err error
		if st, err = in.Cluster.NewState(in.Current); err != nil {
			return PlaceResult{}, err
		}
	}
	if in.Speeds != nil {
		return p.placeBySpeed(st, in) // speedplace.go
	}
	return p.round(st, in)
}

// Packer is a small consolidating Placer, Consolidate: jobs whose devices
// already meet their target keep them; every other gang is placed,
// largest first, on the fewest nodes of its type. It ignores links, NUMA
// and interference (PlaceInput.AllowInterference); it does not shrink or
// grow jobs in place.
//
// Packer is a minimal alternative to RoundPlacer (the default), for hosts
// that want the simplest realisation and for tests. It is stateless and
// safe for concurrent use.
type Packer struct{}

var (
	_ Placer    = Packer{}
	_ StateUser = Packer{}
)

// UsesState implements StateUser: Packer works from the index and the
// current assignments only.
func (Packer) UsesState() bool { return false }

// Place implements Placer with Consolidate.
func (Packer) Place(ctx context.Context, in PlaceInput) (PlaceResult, error) {
	assigned, unplaced, err := Consolidate(ctx, in.Cluster, in.Current, in.Targets)
	return PlaceResult{Assignments: assigned, Unplaced: unplaced}, err
}
