// Package placement chooses concrete devices for gangs of accelerators on a
// heterogeneous cluster, for one job (Chooser.Place) or for a whole
// scheduling round (Chooser.Round), quickly and deterministically.
//
// Free capacity is indexed per device type in a google/btree of nodes
// ordered by free devices, so best-fit and most-free queries cost
// O(log nodes), and State.Clone is O(1) copy-on-write so a policy can try
// what-ifs without copying the cluster.
//
// The host contract, in steps:
//
//  1. Take a snapshot of the cluster (accel.Inventory.Snapshot) and build
//     the usage with NewState(cluster, current), current being the
//     assignments in effect. Unhealthy devices are never offered. A host
//     that places round after round on the same cluster builds an Index
//     once (NewIndex) and calls Index.NewState each round instead.
//  2. For one gang, call Chooser.Place(state, Request): it returns the
//     devices (all of them or none) without changing the state; commit
//     with State.Assign, undo with State.Release. A request that does not
//     fit now returns a *NoFitError (errors.Is ErrNoFit) with a Reason;
//     a malformed one returns an error wrapping ErrInvalid, ErrUnknownType
//     or ErrImpossible.
//  3. For a round, call Chooser.Round(state, targets): it keeps jobs whose
//     devices meet their target, shrinks and grows jobs in place, re-places
//     the rest and starts new gangs largest first, and returns a Decision
//     per job (keep, grow, shrink, move, start, stop) plus the targets it
//     could not meet, each with a typed Reason. The input state is not
//     changed; RoundResult.State is the usage after the round.
//  4. On a device fault (accel.HealthEvent), call State.Fault or
//     State.ApplyHealth: it returns the jobs the device touches; the next
//     Round moves them off the faulty device.
//  5. Watch State.Fragmentation: per type, the largest gang still
//     placeable and the number of partly used nodes.
//
// A Chooser is a plain value built from a Strategy (Pack by default,
// BestFit, Spread), Filters and Scores in the spirit of the Kubernetes
// scheduling framework, and a switch for interference avoidance (at most
// one distributed job per node, as in Pollux; on by default). Within a
// node it takes the device set with the most NVLink connectivity. For a
// request that allows several device types, Request.Values ranks them
// (for example by the job's goodput per type) and the best type that fits
// wins.
//
// A scheduler places through the Placer interface: each round it hands
// a Placer the cluster's Index, the assignments in effect, a State and
// the round's Targets (PlaceInput) and gets assignments and typed
// Unplaced reasons back (PlaceResult). RoundPlacer (a Chooser's Round)
// is the default Placer and Packer (Consolidate) the simplest; other
// placers live in packages of their own (scheduler/topoplace,
// variability/palplace) and may read per-device speeds (Speeds).
package placement
