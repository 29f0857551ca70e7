package scheduler

import (
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// RoundPlacer realises targets with the placement package's round
// (placement.Placer.Round): jobs whose devices meet their target keep
// them, others shrink or grow in place where they can, the rest are
// re-placed largest first, NVLink- and interference-aware. A job whose
// new target cannot be met keeps the devices it held (reported as
// unplaced). It is the Scheduler's default Placer.
//
// Its zero value avoids interference, like Goodput's; a Scheduler
// configured without a Placer sets Placer.AllowInterference from
// Goodput.AllowInterference, otherwise set both.
// RoundPlacer is safe for concurrent use when its Placer's Filters and
// Scores are.
type RoundPlacer struct {
	// Placer is the placement package's placer (strategy, filters,
	// scores, interference avoidance); the zero value packs.
	Placer placement.Placer

	// cache, set by New, keeps the placement index of the last cluster
	// (shared with the Scheduler's validation), so that rounds on the
	// same cluster do not index it again.
	cache *clusterCache
}

var _ Placer = RoundPlacer{}

// Place implements Placer.
func (p RoundPlacer) Place(ctx context.Context, cluster accel.Cluster, current []placement.Assignment, targets []Target) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	st, err := p.state(cluster, current)
	if err != nil {
		return PlaceResult{}, err
	}
	return p.round(st, targets)
}

// placeOn is Place on cluster, already validated and indexed as c (a
// policy places several candidates a round; matching the cluster against
// the cache for each would cost as much as the round's validation).
func (p RoundPlacer) placeOn(ctx context.Context, c *clusterIndex, cluster *accel.Cluster, current []placement.Assignment, targets []Target) (PlaceResult, error) {
	if err := ctx.Err(); err != nil {
		return PlaceResult{}, err
	}
	st, err := stateOn(c, cluster, current)
	if err != nil {
		return PlaceResult{}, err
	}
	return p.round(st, targets)
}

// round runs the placement round for targets on st.
func (p RoundPlacer) round(st *placement.State, targets []Target) (PlaceResult, error) {
	pts := make([]placement.Target, 0, len(targets))
	for _, t := range targets {
		if t.Count > 0 {
			pts = append(pts, placement.Target{Job: t.Job, Type: t.Type, Count: t.Count, MaxNodes: t.MaxNodes})
		}
	}
	pl := p.Placer
	rr, err := pl.Round(st, pts)
	if err != nil {
		return PlaceResult{}, err
	}
	var res PlaceResult
	for _, d := range rr.Decisions {
		if d.Action != placement.Stop && len(d.Devices) > 0 {
			res.Assignments = append(res.Assignments, placement.Assignment{Job: d.Job, Devices: d.Devices})
		}
	}
	for _, u := range rr.Unplaced {
		why := u.Reason.Text
		if why == "" {
			why = u.Reason.Code.String()
		}
		res.Unplaced = append(res.Unplaced, Unplaced{Job: u.Target.Job, Reason: fmt.Sprintf("%s (%s)", why, u.Reason.Code)})
	}
	return res, nil
}

// state builds the placement state for current on cluster, on the cached
// index when there is one.
func (p RoundPlacer) state(cluster accel.Cluster, current []placement.Assignment) (*placement.State, error) {
	if p.cache != nil {
		if c, err := p.cache.index(&cluster); err == nil {
			return stateOn(c, &cluster, current)
		}
	}
	// No cache, or a cluster that does not index: the placement
	// package's own errors.
	return placement.NewState(cluster, current)
}

// stateOn builds the state on index c of cluster, or from scratch when the
// placement package does not index the cluster (its own errors).
func stateOn(c *clusterIndex, cluster *accel.Cluster, current []placement.Assignment) (*placement.State, error) {
	if _, err := c.placement(cluster); err != nil {
		return placement.NewState(*cluster, current)
	}
	return c.state(cluster, current)
}
