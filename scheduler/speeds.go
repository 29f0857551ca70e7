package scheduler

// Speeds tells placers and policies how fast each device runs each job:
// devices of one type are not equally fast (PAL, SC'24, measured 8–22%
// spread between V100s of one cluster), and interference makes the
// difference change over time. A synchronous gang runs at the speed of
// its slowest device, and slower still when it spans nodes.
//
// The host builds it per round (package variability's Estimator.Speeds is
// one) and hands it over as Input.Speeds; the Round passes it to the
// Placer as PlaceInput.Speeds. Nil means no speed data: every device of a
// type is taken as equally fast, and every plan is as without it.
// Implementations must be safe for concurrent reads and must not change
// during a round.
type Speeds interface {
	// Slowdown returns how many times longer job's steps take on device
	// than on a nominal device of its type: 1 is nominal, 1.2 is 20%
	// slower, and 1 is also the answer for a device or job it knows
	// nothing of. Values are finite and > 0.
	Slowdown(job, device string) float64
	// LocalityPenalty returns how many times longer job's steps take
	// when its gang spans more than one node (≥ 1; 1 = no penalty).
	LocalityPenalty(job string) float64
}
