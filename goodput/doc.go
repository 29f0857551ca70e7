// Package goodput predicts how fast a deep-learning training job makes
// progress on any allocation of accelerators, learns that from the job's
// own measurements while it runs, and chooses its batch size. It
// implements the goodput model of Pollux (Qiao et al., OSDI'21) and the
// per-accelerator-type models of Sia (Jayaram Subramanya et al., SOSP'23).
//
// Goodput = throughput × statistical efficiency. Throughput comes from
// seven parameters (Params): compute time AlphaC + BetaC·m per pass of m
// samples per GPU, a sync time per shape (intra-node AlphaR, BetaR;
// inter-node AlphaN, BetaN) and an overlap exponent Gamma:
//
//	T_iter = s·T_grad + (T_grad^γ + T_sync^γ)^(1/γ)
//
// Efficiency is (φ+M0)/(φ+M) for total batch M, with φ the gradient noise
// scale from GradStats. FormPollux is Pollux's sync model exactly;
// FormAllReduce (the default) models NCCL's ring (one or two nodes) and
// tree (three or more nodes, depth log₂ K) all-reduce, and extrapolates to
// shapes far larger than the job has run on (median step-time error 5–8%
// on Pollux's six profiles against 6–21% for Pollux's form; see
// DefaultForm). Without data from three or more nodes the two are the
// same model.
//
// # Host contract
//
//  1. Create one Estimator per job with NewEstimator, giving the job's
//     batch-size Limits (and, for heterogeneous clusters, one-GPU
//     Profiles per accelerator type).
//  2. While the job runs, report per-configuration mean step times with
//     Observe (Observation: nodes, replicas, per-GPU batch, the mean
//     accumulation-pass time and the mean optimizer-step time) and the
//     gradient statistics with ObserveGrad. Invalid measurements (NaN,
//     Inf, ≤ 0) are rejected with an error, never fitted.
//  3. Each scheduling round, take Estimator.Curve: a Speedup,
//     BatchPlanner and NodeBounder for the cluster policy (its speedups
//     stop depending on the node count from 2 nodes on, unless a tree
//     term is fitted, so a policy evaluates fewer allocations). It is
//     memoised and allocation free on lookups, safe for concurrent use,
//     and bounded to Explore times (default 4) the most replicas the job
//     has run with. A job with no data scales linearly. A host with many
//     jobs whose models recur (a simulator) gives their Estimators one
//     PlanCache, so that equal models share their optimised batch plans.
//  4. When the job starts on an allocation, run it with the BatchPlan for
//     that allocation; while it runs, adopt a new plan only if Switch
//     says so (5% hysteresis).
//
// Lower-level pieces are usable on their own: Fit fits Params to
// observations; Model evaluates and optimises a fitted model; NewCurve
// builds a speedup curve from models; NoiseScale computes gradient
// statistics from per-replica gradient norms; ReadPlacements,
// ReadScalability, ReadValidation and ReadSeed read Pollux's and Sia's
// profile files.
//
// A job with a fixed number W of logical workers (EasyScale, SC'23: its
// world size and global batch never change, so efficiency is constant and
// goodput is throughput) runs on any gang of devices, of one type or
// several, each time-slicing its share of the workers: NewWorkerModel
// builds its throughput model from the per-type Models an Estimator
// fits (the slowest device sets the step; DefaultSliceOverhead charges
// each extra worker on a device), and it implements GangSpeedup for
// policies that mix types as well as Speedup for those that do not.
//
// On a cluster whose nodes sit in a topology tree (NVLink domain › rack ›
// block › spine), the multi-node sync time also depends on the slowest
// tier a placement spans: TierParams scales the multi-node sync term by a
// factor per tier, FitTiers fits the factors from reports tagged with
// their tier (TierObservation; accel/topology's TierOf gives the tier of
// a set of nodes), with the tiers' bandwidths as the prior for tiers never
// run on, and Estimator.ObserveTier and TierModel do it online. Without
// tiers the model is Params exactly.
//
// The package imports nothing else of goodsched, keeps no global state and
// starts no goroutines.
package goodput
