package scheduler

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// randomTree builds a random quota tree over the cluster's types: 2 to 4
// roots, some of them cohorts of 1 to 3 queues (one level deeper now and
// then), leaves with nominal quotas that together fit the cluster, and
// random borrowing and lending limits. It returns the tree and its leaves.
func randomTree(rng *rand.Rand, caps map[accel.TypeKey]int) ([]quota.Queue, []string) {
	var qs []quota.Queue
	var leaves []string
	var add func(name, parent string, depth int)
	add = func(name, parent string, depth int) {
		q := quota.Queue{Name: name, Parent: parent}
		if rng.IntN(3) == 0 {
			q.Weight = float64(1 + rng.IntN(3))
		}
		qs = append(qs, q)
		if depth < 2 && rng.IntN(3) == 0 {
			for k := range 1 + rng.IntN(3) {
				add(fmt.Sprintf("%s.%d", name, k), name, depth+1)
			}
			return
		}
		leaves = append(leaves, name)
	}
	for k := range 2 + rng.IntN(3) {
		add(fmt.Sprintf("q%d", k), "", 0)
	}
	// Leaves' nominal quotas: a random share of each type, summing to at
	// most its capacity; limits now and then.
	for _, tk := range slices.Sorted(maps.Keys(caps)) {
		left := caps[tk]
		for _, l := range leaves {
			if rng.IntN(4) == 0 {
				continue
			}
			n := rng.IntN(left/2 + 1)
			left -= n
			qt := quota.Quota{Type: tk, Nominal: n}
			if rng.IntN(3) == 0 {
				qt.BorrowingLimit = ip(rng.IntN(8))
			}
			if rng.IntN(3) == 0 {
				qt.LendingLimit = ip(rng.IntN(n + 1))
			}
			for i := range qs {
				if qs[i].Name == l {
					qs[i].Quotas = append(qs[i].Quotas, qt)
				}
			}
		}
	}
	return qs, leaves
}

// TestQueueProperties runs random quota trees through several rounds of
// arrivals and departures with every built-in policy and checks, each
// round: no device twice and no type over capacity, every queue within its
// entitlement and borrowing limit and every reserve (Nominal −
// LendingLimit) left to its owner, running non-preemptible jobs kept on
// their devices, the plan deterministic; and that a queue with demand of
// at least its nominal quota that is below it in round r is at or above
// it in round r+1, unless none of its waiting jobs fits in what is left
// of its guarantee or the placer could not realise them.
func TestQueueProperties(t *testing.T) {
	cl := testCluster(group{4, 8, "a100"}, group{4, 4, "t4"})
	caps := map[accel.TypeKey]int{"a100": 32, "t4": 16}
	policies := []struct {
		name string
		pol  Policy
	}{{"pollux", Pollux{}}, {"fifo", fifo}, {"tiresias", tiresiasAt(0)}, {"optimus", optimus}}
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for _, p := range policies {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", p.name, seed), func(t *testing.T) {
				checkQueueRounds(t, cl, caps, p.pol, uint64(seed))
			})
		}
	}
}

