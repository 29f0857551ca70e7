package host

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/topoplace"
)

// podInfo is one pod of a unit as the round sees it.
type podInfo struct {
	pod     *corev1.Pod
	node    string // "" = not bound
	devices []int  // device indices on node, when bound
	workers int    // logical workers it hosts (AnnotationPodWorkers); 0 = unknown
}

func (p *podInfo) bound() bool { return p.node != "" }

// unit is one scheduled unit: a Job or a pod group.
type unit struct {
	key   JobKey
	job   *batchv1.Job // nil for a pod group
	group string       // group name, for a pod group
	spec  jobSpec
	// perPod is the GPU count of each pod.
	perPod int
	// size is the gang size in pods of a rigid unit.
	size int
	// pods are the unit's live pods (not terminating, not finished),
	// bound ones first, then by creation time and name.
	pods []*podInfo
	// held are the device IDs its bound pods hold on offered nodes.
	held []string
	// heldWorkers, for a W-job, are the logical workers each device of
	// held hosts, when its bound pods say so consistently (nil otherwise:
	// the scheduler spreads W evenly).
	heldWorkers []int
	sj          scheduler.Job
	// svcUnit is set on an inference service's unit.
	svcUnit *serviceUnit
}

// regarding returns the object Events about the unit are recorded on.
func (u *unit) regarding() objectRef {
	if u.job != nil {
		return u.job
	}
	if len(u.pods) > 0 {
		return u.pods[0].pod
	}
	return nil
}

// skippedUnit is a unit whose annotations or pods are malformed.
type skippedUnit struct {
	key JobKey
	obj objectRef
	err error
}

// snapshot is the scheduler's view of the cluster for one round.
type snapshot struct {
	cluster accel.Cluster
	units   []*unit // sorted by key
	current []placement.Assignment
	// lost are bound pods of ours on nodes that are gone or NotReady: the
	// host deletes them at once.
	lost []*corev1.Pod
	// broken are bound pods of gangs that are half bound (fewer live bound
	// pods than the gang needs): the host evicts them so the gang restarts
	// whole.
	broken []*corev1.Pod
	// conflicting are bound pods of ours whose devices another pod of ours
	// already holds.
	conflicting []*corev1.Pod
	// refused are pods of ours whose devices annotation was not read, with
	// the reason (counted and logged once per pod).
	refused []refusal
	// devices are the devices of our bound pods, as this host bound them.
	devices map[types.UID][]int
	skipped []skippedUnit
	// waitingNoType are units whose allowed GPU types are not in the
	// cluster this round.
	waitingNoType []*unit
	// offered reports, per node name, whether new pods may be bound there.
	offered map[string]bool
	// perType counts the devices offered per type (capacity).
	capacity map[accel.TypeKey]int
	// hidden counts the GPUs of each type the round does not offer, and
	// why.
	hidden hiddenGPUs
	// services are the inference services' units (serving.go), kept out
	// of units: the host places their replicas, not the policy.
	services []*unit
}

// snapshotOptions are the parts of Config the mapping needs.
type snapshotOptions struct {
	schedulerName   string
	namespace       string // "" = all
	toleratedTaints []string
	now             time.Time
	// bindingKey verifies AnnotationBinding.
	bindingKey []byte
	// queueOf maps a job's namespace and labels to its leaf queue; nil =
	// no queues.
	queueOf func(namespace string, labels map[string]string) (string, error)
	// serviceOf maps the pods of inference services to their unit, and
	// services reads each one (serving.go); nil = none.
	serviceOf map[types.UID]JobKey
	services  map[JobKey]*serviceUnit
	// topologyOf checks a job's topology annotations for its GPUs per
	// pod and returns its constraint; nil = no topology (the annotations
	// are ignored).
	topologyOf func(ann map[string]string, perPod int) (topoplace.Constraint, error)
	// nodeTypes are the nodes' GPU types (nodeTypesOf), shared with
	// servicePods; nil = buildSnapshot reads them.
	nodeTypes map[accel.TypeKey]bool
}

// assumed overlays what the host did that the informers may not show yet.
type assumed struct {
	binds    map[types.UID]bindRecord // pod → binding the host made
	deleting map[types.UID]bool       // pods the host evicted or deleted
	workers  map[types.UID]int        // pod → the AnnotationPodWorkers the host patched
}

