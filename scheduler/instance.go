package scheduler

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
)

// instance is the validated, indexed form of an Input shared by the
// Scheduler and the built-in policies. It is built per call and never
// shared between goroutines.
type instance struct {
	in *Input
	// The cluster's index (types, capacities, device lookups), shared
	// read-only with other rounds.
	*clusterIndex
	jobs []jobInfo
	byID map[string]int
}

// jobInfo is one job with its effective bounds and current allocation.
type jobInfo struct {
	job      *Job
	allowed  []int // type indices, sorted
	min, max int   // effective device-count bounds
	rigid    bool
	curType  int // -1 when not running
	curCount int
	curNodes int
	curDevs  []string
	pinned   bool // running and non-preemptible
	age      time.Duration
	weight   float64
}

// checkSpeedupTypes rejects a job whose Speedup (a goodput.Curve, or any
// other that lists its types) has a model under a key that names a
// cluster type in another spelling: measurements under "a100" never match
// the cluster's "a100-40gb" and would leave the job on a silent linear
// speedup. Keys of types the cluster lacks are allowed (a job's profiles
// may cover types elsewhere); malformed keys are not.
func (x *instance) checkSpeedupTypes(j *Job) error {
	ts, ok := j.Speedup.(interface{ Types() []string })
	if !ok {
		return nil
	}
	for _, typ := range ts.Types() {
		if typ == goodput.AnyType {
			continue
		}
		if _, ok := x.typeIdx[accel.TypeKey(typ)]; ok {
			continue
		}
		c, err := accel.CanonicalType(typ)
		if err != nil {
			return fmt.Errorf("%w: job %q: its Speedup has a model for %q: %w", ErrUnknownType, j.ID, typ, err)
		}
		for _, ct := range x.types {
			if cc, _ := accel.CanonicalType(string(ct)); cc == c {
				return fmt.Errorf("%w: job %q: its Speedup has a model for %q, which the cluster calls %q (both are %q); key measurements by the cluster's accel.TypeKey", ErrUnknownType, j.ID, typ, ct, c)
			}
		}
	}
	return nil
}

// requested returns the count a rigid baseline gives the job.
func (j *Job) requested() int {
	switch {
	case j.Requested > 0:
		return j.Requested
	case j.MinReplicas > 0:
		return j.MinReplicas
	}
	return 1
}

// analyze validates in and indexes it.
func analyze(in *Input) (*instance, error) {
	c, err := indexCluster(&in.Cluster)
	if err != nil {
		return nil, err
	}
	return analyzeIndexed(in, c)
}

