package host

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/tiers"
	"github.com/goodsched/goodsched/scheduler/topoplace"
)

// Annotation and label keys. Users set the annotations on a batch/v1 Job
// (or on every pod of a pod group); the host writes the ones marked
// "written by the host".
const (
	// AnnotationKind is "rigid" (default), "elastic" or "adaptive". A rigid
	// job runs as a gang of exactly its size; an elastic one is resized
	// between min and max replicas by patching spec.parallelism; an
	// adaptive one is elastic and, once its ModelSource has a model, also
	// gets a batch plan (Pollux's goodput). Without a model an adaptive
	// job is scheduled as elastic.
	AnnotationKind = "goodsched.io/kind"
	// AnnotationMinReplicas and AnnotationMaxReplicas bound an elastic or
	// adaptive job's pod count (defaults 1 and 0 = no bound beyond the
	// cluster). They are ignored for rigid jobs.
	AnnotationMinReplicas = "goodsched.io/min-replicas"
	// AnnotationMaxReplicas: see AnnotationMinReplicas.
	AnnotationMaxReplicas = "goodsched.io/max-replicas"
	// AnnotationWeight scales the job's fair share, a positive number
	// (default 1).
	AnnotationWeight = "goodsched.io/weight"
	// AnnotationPriority orders jobs in the baseline policies, an integer
	// (default 0; higher first).
	AnnotationPriority = "goodsched.io/priority"
	// AnnotationPreemptible is "true" (default) or "false"; a running job
	// that is not preemptible keeps its GPUs.
	AnnotationPreemptible = "goodsched.io/preemptible"
	// AnnotationGPUTypes lists the GPU types the job may run on, comma
	// separated canonical keys or aliases ("a100-40gb,t4", "a100"); empty =
	// any type.
	AnnotationGPUTypes = "goodsched.io/gpu-types"
	// AnnotationGroupSize, on the pods of a pod group, is the gang size:
	// the group starts only when that many pods exist (default: the pods
	// seen).
	AnnotationGroupSize = "goodsched.io/group-size"
	// AnnotationDeadline is when the job must finish, an RFC 3339 time
	// ("2026-12-09T06:00:00Z"); absent = none.
	AnnotationDeadline = "goodsched.io/deadline"
	// AnnotationDelayTolerant is "true" when the job's work may be shifted
	// in time (run narrower, or not at all, in high-carbon hours) as long as
	// it meets its AnnotationDeadline; "false" (default) runs it as soon
	// and as wide as the policy allows. Only the goodput-carbon policy with
	// a carbon forecast (Config.Carbon) shifts work.
	AnnotationDelayTolerant = "goodsched.io/delay-tolerant"
	// AnnotationWork is the job's total work as time on one GPU, a Go
	// duration ("36h"). The host subtracts the GPU-time the job has held
	// since this host started (it keeps no record across restarts, so a
	// restarted host over-estimates what is left and runs the job earlier,
	// never later); the rest is the job's scheduler.Job.RemainingWork, which
	// the goodput-carbon policy plans from. Absent = unknown: not shifted.
	AnnotationWork = "goodsched.io/work"
	// AnnotationWorkers makes the job a W-job (EasyScale's logical
	// workers, scheduler.Job.Workers): a positive integer W, its world
	// size, which never changes however many pods it runs on. Its pods
	// (one GPU each) host W logical workers between them, each pod told
	// its share by AnnotationPodWorkers; under a policy that mixes types
	// (-policy easyscale, goodput-mix) its pods may sit on nodes of
	// several GPU types. W must be at least min-replicas (elastic) or the
	// gang's GPU count (rigid); max-replicas above W is bounded by W.
	// Absent: not a W-job.
	AnnotationWorkers = "goodsched.io/workers"
	// AnnotationTier is the job's service tier (scheduler.Job.Tier, as
	// Singularity's): "premium" (once started, never preempted, shrunk or
	// moved), "standard" (once started, keeps at least 70% of its
	// requested GPUs) or "basic" (best effort); absent = none, which the
	// policy alone decides for.
	AnnotationTier = "goodsched.io/tier"

	// AnnotationLastDecision (written by the host on the Job) is the last
	// decision that changed something, in words: action, counts, type,
	// reason and message.
	AnnotationLastDecision = "goodsched.io/last-decision"
	// AnnotationBatchPlan (written by the host on the Job, in the same
	// patch as AnnotationLastDecision) is the decision's batch plan as JSON,
	// goodput.BatchPlan's fields: {"batch","local","accum","goodput"}. It is
	// absent while the job has no batch plan.
	AnnotationBatchPlan = "goodsched.io/batch-plan"
	// AnnotationRestarts (written by the host on the Job, in the same patch
	// as AnnotationLastDecision) counts the times the host re-allocated
	// the running Job: each applied grow, shrink, move or preemption. It is
	// the job's scheduler.Job.Restarts, which the goodput policy's restart
	// penalty reads, and it survives a scheduler restart or a leader
	// change. A value that is not a non-negative integer counts as 0.
	AnnotationRestarts = "goodsched.io/restarts"
	// AnnotationTargetReplicas (written by the host on every pod of an
	// elastic pod group) is the pod count the plan gives the group, for the
	// group's controller to follow.
	AnnotationTargetReplicas = "goodsched.io/target-replicas"
	// AnnotationPodWorkers (written by the host on each bound pod of a
	// W-job, in the binding, and patched when a resize changes it) is how
	// many of the job's W logical workers the pod hosts, a positive
	// integer; over the job's bound pods they sum to W. The trainer reads
	// it (a downward API volume sees a change; an environment variable
	// only the value at start) and time-slices that many workers.
	AnnotationPodWorkers = "goodsched.io/pod-workers"
	// AnnotationPodWorkerRanks (written with AnnotationPodWorkers) are the
	// logical ranks the pod hosts, "first-last" inclusive ("2-3"): the
	// job's bound pods cover 0..W-1, each rank once.
	AnnotationPodWorkerRanks = "goodsched.io/pod-worker-ranks"
	// AnnotationDevices (written by the host when it binds a pod, through
	// the binding itself) lists the device indices the pod got on its
	// node, comma separated ("0,1"). The host rebuilds the placement from
	// it after a restart or a leader change.
	AnnotationDevices = "goodsched.io/devices"
	// AnnotationBinding (written by the host with AnnotationDevices, in the
	// binding) proves that the host bound the pod: a keyed MAC of the pod's
	// UID, node and devices (see Config.BindingKey). Only a pod whose
	// AnnotationBinding verifies is read as holding the devices it names;
	// anything else is counted by the GPUs it requests.
	AnnotationBinding = "goodsched.io/binding"

	// LabelGroup makes pods that share its value (in one namespace) a pod
	// group: one rigid gang, scheduled all-or-nothing.
	LabelGroup = "goodsched.io/group"

	// LabelGPUProduct is GPU feature discovery's product label on a Node
	// ("NVIDIA-A100-SXM4-40GB", "Tesla-T4").
	LabelGPUProduct = "nvidia.com/gpu.product"
	// LabelGPUMemory is GPU feature discovery's memory label on a Node, in
	// MiB; it separates products whose names omit the memory size.
	LabelGPUMemory = "nvidia.com/gpu.memory"
	// ResourceGPU is the extended resource of NVIDIA's device plugin.
	ResourceGPU = "nvidia.com/gpu"
)

