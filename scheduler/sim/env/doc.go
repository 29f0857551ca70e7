// Package env is a step-wise environment over the simulator
// (scheduler/sim) for learned scheduling policies, in the style of a gym
// environment: Reset(seed) starts an episode and returns the first
// Observation; Step(Action) applies one set of targets and returns the
// next Observation, a Reward and whether the episode is done. Serve speaks
// the same API as JSON lines, so that an agent in another language (a
// Python training loop) can play against it over stdin and stdout.
//
// # Episodes
//
// An episode is one simulation (sim.Run) of Config.Sim in which the agent
// is the policy: every time the simulator asks its policy for targets (a
// scheduling round; with a rigid Config.Sim.Kind, only the rounds where
// something changed, as the simulator's quiet-round rule says), the
// episode stops and the agent is shown the round as an Observation. The
// Action's targets are what the policy would have returned: the
// scheduler's placer realises them, the simulator applies the plan and
// advances its virtual clock to the next round that needs a decision.
// Playing baselines.FIFO through the environment therefore gives exactly
// the simulator's own FIFO result (the tests check that, field by field).
//
// With Config.Sim.Queues a round may ask twice (the scheduler's second
// pass, after relaxing the quotas): that is two steps, the second at the
// same virtual time.
//
// Reset(seed) plays Config.Workloads[seed mod len(Workloads)] (or
// Config.Sim.Jobs when Workloads is empty) with Config.Sim.Faults.Seed =
// seed. The simulator reads no wall clock and draws randomness only from
// that seed, so the same seed and the same actions give the same episode,
// byte for byte once marshalled.
//
// # Schema, version 1
//
// An Observation (JSON keys in brackets) carries Schema
// ("goodsched.env/v1"), the step number, the virtual time in seconds since
// the workload's start [time_s], and the round's view:
//
//   - types: per device type, its devices, how many are usable (healthy),
//     free (usable and held by no job), the most usable on one node
//     [per_node] and on how many nodes;
//   - devices: every device with its node, type, health and the job
//     holding it [job, absent when free], in cluster order;
//   - jobs: every arrived, unfinished job in workload order, with its kind
//     (rigid, elastic, adaptive), submission time and age in seconds,
//     priority, weight, the device-count bounds a target must respect
//     [min, max], the count it asks for [requested], attained device-seconds, restarts, whether it is pinned
//     (non-preemptible and running), what it holds now [type, count,
//     nodes] and its speedups: per allowed type, the predicted speedup on
//     from, from+1, … devices (up to the type's usable count), packed on
//     the fewest nodes.
//
// An Action is a list of targets {job, type, count, max_nodes}; a job
// left out gets no devices this round (it is preempted if it runs), as
// for any scheduler.Policy. A bad action (an unknown job, a job twice, a
// negative count, a type the cluster lacks or the job may not use, a
// count outside the job's [min, max], more devices of a type than are
// usable, alone or summed over the targets) fails that Step with
// ErrBadAction and leaves the episode as it was: the agent may retry.
//
// # Rewards
//
// Config.Reward picks one, paid by each Step for the virtual time between
// its decision and the next, in hours:
//
//   - RewardJCT (the default): minus the job-hours spent in the system
//     (waiting or running), so that an episode's return is minus the sum
//     of job completion times (unfinished jobs count until the episode
//     ends). Steps count jobs at round boundaries; the last step corrects
//     the sum to the simulator's exact figure.
//   - RewardMakespan: minus the elapsed hours, the last step corrected so
//     that the return is minus the simulator's makespan.
//   - RewardGoodput: the speedup-hours the jobs earn: the sum, over the
//     jobs holding devices at the next decision, of their speedup on
//     those devices times the hours since this decision (a job that
//     finishes between two decisions earns nothing for that stretch).
//
// # Host contract
//
//  1. Build a Config: Config.Sim as for sim.Run but without Policy,
//     Scheduler or Progress (the agent is the policy); optionally
//     Workloads and Reward. New validates it.
//  2. Reset(seed) for the first Observation; Step(Action) until Done.
//     Go agents may read the scheduler.Round behind the observation with
//     Round (a scheduler.Policy can act on it directly).
//  3. After Done, Result returns the simulator's sim.Result.
//  4. Close (or the next Reset) ends an unfinished episode and releases
//     the suspended simulation.
//
// An Env is not safe for concurrent use; distinct Envs are independent.
// The suspended simulation lives in a coroutine (iter.Pull): it runs only
// inside Reset and Step, never alongside the caller.
package env
