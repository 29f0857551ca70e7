// Package goodsched decides how deep-learning jobs share a cluster of
// accelerators. It computes decisions; the host orchestrator applies them.
// There is no daemon, no database and no global state, and the decision
// path (Schedule, Optimize, Plan, Solve) starts no goroutines unless asked
// to. These start goroutines that end with them: accel/nvml's
// Inventory.Health watches NVML events until its context ends or Close is
// called, scheduler/sim's RunAll runs simulations in parallel until it
// returns, and a round of scheduler.Pollux with Parallel searches on a
// second goroutine, and fleet.Fleet.Schedule runs one cluster round per
// goroutine until it returns.
//
// The packages, from the bottom up (imports point down only; each does
// one job):
//
//   - accel: devices, nodes and clusters with canonical type keys
//     ("h100-80gb", "t4"); the Inventory and HealthSource interfaces; a
//     Static inventory from descriptions such as "6x4:t4,2x8:a100-40gb";
//     accel/nvml reads real machines through NVML; accel/topology models
//     the tree above the node (zone › block › rack › NVLink domain), with
//     importers for Kueue/KAI label levels, Volcano HyperNodes and Slurm.
//   - goodput: Pollux's goodput model (throughput × statistical
//     efficiency) per job and accelerator type, fitted online by an
//     Estimator from the job's own step times and gradient statistics;
//     batch-size and accumulation choice; speedup curves (Curve) that
//     cluster policies consume through the Speedup interface.
//   - carbon: carbon-intensity series and readers, forecasters, and plans
//     that scale delay-tolerant elastic work with the grid; emissions.
//     carbon/live fetches intensity from Electricity Maps, WattTime and the
//     Carbon Aware SDK behind carbon.Forecaster, with a fallback chain that
//     ends in carbon/carbondata's history.
//   - placement: which concrete devices serve each gang, aware of nodes,
//     NVLink islands, NUMA, interference between distributed jobs and
//     fragmentation; the cluster's Index (and its IndexCache), free
//     capacity filed by node; a Chooser's Round realises a set of targets
//     with the fewest moves, Consolidate the simplest packing. It holds
//     the Placer contract (Placer, PlaceInput, PlaceResult, Speeds) that
//     the scheduler calls each round, its two placers (RoundPlacer, the
//     default, and Packer), and the gangs of several types of W-jobs
//     (Share, CheckWorkers, GangPart).
//   - netpredict: a job's step time on a candidate node predicted from
//     the host's network and CPU telemetry (bandwidth, RTT,
//     retransmissions, load), learned online from the jobs' reports: a
//     placement score. It imports nothing of goodsched.
//   - energy: power models (PUE set once, on PowerModel) and the energy
//     and emissions of a round's busy and idle devices; it decides
//     nothing.
//   - scheduler/quota: the quota tree's arithmetic: entitlements per
//     queue and type, relaxation, enforcement with a victim order passed
//     in, the per-queue report.
//   - scheduler/tiers: the arithmetic of service tiers (premium, standard,
//     basic: what a started job keeps), which the scheduler enforces for
//     every policy (Job.Tier, RoundJob.Guarantee, Plan.Tiers).
//   - scheduler/pollux: Pollux's goodput search (the engine), below the
//     scheduler.
//   - scheduler: the per-round decision. The framework (Round, Scheduler,
//     Plan) validates the Input, hands every Policy the same exported
//     Round (Restrict narrows it, Carry keeps a policy's caches between
//     rounds, Entitlements gives the queues' bounds), realises the targets
//     through a placement.Placer and returns a Plan; it names no policy or
//     placer beyond its defaults (Pollux, its built-in policy, and
//     placement.RoundPlacer).
//     A job may keep a fixed number of logical workers (Job.Workers,
//     EasyScale's W-jobs): its world size and batch never change, and it
//     runs on 1 to W devices, of several types at once when its Speedup is
//     a goodput.WorkerModel.
//   - provision: which nodes stay on, suspended or off in each slot
//     (CarbonFlex's provisioning), from the carbon-aware plans of the
//     jobs in a scheduler.Input; energy charges each state and change.
//     Its Oracle is the exact least-carbon node states, and Learn fits the
//     Planner's thresholds to the oracle on past weeks.
//   - location: which region of several grids each delay-tolerant job
//     runs in (with a migration cost), and an exact min-cost-flow oracle;
//     it imports carbon only.
//   - Above the scheduler, policies and tools built on the exported Round:
//     scheduler/baselines (FIFO, Tiresias and Optimus), scheduler/genetic
//     (Pollux's genetic search, the reference Pollux is checked against),
//     scheduler/gavel (heterogeneity-aware fairness), scheduler/easyscale
//     (EasyScale's policy), scheduler/carbonaware (wraps any policy for a
//     grid that is not always clean), scheduler/sim (trace-driven
//     simulator; scheduler/sim/env plays it step by step for learned
//     policies, in Go or as JSON lines), scheduler/dmr (a malleable job's
//     expand, shrink or none against the last plan, DMR's protocol),
//     scheduler/learned (package unrelated's learned dispatching order as
//     a policy for rigid jobs on mixed types), scheduler/topoplace
//     (topology-aware Placers over accel/topology's tree: required and
//     preferred levels, slices, Balanced, least-loss placement, Kueue
//     BestFit and KAI binpack baselines, preemption that frees one
//     domain). scheduler/dispatch is a
//     separate request-level path (duplication-aware dispatch).
//   - variability: per-device, per-application-class slowdown factors
//     (PAL's measurements, k-means binned as PAL does) and an Estimator
//     that learns each device's current slowdown online from gangs' step
//     times; its snapshot is scheduler.Input.Speeds. It imports only
//     accel. variability/palplace has PAL's placers (PAL, PM-First,
//     Packed-Sticky) as placement.Placers.
//   - fleet: a fleet of clusters above the scheduler (Singularity):
//     each fleet round routes waiting jobs to clusters and migrates
//     running ones when the predicted gain beats the move's cost
//     (checkpoint, transfer at the inter-cluster bandwidth, restore, work
//     since the last checkpoint), then runs every cluster's Schedule,
//     one goroutine per cluster, with the plan of running them in turn.
//   - serving: inference services (model, accelerator type, GPUs per
//     replica, start-up lag, p90 TTFT and TPOT objectives), per (model, type)
//     performance profiles fitted online from replica reports, and
//     autoscalers that turn a service's metrics into replicas: Knative's KPA
//     and a Dynamo-style SLA planner re-implemented, and goodsched's own,
//     which forecasts load and provisions ahead of the start-up lag.
//     serving/sim replays a request trace at token level (continuous
//     batching on published Llama-2-70B timings); serving/servingdata embeds
//     the Azure LLM inference conversation trace. It imports only accel.
//   - unrelated: offline scheduling of jobs whose processing time differs
//     per machine (a throughput matrix), with initial occupations, job and
//     machine deadlines and weights (Hitzges & Sagnol, ICMLA'25): an exact
//     solver, the paper's dispatching rule and a learned policy trained by
//     imitating the solver. It imports nothing of goodsched.
//
// Where the next features go: heterogeneous gangs and fixed logical
// workers live in the scheduler contract (Job.Workers, Target.Shares),
// placement (Share, Assignment.Workers) and goodput (WorkerModel), their
// policy in
// scheduler/easyscale; per-device speed is a package below placement (measured and
// learned device factors, placement.Speeds) that placers and policies
// read through the Round; topology tiers extend accel (accel/topology, the tiers) and
// placement (scheduler/topoplace: required and preferred levels, the
// slowest tier spanned); serving is its own
// package (serving, beside the scheduler: replica autoscaling whose
// troughs elastic training fills); power provisioning its own package
// above energy, carbon and the scheduler's contract (provision); a step-wise
// simulator (one round per step, for learned policies) lives in
// scheduler/sim.
//
// One round, as the host drives it:
//
//  1. Snapshot the cluster (an accel.Inventory, or accel.ParseSpec).
//  2. Feed each training job's measured step times and gradient statistics
//     to its goodput.Estimator and take its Curve as the job's Speedup.
//  3. Call scheduler.Scheduler.Schedule with the cluster, the jobs, the
//     assignments in effect and the logical time.
//  4. Apply each Decision of the Plan (start, grow, shrink, move, preempt,
//     keep or queue; devices, batch size, accumulation steps, reason), and
//     pass Plan.Assignments as the next round's Current.
//
// The package example runs one such round.
package goodsched
