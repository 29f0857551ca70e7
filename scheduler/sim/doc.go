// Package sim is goodsched's trace-driven simulator: it replays a workload
// of deep-learning jobs on a simulated accelerator cluster through any
// scheduler.Policy, on a virtual clock, with the jobs' speed taken from
// measured profiles, and reports job completion times, makespan,
// GPU-hours, utilisation, restarts and finish-time fairness. It follows the
// mechanics of the Pollux (OSDI'21) simulator, so that its baselines land
// on the published numbers, and it is how users compare policies on their
// own traces before deploying one.
//
// # Ground truth
//
// An Application is a model's measurements (LoadProfiles reads the Pollux
// layout, and Sia's per-type placements-<type>.csv files): the time of one
// step and its all-reduce part for every placement (GPUs per node) and
// per-device batch, interpolated linearly in the batch within a measured
// placement and linearly across (nodes, replicas) shapes otherwise; and
// per-epoch gradient statistics and progress from full training runs at
// several batch sizes, interpolated by batch size. A job advances by
// gain / T_iter scale-invariant iterations per second, where gain is the
// statistical efficiency of its batch, and completes when its progress
// reaches the model's target (the final progress of the validation runs).
// Every (re)allocation stalls the job for its model's restart delay (30 s
// by default); a plan that lists a job's devices in another order, or gives
// it other devices of its type on the same nodes, as many per node, is no
// restart (the Pollux simulator tracks GPUs per node only);
// distributed jobs sharing a node may be slowed down
// (Config.InterferenceSlowdown); nodes may fail (Config.Faults), and affected jobs
// restart from their last checkpoint.
//
// The policy never sees the ground truth. Adaptive jobs report what a real
// job's data loader would: the step and sync time of each configuration
// they run and their gradient statistics, to their own
// goodput.Estimator, which fits online; the policy gets the Estimator's
// speedup curve, rebuilt only when the job reported something new. Only
// the Optimus+Oracle baseline (Config.Oracle) is given ground-truth step
// times and remaining work, as published.
//
// # Host contract
//
//  1. Load applications with LoadProfiles (polluxdata.FS embeds the Pollux
//     profiles and workloads) and a workload with LoadWorkloads or
//     ReadWorkload.
//  2. Build a Config: the cluster (accel.ParseSpec("16x4:t4")), the jobs,
//     the applications, a Policy value (a fresh one per run if it keeps
//     state) and the scheduler.Kind as which jobs are presented to it
//     (Config.Kind): scheduler.Rigid (the workload's count and batch: FIFO,
//     Tiresias; the zero value, so a Config that sets no Kind presents
//     every job as rigid), scheduler.Elastic (fixed batch, any count:
//     Optimus) or scheduler.Adaptive (Pollux: the policy picks counts, the
//     job its batch; set it for the goodput policy).
//  3. Call Run, or RunAll for independent simulations in parallel. Each
//     round, the simulator builds a scheduler.Input from the jobs that have
//     arrived, asks a scheduler.Scheduler for a Plan, applies it (stalls,
//     batch sizes) and advances the virtual clock by Config.Interval.
//  4. Read the Result: JCT statistics, makespan, GPU-hours, restarts,
//     finish-time fairness, utilisation per round, and per-job results
//     (Result.WriteCSV).
//
// # Tenants
//
// With Config.Queues the simulator passes a quota tree (quota.Queue)
// to the scheduler every round and submits each job to the leaf queue its
// JobSpec.Queue names (ReadPhilly fills it from the trace's virtual
// cluster); Result.Tenants then reports per leaf queue its JCT, queueing
// delay, GPU-hours and how well its guarantee held (TenantResult, measured
// from what the jobs hold, not from what the scheduler says).
// Config.IgnoreQueues runs the same accounting on one shared pool.
//
// # Services
//
// Config.Services share the cluster with work that takes its devices
// first: each round, before the policy runs, every Service gets the
// replicas it asks for (an inference service's autoscaler decides them;
// examples/simulate -serve drives one from package serving's simulator),
// preempting the jobs that hold the fewest devices where no node has room,
// and the policy sees it as a pinned rigid job, so the workload gets the
// rest. Result.ServiceShortfall counts replicas that found no room.
//
// Run never reads the wall clock and draws randomness only from
// Config.Faults.Seed: the same Config gives the same Result. Run returns
// ErrLostJob if its bookkeeping ever loses a job (a job neither waiting,
// running nor completed, or a device serving two jobs); that is checked
// every round.
package sim
