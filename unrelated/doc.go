// Package unrelated schedules jobs on unrelated machines, the problem of
// Hitzges & Sagnol, "Deep Learning for Unrelated-Machines Scheduling:
// Handling Variable Dimensions" (ICMLA'25, arXiv 2512.19527): each job's
// processing time differs per machine (exactly what a heterogeneous GPU
// cluster's throughput matrix says, see FromThroughput), machines may be
// occupied at time 0, and jobs and machines have deadlines and weights. The
// cost of a schedule is its makespan plus the weighted tardiness of the jobs
// plus the weighted tardiness of the machines (Cost).
//
// Decisions follow the paper's process: whenever a machine becomes free
// (State), it starts a pending job or retires for good (Action, Retire). A
// Policy makes those decisions; Run plays one on an instance. Three solvers
// are provided:
//
//   - Optimal and OptimalFrom: exact, with a proof of optimality (dynamic
//     programming over job subsets per makespan level, stopped by a lower
//     bound), for up to MaxExactJobs pending jobs — about 4 ms for 8 jobs ×
//     4 machines.
//   - Rule: the paper's dispatching rule (shortest processing time on the
//     free machine among the jobs no other machine would finish sooner).
//   - Learned: a small network (Network) scoring each feasible action from
//     scale-free features (Candidates), trained by Train to imitate the
//     exact solver (DAgger); the weights shipped in this package (Shipped)
//     come from DefaultTrainConfig and schedule any number of jobs and
//     machines.
//
// Everything is deterministic: instances come from a seeded *rand.Rand
// (Random draws them as the paper's generator does) and training from a
// seed. The package imports nothing of goodsched.
package unrelated