// analyzeIndexed is analyze with the cluster already validated and
// indexed as c (shared, read-only).
func analyzeIndexed(in *Input, c *clusterIndex) (*instance, error) {
	x := &instance{in: in, clusterIndex: c}
	x.byID = make(map[string]int, len(in.Jobs))
	x.jobs = make([]jobInfo, len(in.Jobs))
	for i := range in.Jobs {
		j := &in.Jobs[i]
		switch {
		case j.ID == "":
			return nil, fmt.Errorf("%w: jobs[%d]: empty ID", ErrInvalid, i)
		case j.MinReplicas < 0 || j.MaxReplicas < 0 || j.Requested < 0:
			return nil, fmt.Errorf("%w: job %q: negative replica count", ErrInvalid, j.ID)
		case j.MaxReplicas > 0 && j.MinReplicas > j.MaxReplicas:
			return nil, fmt.Errorf("%w: job %q: min replicas %d > max replicas %d", ErrInvalid, j.ID, j.MinReplicas, j.MaxReplicas)
		case math.IsNaN(j.Weight) || math.IsInf(j.Weight, 0) || j.Weight < 0:
			return nil, fmt.Errorf("%w: job %q: weight %v", ErrInvalid, j.ID, j.Weight)
		case j.Kind < Rigid || j.Kind > Adaptive:
			return nil, fmt.Errorf("%w: job %q: unknown kind %d", ErrInvalid, j.ID, int(j.Kind))
		case j.Attained < 0 || j.Restarts < 0:
			return nil, fmt.Errorf("%w: job %q: negative attained service or restarts", ErrInvalid, j.ID)
		case math.IsNaN(j.RemainingWork) || math.IsInf(j.RemainingWork, 0) || j.RemainingWork < 0:
			return nil, fmt.Errorf("%w: job %q: remaining work %v", ErrInvalid, j.ID, j.RemainingWork)
		}
		if _, dup := x.byID[j.ID]; dup {
			return nil, fmt.Errorf("%w: job %q: duplicate ID", ErrInvalid, j.ID)
		}
		x.byID[j.ID] = i
		ji := jobInfo{job: j, curType: -1, weight: j.Weight}
		if ji.weight == 0 {
			ji.weight = 1
		}
		if len(j.Types) == 0 {
			for t := range x.types {
				ji.allowed = append(ji.allowed, t)
			}
		} else {
			for _, tk := range j.Types {
				t, ok := x.typeIdx[tk]
				if !ok {
					return nil, fmt.Errorf("%w: job %q asks for %q, which the cluster lacks", ErrUnknownType, j.ID, tk)
				}
				ji.allowed = append(ji.allowed, t)
			}
			slices.Sort(ji.allowed)
			ji.allowed = slices.Compact(ji.allowed)
		}
		if j.Kind == Rigid {
			ji.rigid = true
			ji.min, ji.max = j.requested(), j.requested()
		} else {
			ji.min = max(j.MinReplicas, 1)
			ji.max = j.MaxReplicas
			if ji.max == 0 {
				ji.max = max(x.total, ji.min)
			}
		}
		if d := in.Now.Sub(j.Submitted); d > 0 {
			ji.age = d
		}
		if err := x.checkSpeedupTypes(j); err != nil {
			return nil, err
		}
		for _, t := range ji.allowed {
			if _, err := x.speedup(&ji, t, 1, 1); err != nil {
				return nil, err
			}
		}
		x.jobs[i] = ji
	}
	held := 0
	for _, a := range in.Current {
		held += len(a.Devices)
	}
	seen := make(map[string]string, held)
	var gone map[string]bool // finished jobs seen in Current
	for k, a := range in.Current {
		// Every entry is checked, a finished job's too: its devices must
		// exist and not be held twice, though they are then released.
		typ := -1
		for _, id := range a.Devices {
			t, ok := x.devType[id]
			if !ok {
				return nil, fmt.Errorf("%w: current[%d]: job %q: device %q is not in the cluster", ErrInvalid, k, a.Job, id)
			}
			if other, dup := seen[id]; dup {
				return nil, fmt.Errorf("%w: current[%d]: job %q: device %q is also held by job %q", ErrInvalid, k, a.Job, id, other)
			}
			seen[id] = a.Job
			if typ >= 0 && t != typ {
				// A target is one (type, count); a gang over two types
				// cannot be kept, pinned or compared, so it is refused.
				return nil, fmt.Errorf("%w: current[%d]: job %q holds %s and %s devices; an assignment uses one device type", ErrInvalid, k, a.Job, x.types[typ], x.types[t])
			}
			typ = t
		}
		i, ok := x.byID[a.Job]
		if !ok {
			// A finished job: its devices are released.
			if gone[a.Job] {
				return nil, fmt.Errorf("%w: current[%d]: job %q has two assignments", ErrInvalid, k, a.Job)
			}
			if gone == nil {
				gone = make(map[string]bool)
			}
			gone[a.Job] = true
			continue
		}
		ji := &x.jobs[i]
		if ji.curDevs != nil {
			return nil, fmt.Errorf("%w: current[%d]: job %q has two assignments", ErrInvalid, k, a.Job)
		}
		ji.curDevs = slices.Clone(a.Devices)
		if len(a.Devices) == 0 {
			continue
		}
		ji.curType, ji.curCount, ji.curNodes = typ, len(a.Devices), x.nodesOf(a.Devices)
		// Pinned: kept on exactly these devices whatever its Types,
		// bounds or the policy say (see Job.NonPreemptible).
		ji.pinned = ji.job.NonPreemptible
	}
	return x, nil
}

// speedup evaluates job j's Speedup on (type t, nodes, count) and checks it.
func (x *instance) speedup(j *jobInfo, t, nodes, count int) (float64, error) {
	if count <= 0 {
		return 0, nil
	}
	if j.job.Speedup == nil {
		return float64(count), nil
	}
	v := j.job.Speedup.Speedup(string(x.types[t]), nodes, count)
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%w: job %q: speedup(%s, %d nodes, %d replicas) = %v", ErrBadSpeedup, j.job.ID, x.types[t], nodes, count, v)
	}
	return v, nil
}

// packedNodes is the consolidated node count of count devices of type t:
// ceil(count / devices per node), what a consolidating placement achieves.
func (x *instance) packedNodes(t, count int) int {
	if count <= 0 {
		return 0
	}
	d := max(x.perNode[t], 1)
	return (count + d - 1) / d
}

// restartFactor is Pollux's re-allocation factor
// max(age − R·δ, 0) / (age + δ).
func restartFactor(age time.Duration, restarts int, delta time.Duration) float64 {
	a := age.Seconds()
	d := delta.Seconds()
	if a+d <= 0 {
		return 1
	}
	return max(a-float64(restarts)*d, 0) / (a + d)
}

// fits reports whether count is within the job's bounds.
func (j *jobInfo) fits(count int) bool {
	return count >= j.min && count <= j.max
}