type bindRecord struct {
	node    string
	devices []int
	share   workerShare // the logical workers the pod hosts (W-jobs only)
}

// gpuCount returns a pod spec's nvidia.com/gpu count: the sum of its
// containers' limits (requests when no limit is set).
func gpuCount(spec *corev1.PodSpec) int {
	n := int64(0)
	for _, c := range spec.Containers {
		q, ok := c.Resources.Limits[ResourceGPU]
		if !ok {
			q, ok = c.Resources.Requests[ResourceGPU]
		}
		if ok {
			n += q.Value()
		}
	}
	return int(n)
}

// nodeReady reports the node's Ready condition.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeSchedulable reports that new pods may go to the node: not cordoned
// and without NoSchedule or NoExecute taints other than tolerated ones.
func nodeSchedulable(n *corev1.Node, tolerated []string) bool {
	reason, _ := nodeBlock(n, tolerated)
	return reason == ""
}

// nodeType returns the canonical type of a node's GPUs from GPU feature
// discovery's labels.
func nodeType(n *corev1.Node) (accel.TypeKey, string) {
	product := n.Labels[LabelGPUProduct]
	var mem uint64
	if v, err := strconv.ParseUint(n.Labels[LabelGPUMemory], 10, 64); err == nil {
		mem = v << 20
	}
	return accel.TypeFromProduct(product, mem), product
}

// nodeTypesOf returns the GPU types of nodes (nodeType).
func nodeTypesOf(nodes []*corev1.Node) map[accel.TypeKey]bool {
	set := map[accel.TypeKey]bool{}
	for _, n := range nodes {
		t, _ := nodeType(n)
		set[t] = true
	}
	return set
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobOwner(p *corev1.Pod) (types.UID, bool) {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Job" {
			return o.UID, true
		}
	}
	return "", false
}

func deviceID(node string, idx int) string { return node + "/" + strconv.Itoa(idx) }

// refusal is a pod whose annotation the host did not read, and why.
type refusal struct {
	pod    *corev1.Pod
	reason string // metric label: annotation-too-long, annotation-malformed, binding-unverified
	err    error
}

// boundDevices returns the devices a bound pod of ours holds on a node of
// gpus GPUs, from AnnotationDevices, once AnnotationBinding proves that
// this host wrote it; otherwise the refusal's reason and error.
func boundDevices(p *corev1.Pod, gpus int, key []byte) ([]int, string, error) {
	v := p.Annotations[AnnotationDevices]
	if len(v) > MaxDevicesAnnotationBytes {
		return nil, "annotation-too-long", fmt.Errorf("%w: %s has %d bytes (at most %d)", ErrAnnotationTooLong, AnnotationDevices, len(v), MaxDevicesAnnotationBytes)
	}
	if !verifyBinding(key, p) {
		return nil, "binding-unverified", fmt.Errorf("%w: %s does not prove that this scheduler bound the pod", ErrAnnotation, AnnotationBinding)
	}
	d, err := parseDevices(v, gpus)
	if err != nil {
		return nil, "annotation-malformed", err
	}
	return d, "", nil
}

