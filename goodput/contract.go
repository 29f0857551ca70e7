package goodput

// Speedup is what a cluster policy consumes: how much faster a job makes
// progress on an allocation than on its baseline. typ is the accelerator
// type key (accel.TypeKey as a string; goodput imports nothing of ours),
// nodes the number of nodes spanned and replicas the number of devices.
// Implementations must return 0 for allocations the job cannot use, never
// NaN or a negative value, and must be safe for concurrent use.
type Speedup interface {
	Speedup(typ string, nodes, replicas int) float64
}

// BatchPlan is the batch-size choice for one allocation.
type BatchPlan struct {
	// Batch is the total batch size per optimizer step:
	// Local × Replicas × (Accum+1).
	Batch int `json:"batch"`
	// Local is the per-device batch of one forward/backward pass.
	Local int `json:"local"`
	// Accum is the number of gradient-accumulation steps taken before
	// each synchronising optimizer step (0 = none).
	Accum int `json:"accum"`
	// Goodput is the predicted goodput in training examples per second,
	// scaled by statistical efficiency.
	Goodput float64 `json:"goodput"`
}

// BatchPlanner is implemented by speedup models that also choose a batch
// size and accumulation steps for an allocation.
type BatchPlanner interface {
	BatchPlan(typ string, nodes, replicas int) BatchPlan
}

// TypeLister is implemented by speedup models that know which
// accelerator types they have models for (Curve and Estimator do), so
// that a scheduler can check those keys against its cluster's types.
type TypeLister interface {
	Types() []string
}

// NodeBounder is implemented by speedup models whose speedup stops
// depending on the node count beyond some count: NodeBound() = b > 0
// promises Speedup(typ, n, r) = Speedup(typ, b, r) for every type and
// b < n ≤ r, so that a scheduler may evaluate and memoise each (type,
// replicas) on at most b node counts; 0 promises nothing.
type NodeBounder interface {
	NodeBound() int
}
