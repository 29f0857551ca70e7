// Package easyscale implements EasyScale's scheduling policy (Li et al.,
// "EasyScale: Elastic Training with Consistent Accuracy and Improved
// Utilization on GPUs", SC'23) for jobs with a fixed number of logical
// workers: a job's world size W and global batch never change, and its W
// workers are mapped onto any k ≤ W devices, of one type or several, each
// device time-slicing its share of them.
//
// It computes what the artifact (github.com/sUntvoOk/EasyScale_info_for_SC23,
// simulator/easy_policy.py and simulator.py) computes, written anew:
//
//   - Intra-job: Split spreads the W workers over a set of devices in
//     proportion to their speed (exactly: the busiest device's time is the
//     least possible), and Waste measures the capacity that load imbalance
//     leaves idle; proposals with more than 0.30 waste are rejected.
//   - Inter-job: Plan keeps running jobs on what they hold, starts each
//     waiting job on its smallest proposal (one device), and then hands the
//     spare devices, greedily, to the increments with the largest
//     incremental speedup, at most one per job per round and at most
//     doubling a job. The homogeneous variant (EasyScale-homo) keeps every
//     job on the type it started on.
//
// These are pure functions of counts per device type; Policy runs them
// behind scheduler.Policy through the exported Round.
package easyscale
