// Package baselines holds the rigid and elastic baselines that papers
// compare against: FIFO with backfill, Tiresias's two-queue
// least-attained-service and Optimus's remaining-time greedy. Each is a
// scheduler.Policy built on the exported scheduler.Round alone, as a
// user's policy would be, and keeps within the round's queue
// entitlements (Round.Entitlements).
package baselines

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
)

// FIFO is the first-in-first-out baseline with backfill: running jobs keep
// their devices (it never preempts); waiting jobs, by priority (higher
// first) then submission time, start on their Requested count when it
// fits, on the allowed type where their Speedup is highest; a job that does
// not fit waits while later jobs that fit start (backfill, without
// reservations, so a large job can wait long).
//
// FIFO is a plain value: safe for concurrent use.
type FIFO struct{}

var _ scheduler.Policy = FIFO{}

// Allocate implements scheduler.Policy.
func (FIFO) Allocate(ctx context.Context, sr *scheduler.Round) ([]scheduler.Target, error) {
	r := newRound(sr)
	order := r.sorted(func(a, b *job) int {
		return cmp.Or(cmp.Compare(b.Job.Priority, a.Job.Priority), a.Job.Submitted.Compare(b.Job.Submitted), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	return r.rigidFill(ctx, order, true, func(pos int, j *job) string {
		return fmt.Sprintf("FIFO position %d", pos+1)
	})
}

// Tiresias is the two-queue discretised least-attained-service baseline
// (Tiresias, NSDI'19): a job whose attained service is below Threshold is
// in the high-priority queue, else in the low one; within a queue jobs go
// first-come first-served. Each round jobs are taken in that order and
// given their Requested count when it fits (lower-queue jobs are
// preempted to make room, later jobs backfill); running non-preemptible
// jobs keep their devices.
//
// Tiresias is a plain value: safe for concurrent use.
type Tiresias struct {
	// Threshold is the attained service (device-time, Job.Attained) that
	// demotes a job to the low-priority queue; 0 = 16 GPU-hours,
	// negative is an error.
	Threshold time.Duration
}

// Validate checks the threshold (scheduler.New calls it).
func (p Tiresias) Validate() error {
	if p.Threshold < 0 {
		return fmt.Errorf("%w: Tiresias.Threshold %v is negative", scheduler.ErrInvalid, p.Threshold)
	}
	return nil
}

var _ scheduler.Policy = Tiresias{}

// Allocate implements scheduler.Policy.
func (p Tiresias) Allocate(ctx context.Context, sr *scheduler.Round) ([]scheduler.Target, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	th := p.Threshold
	if th <= 0 {
		th = 16 * time.Hour
	}
	queue := func(j *job) int {
		if j.Job.Attained >= th {
			return 1
		}
		return 0
	}
	r := newRound(sr)
	order := r.sorted(func(a, b *job) int {
		return cmp.Or(cmp.Compare(queue(a), queue(b)), a.Job.Submitted.Compare(b.Job.Submitted), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	return r.rigidFill(ctx, order, false, func(pos int, j *job) string {
		return fmt.Sprintf("queue %d (attained %.1f GPU-h), position %d", queue(j), j.Job.Attained.Hours(), pos+1)
	})
}

// Optimus is the Optimus (EuroSys'18) baseline with an oracle for the
// remaining work: every job first gets its minimum (smallest remaining
// work first), on the allowed type where its Speedup is highest; then
// devices go one at a time to the job whose estimated remaining time
// RemainingWork/Speedup falls most. Jobs with unknown RemainingWork count
// as one unit of work. It charges no restart cost; running
// non-preemptible jobs keep their devices; rigid jobs get Requested.
//
// Optimus is a plain value: safe for concurrent use.
type Optimus struct{}

var _ scheduler.Policy = Optimus{}

// Allocate implements scheduler.Policy.
func (Optimus) Allocate(ctx context.Context, sr *scheduler.Round) ([]scheduler.Target, error) {
	work := func(j *job) float64 {
		if j.Job.RemainingWork > 0 {
			return j.Job.RemainingWork
		}
		return 1
	}
	r := newRound(sr)
	order := r.sorted(func(a, b *job) int {
		return cmp.Or(cmp.Compare(work(a), work(b)), a.Job.Submitted.Compare(b.Job.Submitted), cmp.Compare(a.Job.ID, b.Job.ID))
	})
	free := slices.Clone(r.cap)
	room := sr.Entitlements().Room()
	typ := make([]int, len(order))
	cnt := make([]int, len(order))
	for k, j := range order {
		typ[k] = -1
		if j.Pinned {
			typ[k], cnt[k] = j.cur, j.count
			free[j.cur] -= j.count
			room.Take(j.claim, j.cur, j.count)
		}
	}
	for k, j := range order {
		if j.Pinned {
			continue
		}
		t, err := r.bestType(j, j.Min, room.Limit(j.claim, free))
		if err != nil {
			return nil, err
		}
		if t >= 0 {
			typ[k], cnt[k] = t, j.Min
			free[t] -= j.Min
			room.Take(j.claim, t, j.Min)
		}
	}
	speed := func(k, c int) (float64, error) {
		return r.speedup(order[k], typ[k], c)
	}
	// At most one move per job is queued and moves order totally (gain,
	// then job): the pops do not depend on the heap's internal layout.
	h := make(gainHeap, 0, len(order))
	push := func(k int) error {
		j := order[k]
		if typ[k] < 0 || j.Pinned || j.rigid() || cnt[k] >= min(j.Max, r.cap[typ[k]]) {
			return nil
		}
		s0, err := speed(k, cnt[k])
		if err != nil {
			return err
		}
		s1, err := speed(k, cnt[k]+1)
		if err != nil {
			return err
		}
		if s1 <= s0 || s0 <= 0 {
			return nil
		}
		heap.Push(&h, gain{gain: work(j) * (1/s0 - 1/s1), job: k, t: typ[k], c: cnt[k] + 1})
		return nil
	}
	for k := range order {
		if err := push(k); err != nil {
			return nil, err
		}
	}
	for h.Len() > 0 {
		m := heap.Pop(&h).(gain)
		if free[m.t] < 1 || !room.Has(order[m.job].claim, m.t, 1) {
			continue
		}
		free[m.t]--
		room.Take(order[m.job].claim, m.t, 1)
		cnt[m.job] = m.c
		if err := push(m.job); err != nil {
			return nil, err
		}
	}
	out := make([]scheduler.Target, 0, len(order))
	for k, j := range order {
		tg := scheduler.Target{Job: j.Job.ID}
		switch {
		case j.Pinned:
			tg.Type, tg.Count, tg.Reason, tg.Note = r.types[typ[k]], cnt[k], scheduler.ReasonPinned, "non-preemptible"
		case typ[k] >= 0:
			s, _ := speed(k, cnt[k])
			tg.Type, tg.Count, tg.Reason = r.types[typ[k]], cnt[k], scheduler.ReasonObjective
			tg.Note = fmt.Sprintf("remaining time %.3g s at speedup %.2f", work(j)/max(s, 1e-12), s)
		default:
			tg.Reason, tg.Note = scheduler.ReasonNoCapacity, fmt.Sprintf("needs %d devices; smaller remaining work went first", j.Min)
		}
		out = append(out, tg)
	}
	slices.SortFunc(out, func(a, b scheduler.Target) int { return cmp.Compare(a.Job, b.Job) })
	return out, nil
}

// round is the Round as the baselines read it: device types by position
// (in Cluster().Types()), their usable capacity and each job's types and
// current allocation as positions.
type round struct {
	r       *scheduler.Round
	types   []accel.TypeKey
	cap     []int // usable devices per type
	perNode []int // most usable devices of a type on one node
	jobs    []job
}

// job is a RoundJob (in the slice Round.Jobs returned) with type
// positions.
type job struct {
	*scheduler.RoundJob
	claim   int   // position in Round.Jobs: the quota claim's number
	allowed []int // positions of Types
	cur     int   // position of CurrentType, −1 when not running
	count   int   // devices held now
}

// rigid reports whether the job runs on exactly its requested count.
func (j *job) rigid() bool { return j.Job.Kind == scheduler.Rigid }

// fits reports whether count is within the job's bounds.
func (j *job) fits(count int) bool { return count >= j.Min && count <= j.Max }

// requested returns the count a job asks for: Requested, else
// MinReplicas, else 1.
func (j *job) requested() int {
	switch {
	case j.Job.Requested > 0:
		return j.Job.Requested
	case j.Job.MinReplicas > 0:
		return j.Job.MinReplicas
	}
	return 1
}

func newRound(sr *scheduler.Round) *round {
	ix := sr.Cluster()
	r := &round{r: sr, types: ix.Types()}
	r.cap, r.perNode = make([]int, len(r.types)), make([]int, len(r.types))
	for t, tk := range r.types {
		r.cap[t], r.perNode[t], _ = ix.Usable(tk)
	}
	rj := sr.Jobs()
	r.jobs = make([]job, len(rj))
	n := 0
	for _, j := range rj {
		n += len(j.Types)
	}
	pos := make([]int, 0, n) // every job's allowed positions, end to end
	for i := range rj {
		j := &rj[i]
		k := len(pos)
		for _, tk := range j.Types {
			t, _ := ix.TypeIndex(tk)
			pos = append(pos, t)
		}
		r.jobs[i] = job{RoundJob: j, claim: i, allowed: pos[k:len(pos):len(pos)], cur: -1, count: len(j.Current)}
		if j.CurrentType != "" {
			r.jobs[i].cur, _ = ix.TypeIndex(j.CurrentType)
		}
	}
	return r
}

// sorted returns the jobs in the order cmpFn gives, pinned jobs first.
// cmpFn must order every pair of distinct jobs (end with their IDs).
func (r *round) sorted(cmpFn func(a, b *job) int) []*job {
	order := make([]*job, len(r.jobs))
	for i := range r.jobs {
		order[i] = &r.jobs[i]
	}
	slices.SortFunc(order, func(a, b *job) int {
		if a.Pinned != b.Pinned {
			if a.Pinned {
				return -1
			}
			return 1
		}
		return cmpFn(a, b)
	})
	return order
}

// speedup is j's Speedup on count devices of type t, packed on as few
// nodes as the type's nodes allow (what a consolidating placement
// achieves).
func (r *round) speedup(j *job, t, count int) (float64, error) {
	nodes := 0
	if count > 0 {
		d := max(r.perNode[t], 1)
		nodes = (count + d - 1) / d
	}
	return r.r.Speedup(j.Job.ID, r.types[t], nodes, count)
}

// bestType is the allowed type with room for count devices where j's
// Speedup is highest (the current type on ties), or −1.
func (r *round) bestType(j *job, count int, free []int) (int, error) {
	best, bestV := -1, 0.0
	for _, t := range j.allowed {
		if free[t] < count {
			continue
		}
		v, err := r.speedup(j, t, count)
		if err != nil {
			return -1, err
		}
		if best < 0 || v > bestV*(1+1e-12) || (t == j.cur && v >= bestV*(1-1e-12)) {
			best, bestV = t, v
		}
	}
	return best, nil
}

// rigidFill gives jobs, in order, their requested count where it fits.
// With keepRunning, running jobs keep their allocation before anyone else.
func (r *round) rigidFill(ctx context.Context, order []*job, keepRunning bool, why func(int, *job) string) ([]scheduler.Target, error) {
	free := slices.Clone(r.cap)
	room := r.r.Entitlements().Room()
	got := make(map[*job]scheduler.Target, len(order))
	for _, j := range order {
		// With queues, a running job is kept only within its queue's
		// entitlement (in this order: later jobs are reclaimed first).
		if j.Pinned || (keepRunning && j.count > 0 && j.fits(j.count) && slices.Contains(j.allowed, j.cur) && room.Has(j.claim, j.cur, j.count)) {
			free[j.cur] -= j.count
			room.Take(j.claim, j.cur, j.count)
			tg := scheduler.Target{Job: j.Job.ID, Type: r.types[j.cur], Count: j.count, Reason: scheduler.ReasonUnchanged, Note: "running jobs are not preempted"}
			if j.Pinned {
				tg.Reason, tg.Note = scheduler.ReasonPinned, "non-preemptible"
			}
			got[j] = tg
		}
	}
	out := make([]scheduler.Target, 0, len(order))
	for pos, j := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if t, ok := got[j]; ok {
			out = append(out, t)
			continue
		}
		want := j.requested()
		if !j.rigid() {
			want = min(max(want, j.Min), j.Max)
		}
		tg := scheduler.Target{Job: j.Job.ID}
		// Prefer staying where it runs.
		t := -1
		avail := room.Limit(j.claim, free)
		if j.count == want && j.cur >= 0 && slices.Contains(j.allowed, j.cur) && avail[j.cur] >= want {
			t = j.cur
		} else {
			var err error
			if t, err = r.bestType(j, want, avail); err != nil {
				return nil, err
			}
		}
		if t >= 0 {
			free[t] -= want
			room.Take(j.claim, t, want)
			tg.Type, tg.Count = r.types[t], want
			tg.Reason, tg.Note = scheduler.ReasonOrder, why(pos, j)
		} else {
			tg.Reason, tg.Note = scheduler.ReasonNoCapacity, fmt.Sprintf("%s; %d devices do not fit", why(pos, j), want)
		}
		out = append(out, tg)
	}
	slices.SortFunc(out, func(a, b scheduler.Target) int { return cmp.Compare(a.Job, b.Job) })
	return out, nil
}

// gain is Optimus's queued step: job (a position in its order) to c
// devices of type t, and how much remaining time that saves.
type gain struct {
	gain float64
	job  int
	t, c int
}

// gainHeap is a max-heap of steps by gain, ties by job.
type gainHeap []gain

func (h gainHeap) Len() int { return len(h) }
func (h gainHeap) Less(a, b int) bool {
	if h[a].gain != h[b].gain {
		return h[a].gain > h[b].gain
	}
	return h[a].job < h[b].job
}
func (h gainHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *gainHeap) Push(x any)   { *h = append(*h, x.(gain)) }
func (h *gainHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	*h = old[:len(old)-1]
	return m
}
