// Package provision decides how many nodes of a cluster stay on in each
// time slot, together with the carbon-aware plans of its delay-tolerant
// jobs (CarbonFlex's provisioning, Hanafy et al., arXiv 2505.18357): a
// node is worth keeping on only for the work its devices would do before
// the jobs' deadlines, and nodes that no plan needs are suspended or
// powered off (energy.NodeState) so that they stop drawing idle power.
//
// Planner plans every job as scheduler/carbonaware does (CarbonScaler's
// marginal greedy, carbon.Schedule, on the job's speedup curve from its
// remaining work to its deadline over the forecast; with Joint, as
// carbonaware.Policy.Joint, the jobs of over-booked slots again within
// their shares of them), adds up the devices each plan runs in each slot
// per device type (Demand), and turns that into nodes: enough on now for
// the plans and for every job that cannot wait, never fewer than hold a
// running job, and a node that is on stays on while the plans need it
// within Hold (hysteresis). A node going down is suspended, or powered
// off when the plans will not need it before the break-even time of the
// two (energy.NodePower's figures) or OffAfter.
//
// Oracle is the offline optimum for a demand known in advance: the least
// carbon states of identical nodes over a horizon (an exact DP over how
// many are on and suspended), a lower bound for any host that provisions
// the same demand (examples/simulate -oracle compares Planner with it).
// Rule is the Planner's two thresholds, Hold and OffAfter; Replay charges
// a Rule on a known demand as Oracle charges, and Learn fits a Rule to
// the oracle's node states on past demands (examples/simulate
// -learn-from).
//
// # Host contract
//
//  1. Each round, before scheduling, call Planner.Provision with the
//     round's scheduler.Input (every node's devices, the jobs, the
//     carbon forecast) and the state every node is in or moving into.
//  2. Start the transitions it asks for; offer the policy only the
//     devices of nodes that are on and done moving.
//  3. Schedule with scheduler/carbonaware.Policy, with the same Headroom,
//     DeadlineMargin and Joint (the plans agree).
//
// scheduler/sim does all three with sim.Config.Provision. The package
// imports accel, carbon, energy and scheduler only.
package provision
