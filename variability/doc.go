// Package variability models how fast each device runs each kind of job.
// Devices of one type are not equally fast: PAL (Jain et al., SC'24)
// measured 8–22% spread between V100s of one cluster, and interference
// from co-located work makes the difference change over time (Chen et
// al., ICPP-W'20). A synchronous gang runs at the speed of its slowest
// device, and slower still when it spans nodes.
//
// The model has two parts:
//
//   - a Table of per-device, per-application-class slowdown factors
//     (1 = the median device), read from measurements laid out as PAL's
//     artifact (Load, ReadAggregated, ReadTable), mapped onto a cluster's
//     devices (Measurements.Assign) and, as PAL does, binned by k-means
//     (Bin);
//   - an Estimator that learns each device's current slowdown online from
//     the step times gangs report: a gang's step time is its base time ×
//     the largest factor among its devices × a locality penalty when it
//     spans nodes, so reports of many gangs on overlapping devices
//     identify each device's factor. Each device keeps its last few
//     observations and its estimate is their median: it follows an
//     interference episode within a few reports and ignores a one-off
//     outlier.
//
// A host uses it in three steps each round:
//
//  1. Observe the step times its jobs measured since the last round
//     (Report: devices, measured step time, the step time its model
//     predicts on nominal devices). A bad report is refused with a typed
//     error; the others apply.
//  2. Take Speeds(classOf), an immutable snapshot, and hand it to the
//     scheduler as scheduler.Input.Speeds.
//  3. Place with a variability-aware placer (package variability/palplace:
//     PAL, PM-First) or the scheduler's own.
//
// The package imports only accel and the standard library.
package variability
