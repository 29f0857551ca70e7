// Package topoplace places gangs on a cluster whose nodes sit in a
// topology tree (zone › block › rack › NVLink domain › node, an
// accel/topology.Topology): every Placer here is a placement.Placer.
//
// Each job may carry a Constraint: a Required level (every device of the
// gang in one domain of that level, or the gang waits), a Preferred level
// (as close to one domain of it as possible), Slices (groups of a given
// size each inside one domain of a level, inner sizes dividing outer
// ones, as Kueue's slice-required topology) and Balanced (spread evenly
// over as few sub-domains as possible, as Kueue's BalancedPlacement).
//
// Three strategies interpret the same constraints:
//
//   - LeastLoss (the default) minimises the throughput a gang is
//     predicted to lose by spanning a slow tier (Placer.Keep: the fraction
//     of throughput kept per level), then the capacity it strands (free
//     devices left in a domain too small for the round's multi-node
//     gangs), then leftover capacity (best fit), for every job, constrained
//     or not.
//   - BestFit is Kueue's Topology-Aware Scheduling BestFit: at the
//     required or preferred level the domain with the least free capacity
//     that fits (a preferred gang walks up the levels and finally spreads
//     over the outermost domains), then down the tree the domains with the
//     most free capacity first and a tight fit for the last one; a job
//     without a constraint gets Kueue's LeastFreeCapacity over nodes.
//   - Binpack is KAI's topology plugin with its bin-packing node order:
//     from the preferred level up to the required one, the first domain
//     (innermost level first, least free capacity first) that holds the
//     gang; inside it the preferred sub-domains with the most free
//     capacity first, and the fullest nodes first.
//
// BestFit and Binpack compute what Kueue's and KAI's code computes
// (kubernetes-sigs/kueue pkg/cache/scheduler/tas_flavor_snapshot.go at
// ff69552e79: findLevelWithFitDomains, sortedDomains, findBestFitDomain;
// NVIDIA/KAI-Scheduler pkg/scheduler/plugins/topology at 72de64fc:
// job_filtering.go's domain filter and sortTree, node_scoring.go), for one
// pod per device and without leaders or affinity tiers.
//
// A gang whose required level no domain can hold now is not an error: it
// is reported unplaced with placement.ReasonTopology and a text naming the
// level, and the round goes on. With Placer.Preempt set, such a gang may
// instead evict jobs of lower priority: the set of victims with the least
// total device-seconds whose freed devices, with the free ones, make one
// domain of the required level hold it (Victims, exact by dynamic
// programming over device counts).
//
// Host contract, per round:
//  1. Build the Placer once with the topology and a Constraint lookup per
//     job, and give it to scheduler.Config.Placer (or call Place).
//  2. Read the unplaced targets' reasons: ReasonTopology names the level.
//  3. Check a placement with Check (0 violations is this package's
//     promise, also after preemption and node failure), and measure
//     stranded capacity with Stranded.
//
// Placers are values safe for concurrent use; they cache the per-cluster
// structure on the placement.Index (Index.Derived).
package topoplace