func checkQueueRounds(t *testing.T, cl accel.Cluster, caps map[accel.TypeKey]int, pol Policy, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 20))
	queues, leaves := randomTree(rng, caps)
	types := []accel.TypeKey{"a100", "t4"}
	in := Input{Cluster: cl, Queues: queues, Now: t0.Add(2 * time.Hour)}
	s, err := New(Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	arrive := func(q string) {
		j := Job{ID: fmt.Sprintf("j%03d", next), Queue: q, Kind: Elastic, Submitted: in.Now.Add(-time.Hour),
			Types: []accel.TypeKey{types[rng.IntN(2)]}, Weight: 1, Priority: rng.IntN(2),
			Speedup: fakeSpeedup{alpha: 0.05 + rng.Float64()*0.2, node: 0.9}}
		next++
		j.MinReplicas = 1 + rng.IntN(2)
		j.MaxReplicas = j.MinReplicas + rng.IntN(8)
		j.Requested = j.MinReplicas
		if rng.IntN(4) == 0 {
			j.Kind, j.Requested = Rigid, 1<<rng.IntN(3)
		}
		in.Jobs = append(in.Jobs, j)
	}
	// Round 0: a few queues busy; later rounds: bursts in idle queues.
	for range 6 {
		arrive(leaves[rng.IntN(max(1, len(leaves)/2))])
	}
	var prev Plan
	for round := range 8 {
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		again, err := New(Config{Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if p2, err := again.Schedule(context.Background(), in); err != nil || !reflect.DeepEqual(plan, p2) {
			t.Fatalf("round %d: plan not deterministic (err %v)", round, err)
		}
		_, isPollux := pol.(Pollux)
		checkQueuePlan(t, round, in, plan, caps, prev, isPollux)
		prev = plan
		// Apply, then: some jobs finish, non-preemptible now and then, bursts.
		in.Current = plan.Assignments()
		in.Now = in.Now.Add(5 * time.Minute)
		running := make(map[string]bool)
		for _, a := range in.Current {
			running[a.Job] = true
		}
		kept := in.Jobs[:0]
		for _, j := range in.Jobs {
			if running[j.ID] && rng.IntN(8) == 0 {
				continue // finished
			}
			if running[j.ID] && rng.IntN(10) == 0 {
				j.NonPreemptible = true
			}
			kept = append(kept, j)
		}
		in.Jobs = kept
		for range rng.IntN(5) {
			arrive(leaves[rng.IntN(len(leaves))])
		}
		// Keep only the assignments of jobs still in the system.
		cur := in.Current[:0]
		for _, a := range in.Current {
			if slices.ContainsFunc(in.Jobs, func(j Job) bool { return j.ID == a.Job }) {
				cur = append(cur, a)
			}
		}
		in.Current = cur
	}
}

// checkQueuePlan checks one round's plan (see TestQueueProperties); prev
// is the previous round's plan (zero in round 0); pollux adds the checks
// of Pollux's floors.
func checkQueuePlan(t *testing.T, round int, in Input, plan Plan, caps map[accel.TypeKey]int, prev Plan, pollux bool) {
	t.Helper()
	seen := make(map[string]bool)
	perType := make(map[accel.TypeKey]int)
	cur := make(map[string][]string)
	for _, a := range in.Current {
		cur[a.Job] = a.Devices
	}
	jobs := make(map[string]*Job)
	for i := range in.Jobs {
		jobs[in.Jobs[i].ID] = &in.Jobs[i]
	}
	pinnedUse := make(map[[2]string]int) // queue, type → devices of its pinned jobs
	for _, d := range plan.Decisions {
		for _, id := range d.Assignment.Devices {
			if seen[id] {
				t.Fatalf("round %d: device %s twice", round, id)
			}
			seen[id] = true
		}
		perType[d.Type] += d.To
		j := jobs[d.Job]
		if j.NonPreemptible && len(cur[d.Job]) > 0 {
			if d.Action != placement.Keep || !placement.SameDevices(d.Assignment.Devices, cur[d.Job]) {
				t.Fatalf("round %d: non-preemptible %s: %+v", round, d.Job, d)
			}
			pinnedUse[[2]string{j.Queue, string(d.Type)}] += d.To
		}
	}
	for tk, n := range perType {
		if tk != "" && n > caps[tk] {
			t.Fatalf("round %d: %d %s devices used, the cluster has %d", round, n, tk, caps[tk])
		}
	}
	mkq := func(name string, tk accel.TypeKey) (quota.Queue, quota.Quota) {
		for _, q := range in.Queues {
			if q.Name == name {
				for _, qt := range q.Quotas {
					if qt.Type == tk {
						return q, qt
					}
				}
				return q, quota.Quota{Type: tk}
			}
		}
		t.Fatalf("no queue %s", name)
		return quota.Queue{}, quota.Quota{}
	}
	leaf := func(name string) bool {
		return !slices.ContainsFunc(in.Queues, func(q quota.Queue) bool { return q.Parent == name })
	}
	reserved := make(map[accel.TypeKey]int)
	for _, u := range plan.Queues {
		_, qt := mkq(u.Queue, u.Type)
		pin := pinnedUse[[2]string{u.Queue, string(u.Type)}]
		if leaf(u.Queue) && u.Used > max(u.Entitled, pin) {
			t.Fatalf("round %d: queue %s uses %d %s, entitled to %d", round, u.Queue, u.Used, u.Type, u.Entitled)
		}
		if qt.BorrowingLimit != nil && u.Used > max(u.Guaranteed+*qt.BorrowingLimit, pin) {
			t.Fatalf("round %d: queue %s uses %d %s, beyond nominal %d + borrowing limit %d", round, u.Queue, u.Used, u.Type, u.Guaranteed, *qt.BorrowingLimit)
		}
		if qt.LendingLimit != nil {
			reserved[u.Type] += max(u.Guaranteed-*qt.LendingLimit-u.Used, 0)
		}
	}
	for tk, n := range perType {
		if tk != "" && n+reserved[tk] > caps[tk] {
			t.Fatalf("round %d: %d %s in use and %d reserved by lending limits, the cluster has %d", round, n, tk, reserved[tk], caps[tk])
		}
	}
	// Within its guarantee, a queue loses no devices to others (Pollux):
	// a queue that ends the round below min(nominal, demand) holds at
	// least what its jobs held when the round started, unless it started
	// over its entitlement (a reclaim may overshoot by a job's size).
	for _, u := range plan.Queues {
		if !pollux || !leaf(u.Queue) || u.Used >= min(u.Guaranteed, u.Used+u.Pending) {
			continue
		}
		held := 0
		for _, d := range plan.Decisions {
			if jobs[d.Job].Queue == u.Queue && d.FromType == u.Type {
				held += d.From
			}
		}
		if u.Used < held && held <= u.Entitled {
			for _, d := range plan.Decisions {
				if jobs[d.Job].Queue == u.Queue {
					t.Logf("%s: %s", d.Job, d.Message)
				}
			}
			t.Fatalf("round %d: queue %s lost %s devices below its guarantee: held %d, now %d (nominal %d, demand %d)", round, u.Queue, u.Type, held, u.Used, u.Guaranteed, u.Used+u.Pending)
		}
	}
	// Guarantees: below nominal with demand in the previous round → at or
	// above it now, unless excused.
	for _, u := range plan.Queues {
		if !leaf(u.Queue) || u.Guaranteed == 0 {
			continue
		}
		was := usage(prev, u.Queue, u.Type)
		if was.Queue == "" || was.Used >= was.Guaranteed || was.Used+was.Pending < was.Guaranteed ||
			u.Used >= u.Guaranteed || u.Used+u.Pending < u.Guaranteed {
			continue
		}
		if u.Entitled < u.Guaranteed {
			continue // others' non-preemptible jobs hold its guarantee (TestEntitlements covers the rule)
		}
		left := u.Guaranteed - u.Used
		unplaced := slices.ContainsFunc(plan.Decisions, func(d Decision) bool {
			switch d.Reason {
			case ReasonFragmented, ReasonInterference, ReasonTopology, ReasonUnplaceable, ReasonFiltered:
				return jobs[d.Job].Queue == u.Queue
			}
			return false
		})
		if unplaced {
			continue // the placer could not realise what the policy gave the queue
		}
		for _, d := range plan.Decisions {
			j := jobs[d.Job]
			if j.Queue != u.Queue || d.To > 0 || !slices.Contains(j.Types, u.Type) {
				continue
			}
			need := max(j.MinReplicas, 1)
			if j.Kind == Rigid {
				need = j.requested()
			}
			switch d.Reason {
			case ReasonFragmented, ReasonInterference, ReasonTopology, ReasonUnplaceable, ReasonFiltered:
				continue // the placer could not realise it
			}
			if need <= left {
				t.Fatalf("round %d: queue %s holds %d %s, below its nominal %d with demand %d since the last round; job %s (needs %d) waits: %s",
					round, u.Queue, u.Used, u.Type, u.Guaranteed, u.Used+u.Pending, d.Job, need, d.Message)
			}
		}
	}
}