// MaxWorkers is the largest AnnotationWorkers the host accepts: the
// policies' work per round grows with W.
const MaxWorkers = 8192

// ErrAnnotation reports a malformed goodsched.io annotation; the job is
// skipped for the round and gets a Warning Event.
var ErrAnnotation = errors.New("host: malformed annotation")

// jobSpec is what a Job's (or group's) annotations say.
type jobSpec struct {
	kind        scheduler.Kind
	minReplicas int // pods; elastic only
	maxReplicas int // pods; 0 = unbounded; elastic only
	weight      float64
	priority    int
	preemptible bool
	types       []accel.TypeKey
	queue       string // leaf queue; "" without queues
	deadline    time.Time
	tolerant    bool          // delay-tolerant
	work        time.Duration // total work on one GPU; 0 = unknown
	workers     int           // logical workers W; 0 = not a W-job
	tier        tiers.Tier
	// topology is the constraint of the topology annotations on the
	// round's topology (snapshotOptions.topologyOf); zero without one.
	topology topoplace.Constraint
}

// parseSpec reads the scheduling annotations. Every malformed value is an
// error wrapping ErrAnnotation that names the annotation.
func parseSpec(ann map[string]string) (jobSpec, error) {
	sp := jobSpec{kind: scheduler.Rigid, minReplicas: 1, weight: 1, preemptible: true}
	var errs []error
	bad := func(key, val, want string) {
		errs = append(errs, fmt.Errorf("%w: %s=%q: %s", ErrAnnotation, key, val, want))
	}
	if v, ok := ann[AnnotationKind]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "rigid":
			sp.kind = scheduler.Rigid
		case "elastic":
			sp.kind = scheduler.Elastic
		case "adaptive":
			sp.kind = scheduler.Adaptive
		default:
			bad(AnnotationKind, v, "want rigid, elastic or adaptive")
		}
	}
	intAnn := func(key string, min int, dst *int) {
		v, ok := ann[key]
		if !ok {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			bad(key, v, fmt.Sprintf("want an integer ≥ %d", min))
			return
		}
		*dst = n
	}
	intAnn(AnnotationMinReplicas, 1, &sp.minReplicas)
	intAnn(AnnotationMaxReplicas, 1, &sp.maxReplicas)
	if sp.maxReplicas > 0 && sp.minReplicas > sp.maxReplicas {
		bad(AnnotationMinReplicas, ann[AnnotationMinReplicas], fmt.Sprintf("more than %s %d", AnnotationMaxReplicas, sp.maxReplicas))
	}
	if v, ok := ann[AnnotationPriority]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			bad(AnnotationPriority, v, "want an integer")
		}
		sp.priority = n
	}
	if v, ok := ann[AnnotationWeight]; ok {
		w, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(w > 0) || w > 1e6 {
			bad(AnnotationWeight, v, "want a positive number")
		} else {
			sp.weight = w
		}
	}
	if v, ok := ann[AnnotationPreemptible]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			bad(AnnotationPreemptible, v, "want true or false")
		}
		sp.preemptible = b || err != nil
	}
	if v, ok := ann[AnnotationDeadline]; ok {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
		if err != nil {
			bad(AnnotationDeadline, v, "want an RFC 3339 time such as 2026-12-09T06:00:00Z")
		}
		sp.deadline = t
	}
	if v, ok := ann[AnnotationDelayTolerant]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			bad(AnnotationDelayTolerant, v, "want true or false")
		}
		sp.tolerant = b
	}
	if v, ok := ann[AnnotationWork]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			bad(AnnotationWork, v, "want a positive duration of work on one GPU, such as 36h")
		} else {
			sp.work = d
		}
	}
	if sp.tolerant && sp.deadline.IsZero() && ann[AnnotationDeadline] == "" {
		bad(AnnotationDelayTolerant, ann[AnnotationDelayTolerant], "a delay-tolerant job needs "+AnnotationDeadline)
	}
	if v, ok := ann[AnnotationTier]; ok {
		t, err := tiers.Parse(v)
		if err != nil || t == tiers.None {
			bad(AnnotationTier, v, "want premium, standard or basic")
		}
		sp.tier = t
	}
	intAnn(AnnotationWorkers, 1, &sp.workers)
	if sp.workers > 0 {
		switch {
		case sp.workers > MaxWorkers:
			bad(AnnotationWorkers, ann[AnnotationWorkers], fmt.Sprintf("want at most %d logical workers", MaxWorkers))
			sp.workers = 0
		case sp.kind == scheduler.Adaptive:
			bad(AnnotationWorkers, ann[AnnotationWorkers], fmt.Sprintf("a W-job keeps its global batch, which %s=adaptive changes: want %s elastic or rigid", AnnotationKind, AnnotationKind))
		case sp.kind == scheduler.Elastic && sp.minReplicas > sp.workers:
			bad(AnnotationWorkers, ann[AnnotationWorkers], fmt.Sprintf("fewer logical workers than %s %d", AnnotationMinReplicas, sp.minReplicas))
		}
	}
	if v, ok := ann[AnnotationGPUTypes]; ok && strings.TrimSpace(v) != "" {
		for _, f := range strings.Split(v, ",") {
			t, err := accel.CanonicalType(f)
			if err != nil {
				bad(AnnotationGPUTypes, v, err.Error())
				break
			}
			if !slices.Contains(sp.types, t) {
				sp.types = append(sp.types, t)
			}
		}
		slices.Sort(sp.types)
	}
	return sp, errors.Join(errs...)
}