// buildSnapshot maps the API objects to the scheduler's Input: offered
// nodes and their free or held devices, one unit per Job and pod group,
// and the placement in effect, rebuilt from the pods' nodes and device
// annotations. It reads only what it is given.
func buildSnapshot(nodes []*corev1.Node, pods []*corev1.Pod, jobs []*batchv1.Job, opt snapshotOptions, as assumed) *snapshot {
	s := &snapshot{offered: map[string]bool{}, capacity: map[accel.TypeKey]int{}, devices: map[types.UID][]int{}, hidden: newHiddenGPUs()}
	type nodeState struct {
		node        *corev1.Node
		gpus        int
		ready       bool
		schedulable bool
		typ         accel.TypeKey
		product     string
		holder      map[int]*podInfo // device index → our live pod
		removed     map[int]bool     // held by terminating or skipped pods
		terminating map[int]bool     // the removed ones held by terminating pods
		foreign     int              // GPUs used by other pods
		unhealthy   int              // capacity the device plugin does not offer now
	}
	ns := map[string]*nodeState{}
	for _, n := range nodes {
		// Device indices range over the node's capacity; what allocatable
		// lacks of it (GPUs the device plugin marks unhealthy, or all of
		// them while it restarts) is hidden like foreign GPUs, so that our
		// pods on those indices keep running instead of looking conflicting.
		alloc, capacity := n.Status.Allocatable[ResourceGPU], n.Status.Capacity[ResourceGPU]
		gpus := int(alloc.Value())
		total := max(gpus, int(capacity.Value()))
		st := &nodeState{node: n, gpus: total, unhealthy: total - gpus, ready: nodeReady(n), schedulable: nodeSchedulable(n, opt.toleratedTaints),
			holder: map[int]*podInfo{}, removed: map[int]bool{}, terminating: map[int]bool{}}
		st.typ, st.product = nodeType(n)
		ns[n.Name] = st
	}

	// The GPU types a job may name: the catalog's and the nodes'.
	nodeTypes := opt.nodeTypes
	if nodeTypes == nil {
		nodeTypes = nodeTypesOf(nodes)
	}

	// Units: Jobs of ours first.
	units := map[JobKey]*unit{}
	byUID := map[types.UID]*unit{}
	skipped := map[JobKey]bool{}
	for _, j := range jobs {
		if j.Spec.Template.Spec.SchedulerName != opt.schedulerName || jobFinished(j) || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
			continue
		}
		if opt.namespace != "" && j.Namespace != opt.namespace {
			continue
		}
		key := JobKey(j.Namespace + "/" + j.Name)
		u := &unit{key: key, job: j}
		byUID[j.UID] = u
		u.perPod = gpuCount(&j.Spec.Template.Spec)
		sp, err := unitSpec(j.Annotations, j.Namespace, j.Labels, u.perPod, nodeTypes, opt)
		if err != nil {
			s.skipped = append(s.skipped, skippedUnit{key: key, obj: j, err: err})
			skipped[key] = true
			continue
		}
		u.spec = sp
		size := 1
		if j.Spec.Parallelism != nil {
			size = int(*j.Spec.Parallelism)
		}
		if j.Spec.Completions != nil {
			size = min(size, int(*j.Spec.Completions)-int(j.Status.Succeeded))
		}
		u.size = max(size, 0)
		units[key] = u
	}

	// Pods: ours go to their unit; the GPUs of all others are foreign.
	type groupPods struct{ pods []*corev1.Pod }
	groups := map[JobKey]*groupPods{}
	var ours []*podInfo
	unitOf := map[*podInfo]JobKey{}
	for _, p := range pods {
		if podFinished(p) {
			continue
		}
		pi := &podInfo{pod: p, node: p.Spec.NodeName}
		terminating := p.DeletionTimestamp != nil || as.deleting[p.UID]
		verified := false // pi.devices are what this host bound the pod to
		if !pi.bound() {
			if b, ok := as.binds[p.UID]; ok {
				pi.node, pi.devices, pi.workers, verified = b.node, b.devices, b.share.count, true
			}
		}
		mine := p.Spec.SchedulerName == opt.schedulerName && (opt.namespace == "" || p.Namespace == opt.namespace)
		var key JobKey
		jobPod := false
		if mine {
			if uid, ok := jobOwner(p); ok {
				if u, ok := byUID[uid]; ok {
					key, jobPod = u.key, true
				} else {
					mine = false // its Job is not ours, finished or suspended
				}
			} else if k, ok := opt.serviceOf[p.UID]; ok {
				key = k // a replica of an inference service
			} else {
				g := p.Labels[LabelGroup]
				if g == "" {
					g = p.Name // a lone pod is a group of one
				}
				key = JobKey(p.Namespace + "/" + g)
				if units[key] != nil && units[key].job != nil {
					mine = false // the name is a Job's; the Job wins
				}
			}
		}
		st := ns[pi.node]
		if mine && !verified && pi.bound() && st != nil {
			// Only what this host wrote at bind time is read: a pod of ours
			// whose binding does not verify holds no devices (it is
			// evicted as conflicting, its GPUs counted by its request).
			d, reason, err := boundDevices(p, st.gpus, opt.bindingKey)
			if err != nil {
				s.refused = append(s.refused, refusal{pod: p, reason: reason, err: err})
			} else {
				pi.devices, verified = d, true
				pi.workers = podWorkers(p)
			}
		}
		if n, ok := as.workers[p.UID]; ok && verified {
			pi.workers = n
		}
		if !mine || terminating {
			// Other pods count by what they request, never by our
			// annotations; our terminating pods by the devices we gave them.
			if st != nil && pi.bound() {
				if mine && verified && len(pi.devices) > 0 {
					for _, d := range pi.devices {
						st.removed[d] = true
						st.terminating[d] = st.terminating[d] || terminating
					}
				} else {
					st.foreign += gpuCount(&p.Spec)
				}
			}
			continue
		}
		if verified {
			s.devices[p.UID] = pi.devices
		}
		if !jobPod {
			gp := groups[key]
			if gp == nil {
				gp = &groupPods{}
				groups[key] = gp
			}
			gp.pods = append(gp.pods, p)
		}
		unitOf[pi] = key
		ours = append(ours, pi)
	}

	// Pod groups become units.
	for key, gp := range groups {
		slices.SortFunc(gp.pods, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
		first := gp.pods[0]
		if su := opt.services[key]; su != nil {
			if su.err != nil {
				s.skipped = append(s.skipped, skippedUnit{key: key, obj: su.deploy, err: su.err})
				skipped[key] = true
			} else {
				u := &unit{key: key, spec: su.spec, perPod: su.svc.GPUs(), size: len(gp.pods), svcUnit: su}
				if opt.topologyOf != nil {
					u.spec.topology, _ = opt.topologyOf(first.Annotations, u.perPod) // a bad one: no constraint
				}
				units[key] = u
			}
			continue
		}
		u := &unit{key: key, group: first.Labels[LabelGroup]}
		if u.group == "" {
			u.group = first.Name
		}
		u.perPod = gpuCount(&first.Spec)
		sp, err := unitSpec(first.Annotations, first.Namespace, first.Labels, u.perPod, nodeTypes, opt)
		errs := []error{err}
		for _, p := range gp.pods[1:] {
			if gpuCount(&p.Spec) != u.perPod {
				errs = append(errs, fmt.Errorf("%w: pods of group %q ask for different %s counts", ErrAnnotation, u.group, ResourceGPU))
				break
			}
		}
		u.size = len(gp.pods)
		if v, ok := first.Annotations[AnnotationGroupSize]; ok {
			n, perr := strconv.Atoi(v)
			if perr != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%w: %s=%q: want an integer ≥ 1", ErrAnnotation, AnnotationGroupSize, v))
			} else {
				u.size = n
			}
		}
		err = errors.Join(errs...)
		if err != nil {
			s.skipped = append(s.skipped, skippedUnit{key: key, obj: first, err: err})
			skipped[key] = true
			continue
		}
		u.spec = sp
		units[key] = u
	}

	// Assign our pods to units; the bound ones claim their devices.
	slices.SortFunc(ours, func(a, b *podInfo) int {
		return cmp.Or(cmp.Compare(a.pod.CreationTimestamp.UnixNano(), b.pod.CreationTimestamp.UnixNano()), cmp.Compare(a.pod.Namespace, b.pod.Namespace), cmp.Compare(a.pod.Name, b.pod.Name))
	})
	for _, pi := range ours {
		key := unitOf[pi]
		u := units[key]
		st := ns[pi.node]
		if u == nil { // a skipped unit: its bound pods keep their GPUs
			if st != nil && pi.bound() {
				if len(pi.devices) > 0 && validIndices(pi.devices, st.gpus) {
					for _, d := range pi.devices {
						st.removed[d] = true
					}
				} else {
					st.foreign += gpuCount(&pi.pod.Spec)
				}
			}
			continue
		}
		if pi.bound() {
			switch {
			case st == nil || !st.ready:
				s.lost = append(s.lost, pi.pod)
				continue
			case len(pi.devices) != u.perPod || !validIndices(pi.devices, st.gpus) || slices.ContainsFunc(pi.devices, func(d int) bool { return st.holder[d] != nil || st.removed[d] }):
				s.conflicting = append(s.conflicting, pi.pod)
				st.foreign += gpuCount(&pi.pod.Spec)
				continue
			}
			for _, d := range pi.devices {
				st.holder[d] = pi
			}
		}
		u.pods = append(u.pods, pi)
	}

	// Build the cluster.
	for _, name := range slices.Sorted(maps.Keys(ns)) {
		st := ns[name]
		if st.gpus > 0 {
			s.hidden.present(st.typ)
		}
		if !st.ready || st.gpus <= 0 {
			s.hidden.add(st.typ, HiddenNotReady, st.gpus)
			continue
		}
		s.offered[name] = st.schedulable
		// Foreign GPUs take the highest free indices.
		hide := map[int]bool{}
		for i, left := st.gpus-1, st.foreign+st.unhealthy; i >= 0 && left > 0; i-- {
			if st.holder[i] == nil && !st.removed[i] {
				hide[i] = true
				left--
			}
		}
		node := accel.Node{Name: name}
		for i := 0; i < st.gpus; i++ {
			if st.removed[i] || hide[i] || (!st.schedulable && st.holder[i] == nil) {
				continue
			}
			node.Devices = append(node.Devices, accel.Device{ID: deviceID(name, i), Node: name, Index: i,
				Product: st.product, Type: st.typ, Healthy: true, NUMANode: -1})
		}
		if len(node.Devices) > 0 {
			s.cluster.Nodes = append(s.cluster.Nodes, node)
			s.capacity[st.typ] += len(node.Devices)
		}
		s.hidden.countNode(st.node, opt.toleratedTaints, st.typ, st.gpus, len(st.holder), st.removed, st.terminating, len(hide), st.unhealthy)
	}

	// Units become scheduler jobs; half-bound gangs are broken.
	for _, k := range slices.Sorted(maps.Keys(units)) {
		u := units[k]
		slices.SortStableFunc(u.pods, func(a, b *podInfo) int {
			if a.bound() != b.bound() {
				if a.bound() {
					return -1
				}
				return 1
			}
			return 0
		})
		nb := 0
		for _, p := range u.pods {
			if p.bound() {
				nb++
			}
		}
		if u.svcUnit != nil {
			for _, p := range u.pods[:nb] {
				for _, d := range p.devices {
					u.held = append(u.held, deviceID(p.node, d))
				}
			}
			slices.Sort(u.held)
			s.services = append(s.services, u)
			continue
		}
		minPods := u.size
		if u.spec.kind != scheduler.Rigid {
			minPods = u.spec.minReplicas
		}
		if nb > 0 && nb < minPods {
			for _, p := range u.pods[:nb] {
				s.broken = append(s.broken, p.pod)
			}
			u.pods = u.pods[nb:]
			nb = 0
		}
		for _, p := range u.pods[:nb] {
			for _, d := range p.devices {
				u.held = append(u.held, deviceID(p.node, d))
			}
		}
		if err := checkGang(u, nb, func(node string) accel.TypeKey { return ns[node].typ }); err != nil {
			// Its running pods keep their GPUs; it is not scheduled until
			// fixed.
			s.withhold(u.held)
			s.skipped = append(s.skipped, skippedUnit{key: u.key, obj: u.regarding(), err: err})
			continue
		}
		u.sj = u.toJob()
		if len(u.sj.Types) > 0 {
			var ok []accel.TypeKey
			for _, t := range u.sj.Types {
				if s.capacity[t] > 0 {
					ok = append(ok, t)
				}
			}
			if len(ok) == 0 {
				// Its running pods (if any) keep their GPUs: offer them to
				// no one else.
				s.withhold(u.held)
				s.waitingNoType = append(s.waitingNoType, u)
				continue
			}
			u.sj.Types = ok
		}
		if u.sj.Kind == scheduler.Rigid && u.size == 0 {
			continue // nothing to run (a Job with parallelism 0 or all completions done)
		}
		s.units = append(s.units, u)
		if len(u.held) > 0 {
			slices.Sort(u.held)
			u.heldWorkers = heldWorkers(u, nb)
			s.current = append(s.current, placement.Assignment{Job: string(u.key), Devices: u.held, Workers: u.heldWorkers})
		}
	}
	return s
}

