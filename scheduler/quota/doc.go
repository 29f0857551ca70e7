// Package quota is the arithmetic of the quota tree that tenants share a
// cluster by: it validates the tree (NewTree), entitles each queue to
// devices per type from the cluster's capacity and the jobs' demand
// (Tree.Entitle), relaxes the entitlements when a policy's targets leave
// devices idle that a capped queue could use (Entitlements.Relax), keeps
// targets within them with a victim order the caller passes in
// (Entitlements.Enforce: a loss function for shrinking, an order for
// evicting, as Kueue's preemption takes an ordering), hands searches
// their caps and floors (Caps, Floors, Room) and reports each queue's
// standing (Report). It decides nothing about jobs beyond counts: the
// scheduler package feeds it a round and applies what it returns. It is
// pure: no clock, no goroutines, deterministic.
//
// # Entitlements
//
// Entitlements are computed per device type, top-down from the
// cluster's usable devices of the type (the implicit top cohort),
// independently for each type (weighted max-min per type, not DRF:
// quotas are per type, as Kueue's resource flavors, and a job runs on
// one type, so a vector of demands across types does not exist). At
// each cohort, given what the cohort received, its children get:
//
//  1. Their floor: what their running non-preemptible jobs hold and
//     their reserve (Nominal − LendingLimit, which nobody else may
//     borrow even when they have no demand); a cohort's floor is at
//     least its children's summed.
//  2. Their guarantee: min(Nominal, demand), at least the floor.
//  3. The rest, shared by weighted max-min of the devices beyond the
//     guarantee, each child up to its demand and to Nominal +
//     BorrowingLimit (progressive filling one device at a time, ties
//     by queue name). A child's weight here is Weight × the number of
//     its jobs with demand for the type: what is left over is shared
//     per job, as one shared pool would share it (which is what keeps
//     borrowing's job completion times near the shared pool's), and a
//     queue's Weight scales its jobs' shares. This is what borrowing
//     is: devices beyond Nominal come from siblings' unused quota.
//
// When a cohort cannot cover every guarantee (the cluster has fewer
// usable devices than the roots' Nominal sum, or others' pinned jobs
// hold them), floors come first, then the guarantees are shared by
// weighted max-min above the floors. Weighted max-min per type keeps
// each type's rule a simple, checkable water-filling; DRF's dominant
// share needs one demand vector per job, and our jobs pick one type.
//
// A leaf's demand for a type is, over its jobs that may use the type,
// the sum of their maximum counts (MaxReplicas, or the type's usable
// devices when unbounded; a rigid job's Requested); running
// non-preemptible jobs count on their current type only. A job that
// may use several types counts on each, so a queue may be entitled on
// several types at once. A cohort's demand is its children's, each
// capped by the child's Nominal + BorrowingLimit and raised to its
// reserve.
//
// # Relaxation
//
// When a policy's targets leave devices idle while a queue
// at its entitlement has more demand (jobs whose sizes did not fit
// what another queue was entitled to, jobs that could use several
// types counted on each), the policy is asked once more with relaxed
// entitlements: every queue keeps what it was given; a queue that did
// not use all of its entitlement keeps the rest only as reserves and,
// while it has unmet demand, as the guarantee still owed to it (never
// lent, so that it is there the moment the policy gives it out: the
// guarantee holds even when Pollux declines a growth that would not
// pay for its restart), and releases the rest; queues that shed
// devices get them back first from what is idle, then the idle
// devices are shared by the rules above. So a reclaim is undone when
// idle devices can serve the owner instead.
package quota