// MaxDevicesAnnotationBytes caps the length of an AnnotationDevices value
// the host reads: the indices of a node of 1,024 GPUs fit in 4,010 bytes.
// A longer value is refused before it is parsed.
const MaxDevicesAnnotationBytes = 8 << 10

// ErrAnnotationTooLong reports an annotation value over its length cap.
var ErrAnnotationTooLong = errors.New("host: annotation too long")

// parseDevices reads AnnotationDevices: distinct indices in [0, gpus), at
// most MaxDevicesAnnotationBytes long. It runs in time linear in the
// value's length.
func parseDevices(v string, gpus int) ([]int, error) {
	if len(v) > MaxDevicesAnnotationBytes {
		return nil, fmt.Errorf("%w: %s has %d bytes (at most %d)", ErrAnnotationTooLong, AnnotationDevices, len(v), MaxDevicesAnnotationBytes)
	}
	return parseDevicesUncapped(v, gpus)
}

// parseDevicesUncapped is parseDevices without the length cap: one pass
// over the bytes, the indices marked in a table of gpus entries, read back
// in order (no sort).
func parseDevicesUncapped(v string, gpus int) ([]int, error) {
	bad := func() ([]int, error) {
		return nil, fmt.Errorf("%w: %s=%q: want distinct indices below %d", ErrAnnotation, AnnotationDevices, truncate(v, 64), gpus)
	}
	if gpus <= 0 {
		return bad()
	}
	seen := make([]bool, gpus)
	count, n, digits, done := 0, 0, 0, false // done: the field's number ended (spaces after it)
	for i := 0; i <= len(v); i++ {
		c := byte(',')
		if i < len(v) {
			c = v[i]
		}
		switch {
		case c >= '0' && c <= '9':
			if done {
				return bad()
			}
			n = n*10 + int(c-'0')
			digits++
			if n >= gpus {
				return bad()
			}
		case c == ' ' || c == '\t':
			done = digits > 0
		case c == ',':
			if digits == 0 || seen[n] {
				return bad()
			}
			seen[n] = true
			count++
			n, digits, done = 0, 0, false
		default:
			return bad()
		}
	}
	out := make([]int, 0, count)
	for i, ok := range seen {
		if ok {
			out = append(out, i)
		}
	}
	return out, nil
}

// formatDevices writes AnnotationDevices.
func formatDevices(idx []int) string {
	parts := make([]string, len(idx))
	for i, n := range idx {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// checkKnownTypes rejects the GPU types of AnnotationGPUTypes that are
// neither in accel's catalog nor the type of a node (nodeTypes): "t44" is
// a typo, not a type the job waits for.
func checkKnownTypes(types []accel.TypeKey, nodeTypes map[accel.TypeKey]bool) error {
	var unknown []string
	for _, t := range types {
		if _, ok := accel.LookupProduct(t); !ok && !nodeTypes[t] {
			unknown = append(unknown, string(t))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: unknown GPU type %s: want a type of accel's catalog (a100-40gb, h100-80gb, t4, ...) or of a node", ErrAnnotation, AnnotationGPUTypes, strings.Join(unknown, ", "))
}

// errorText is err in one line, for an Event: the errors errors.Join put
// on separate lines are separated by "; ", and ErrAnnotation's prefix is
// said once.
func errorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	prefix := ErrAnnotation.Error() + ": "
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.TrimPrefix(lines[i], prefix)
	}
	return strings.Join(lines, "; ")
}