func validIndices(idx []int, n int) bool {
	for _, d := range idx {
		if d < 0 || d >= n {
			return false
		}
	}
	return true
}

// unitSpec reads a Job's (or pod group's) scheduling annotations, its
// queue and its GPUs per pod, and reports every problem at once, not only
// the first: a GPU type neither in the catalog nor on a node is one.
func unitSpec(ann map[string]string, namespace string, labels map[string]string, perPod int, nodeTypes map[accel.TypeKey]bool, opt snapshotOptions) (jobSpec, error) {
	sp, err := parseSpec(ann)
	errs := []error{err, checkKnownTypes(sp.types, nodeTypes)}
	if opt.queueOf != nil {
		q, qerr := opt.queueOf(namespace, labels)
		sp.queue = q
		errs = append(errs, qerr)
	}
	errs = append(errs, checkPerPod(sp, perPod))
	if opt.topologyOf != nil {
		var terr error
		sp.topology, terr = opt.topologyOf(ann, perPod)
		errs = append(errs, terr)
	}
	return sp, errors.Join(errs...)
}

// checkPerPod checks a unit's GPUs per pod: at least one, and exactly one
// for elastic and adaptive units (one replica per GPU).
func checkPerPod(sp jobSpec, perPod int) error {
	if perPod < 1 {
		return fmt.Errorf("%w: the pod template asks for no %s", ErrAnnotation, ResourceGPU)
	}
	if sp.workers > 0 && perPod != 1 {
		return fmt.Errorf("%w: %s=%d needs pods of one %s each (each pod hosts its share of the workers on its GPU), not %d", ErrAnnotation, AnnotationWorkers, sp.workers, ResourceGPU, perPod)
	}
	if sp.kind != scheduler.Rigid && perPod != 1 {
		return fmt.Errorf("%w: %s=%s needs pods of one %s each, not %d", ErrAnnotation, AnnotationKind, sp.kind, ResourceGPU, perPod)
	}
	return nil
}

