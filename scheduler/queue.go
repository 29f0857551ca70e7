package scheduler

import (
	"cmp"
	"context"
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// checkQueues validates the quota tree and the jobs' queues and returns
// the tree and each job's leaf; a nil tree when there are no queues.
func checkQueues(qs []quota.Queue, jobs []Job) (*quota.Tree, []int, error) {
	if len(qs) == 0 {
		for i := range jobs {
			if jobs[i].Queue != "" {
				return nil, nil, fmt.Errorf("%w: job %q: queue %q, but Input.Queues is empty", ErrInvalid, jobs[i].ID, jobs[i].Queue)
			}
		}
		return nil, nil, nil
	}
	t, err := quota.NewTree(qs)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	leaves := make([]int, len(jobs))
	for k := range jobs {
		j := &jobs[k]
		if j.Queue == "" {
			return nil, nil, fmt.Errorf("%w: job %q: no queue (Input.Queues is set, so every job names a leaf queue)", ErrInvalid, j.ID)
		}
		qi, leaf, ok := t.Find(j.Queue)
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%w: job %q: unknown queue %q", ErrInvalid, j.ID, j.Queue)
		case !leaf:
			return nil, nil, fmt.Errorf("%w: job %q: queue %q is a cohort (it has child queues); jobs sit in leaf queues", ErrInvalid, j.ID, j.Queue)
		}
		leaves[k] = qi
	}
	return t, leaves, nil
}

// entitle computes the round's entitlements (see "Queues and quotas" in
// doc.go) for the jobs, whose leaves checkQueues found.
func (r *Round) entitle(t *quota.Tree, leaves []int) *quota.Entitlements {
	claims := make([]quota.Claim, len(r.jobs))
	for k := range r.jobs {
		j := &r.jobs[k]
		claims[k] = quota.Claim{Queue: leaves[k], Types: j.allowed, Min: j.Min, Max: j.Max, Rigid: j.rigid,
			CurrentType: j.curType, CurrentCount: j.curCount, Pinned: j.Pinned}
	}
	return t.Entitle(r.types, r.cap, claims)
}

// grants returns the checked targets tg (index-aligned with r.jobs) as
// the quota package reads them.
func (r *Round) grants(tg []Target) []quota.Grant {
	gs := make([]quota.Grant, len(tg))
	for i := range tg {
		gs[i].Type = -1
		if tg[i].Count > 0 {
			gs[i].Type, _ = r.cluster.TypeIndex(tg[i].Type)
			gs[i].Count = tg[i].Count
		}
	}
	return gs
}

// allocate asks pol for targets and checks them; with queues it keeps
// them within the entitlements and, when that leaves devices idle that a
// queue at its entitlement could use, asks once more with the
// entitlements relaxed (quota.Entitlements.Relax).
func (r *Round) allocate(ctx context.Context, pol Policy) ([]Target, error) {
	for pass := 0; ; pass++ {
		targets, err := pol.Allocate(ctx, r)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tg, err := r.checkTargets(targets)
		if err != nil {
			return nil, err
		}
		if r.quota == nil {
			return tg, nil
		}
		if err := r.enforceQuota(tg); err != nil {
			return nil, err
		}
		if pass > 0 {
			return tg, nil
		}
		q2 := r.quota.Relax(r.grants(tg))
		if q2 == nil {
			return tg, nil
		}
		r.quota = q2
	}
}

// enforceQuota keeps the checked targets tg within their queues'
// entitlements (quota.Entitlements.Enforce): elastic jobs shrink first,
// by least weighted speedup lost per device freed; then whole jobs go,
// lowest priority, newest, then greatest ID first. Jobs that lose devices
// they held while their queue was over its entitlement are marked
// ReasonReclaimed; jobs held back by their queue's entitlement,
// ReasonQuota.
func (r *Round) enforceQuota(tg []Target) error {
	gs := r.grants(tg)
	loss := func(i, t, c int) (float64, error) {
		j := &r.jobs[i]
		s1, err := r.speedup(j, t, r.packedNodes(t, c), c)
		if err != nil {
			return 0, err
		}
		s0, err := r.speedup(j, t, r.packedNodes(t, c-1), c-1)
		return j.Weight * (s1 - s0), err
	}
	evictFirst := func(a, b int) int {
		ja, jb := r.jobs[a].Job, r.jobs[b].Job
		return cmp.Or(cmp.Compare(ja.Priority, jb.Priority), jb.Submitted.Compare(ja.Submitted), cmp.Compare(jb.ID, ja.ID))
	}
	effects, err := r.quota.Enforce(gs, loss, evictFirst)
	if err != nil {
		return err
	}
	for i, e := range effects {
		if gs[i].Count != tg[i].Count {
			tg[i].Count = gs[i].Count
			if tg[i].Count == 0 {
				tg[i].Type = ""
			}
		}
		switch e.Kind {
		case quota.Reclaimed:
			tg[i].Reason, tg[i].Note = ReasonReclaimed, e.Note
		case quota.Trimmed:
			tg[i].Reason, tg[i].Note = ReasonQuota, e.Note
		case quota.HeldBack:
			if tg[i].Reason != ReasonReclaimed {
				tg[i].Reason, tg[i].Note = ReasonQuota, e.Note
			}
		case quota.Annotated:
			tg[i].Note = joinNote(tg[i].Note, e.Note)
		}
	}
	return nil
}

// queueReport is Plan.Queues for the devices each job holds after the
// round (assigned, index-aligned with r.jobs).
func (r *Round) queueReport(assigned [][]string) []quota.Usage {
	if r.quota == nil {
		return nil
	}
	held := make([]quota.Grant, len(assigned))
	for i, devs := range assigned {
		held[i].Type = -1
		if len(devs) > 0 {
			d, _ := r.cluster.Ref(devs[0])
			held[i] = quota.Grant{Type: d.Type, Count: len(devs)}
		}
	}
	return r.quota.Report(held)
}

// Entitlements returns the round's quota entitlements, nil without
// Input.Queues: claims are numbered as Jobs, types as Cluster().Types().
// Policies that fill the cluster themselves can stay within them (Caps,
// Floors, Room); the Scheduler trims any target set that does not.
func (r *Round) Entitlements() *quota.Entitlements { return r.quota }

// Entitlement returns the most devices of type t the jobs of leaf queue
// queue may hold together this round (see "Queues and quotas" in the
// package documentation), and false when the round has no such leaf queue
// or type.
func (r *Round) Entitlement(queue string, t accel.TypeKey) (int, bool) {
	if r.quota == nil {
		return 0, false
	}
	i, leaf, ok := r.quota.Tree().Find(queue)
	ti, known := r.cluster.TypeIndex(t)
	if !ok || !known || !leaf {
		return 0, false
	}
	return r.quota.Entitled(i, ti), true
}

// joinNote appends more to a target's note.
func joinNote(note, more string) string {
	switch {
	case note == "":
		return more
	case more == "":
		return note
	}
	return note + "; " + more
}
