// Package pollux is the allocation engine behind scheduler.Pollux:
// Pollux's goodput objective (OSDI'21) with Sia's one (type, count)
// configuration per job on a heterogeneous cluster, searched fast.
//
// A Problem is one round: the cluster (snapshot and placement index), the
// jobs (weight, allowed types, bounds, current devices, age, restarts and
// a speedup function) and the objective's settings. New builds a Search;
// Solve returns candidate allocations, the best by the engine's objective
// first; Layout realises one on concrete devices the way the engine's
// packing model lays it out, and Realized scores any concrete assignment.
// Reference runs Pollux's genetic algorithm on the same objective, as an
// oracle.
//
// The engine models placement at node granularity (a bin is the usable
// devices of one type on one node), so that every speedup it uses is
// judged on the node count a packing placement gives. A marginal-gain
// greedy fills the cluster; an exchange local search moves devices from
// the jobs that lose least to those that gain most, within and across
// types; for up to 48 jobs a polish on replayed placements follows.
//
// The package knows nothing of package scheduler, which validates a
// round, builds the Problem and turns a Solution into targets.
package pollux