// toJob returns the unit as a scheduler.Job (without a measured model).
func (u *unit) toJob() scheduler.Job {
	sp := u.spec
	j := scheduler.Job{ID: string(u.key), Weight: sp.weight, Priority: sp.priority, Kind: sp.kind,
		NonPreemptible: !sp.preemptible, Types: slices.Clone(sp.types), Queue: sp.queue,
		Deadline: sp.deadline, DelayTolerant: sp.tolerant, Workers: sp.workers, Tier: sp.tier}
	if u.job != nil {
		j.Submitted = u.job.CreationTimestamp.Time
		j.Restarts = restartsOf(u.job)
	} else if len(u.pods) > 0 {
		j.Submitted = u.pods[0].pod.CreationTimestamp.Time
	}
	switch sp.kind {
	case scheduler.Rigid:
		n := u.size * u.perPod
		j.Requested, j.MinReplicas, j.MaxReplicas = n, n, n
	default:
		j.Kind = scheduler.Elastic // Adaptive once a model is known
		j.MinReplicas, j.MaxReplicas = sp.minReplicas, sp.maxReplicas
		j.Requested = sp.minReplicas
	}
	return j
}

// restartsOf reads a Job's AnnotationRestarts (0 when absent or not a
// non-negative integer).
func restartsOf(job *batchv1.Job) int {
	n, err := strconv.Atoi(job.Annotations[AnnotationRestarts])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// objectRef is an API object Events can be recorded on.
type objectRef = runtime.Object

func joinTypes(ts []accel.TypeKey) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ",")
}

// withhold takes devices (by ID) out of the offered cluster.
func (s *snapshot) withhold(ids []string) {
	if len(ids) == 0 {
		return
	}
	for i := range s.cluster.Nodes {
		n := &s.cluster.Nodes[i]
		n.Devices = slices.DeleteFunc(n.Devices, func(d accel.Device) bool {
			if slices.Contains(ids, d.ID) {
				s.capacity[d.Type]--
				return true
			}
			return false
		})
	}
	s.cluster.Nodes = slices.DeleteFunc(s.cluster.Nodes, func(n accel.Node) bool { return len(n.Devices) == 0 })
}
