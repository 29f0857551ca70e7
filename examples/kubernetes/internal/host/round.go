package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// Round is what one round saw and did.
type Round struct {
	// Start is when the round began (wall clock) and Duration how long it
	// took, apply included.
	Start    time.Time
	Duration time.Duration
	// Snapshot, Schedule and Apply split Duration: building the Input from
	// the informers, the scheduler's Schedule call, and the API writes
	// (with the rollbacks owed from earlier rounds).
	Snapshot, Schedule, Apply time.Duration
	// Plan is the scheduler's plan (empty when Schedule failed).
	Plan scheduler.Plan
	// Binds counts pods bound; BindFailures binds that failed (their
	// units were rolled back).
	Binds, BindFailures int
	// Evictions counts pods evicted or deleted by the round, for any
	// reason (plan, lost node, half-bound gang, rollback, extra pod).
	Evictions int
	// Patches counts Job and pod patches.
	Patches int
	// Skipped are the units whose annotations or pods are malformed.
	Skipped []JobKey
	// Deferred are the units whose binds wait for a later round: their
	// pods are not created yet, or their devices are still held by pods
	// being evicted.
	Deferred []JobKey
}

// unitPlan is how one decision is applied.
type unitPlan struct {
	u        *unit
	d        scheduler.Decision
	evict    []*podInfo
	evictWhy string
	slots    []bindRecord
	bind     []*podInfo
	extra    []*podInfo // pending pods beyond the target, deleted
	// relabel are the running pods of a W-job the plan keeps whose
	// logical workers change (their annotations are patched).
	relabel    []relabel
	targetPods int
	deferred   string
	bindErr    error
}

// relabel is a kept pod of a W-job and the workers it hosts from now on.
type relabel struct {
	p     *podInfo
	share workerShare
}

// round runs one round under ctx: assembly (the Input from the
// informers), planning (Schedule) and applying (the API writes).
func (h *Host) round(ctx context.Context) (r Round, err error) {
	h.roundMu.Lock()
	defer h.roundMu.Unlock()
	r = Round{Start: time.Now()}
	defer func() {
		r.Duration = time.Since(r.Start)
		h.m.roundDuration.Observe(r.Duration.Seconds())
		h.m.rounds.Inc()
	}()
	h.retryRollback(ctx, &r)
	t0 := time.Now()
	a, err := h.assemble(&r)
	if err != nil {
		return r, err
	}
	t1 := time.Now()
	r.Snapshot = t1.Sub(t0)
	h.serviceRound(ctx, a)
	plan, err := h.plan(ctx, a.in)
	if err != nil {
		h.m.errors.WithLabelValues("schedule").Inc()
		h.deleteAll(ctx, a.cleanup, &r)
		return r, fmt.Errorf("host: schedule: %w", err)
	}
	a.snap.explainWaits(plan.Decisions, a.byKey)
	r.Plan = plan
	t2 := time.Now()
	r.Schedule = t2.Sub(t1)
	h.apply(ctx, a, plan, &r)
	r.Apply = time.Since(t2)
	return r, nil
}

// assembly is a round's view of the cluster: the snapshot, the Input built
// from it, and the clean-ups it found.
type assembly struct {
	snap    *snapshot
	in      scheduler.Input
	byKey   map[JobKey]*unit
	cleanup []deletion
	// serviceBinds are the service replica pods the round binds.
	serviceBinds []serviceBind
}

// assemble builds the round's Input from the informers only (no API call),
// and warns once about each unit skipped for malformed annotations.
func (h *Host) assemble(r *Round) (*assembly, error) {
	nodes, err := h.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("host: list nodes: %w", err)
	}
	pods, err := h.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("host: list pods: %w", err)
	}
	jobs, err := h.jobs.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("host: list jobs: %w", err)
	}
	now := h.cfg.Now()
	as := h.pruneState(pods)
	opts := snapshotOptions{schedulerName: h.cfg.SchedulerName, namespace: h.cfg.Namespace,
		toleratedTaints: h.cfg.ToleratedTaints, now: now, bindingKey: h.key}
	qc := h.queueConfig()
	if qc != nil {
		opts.queueOf = qc.QueueOf
	}
	opts.nodeTypes = nodeTypesOf(nodes)
	opts.serviceOf, opts.services = h.servicePods(opts.nodeTypes, pods)
	if h.topo != nil {
		h.topo.round(h, nodes)
		opts.topologyOf = h.topo.check
	}
	snap := buildSnapshot(nodes, pods, jobs, opts, as)
	if h.topo != nil {
		h.topo.setJobs(snap, len(as.deleting) > 0)
	}
	h.noteRefusals(snap.refused)

	for _, sk := range snap.skipped {
		r.Skipped = append(r.Skipped, sk.key)
		if msg := errorText(sk.err); h.state.warned[sk.key] != msg {
			h.state.warned[sk.key] = msg
			h.m.errors.WithLabelValues("annotation").Inc()
			h.log.Warn("job skipped", "job", sk.key, "err", sk.err)
			if sk.obj != nil {
				h.recorder.Eventf(sk.obj, nil, corev1.EventTypeWarning, "InvalidAnnotation", "Skip", "%s; the job is not scheduled until it is fixed", truncate(msg, 900))
			}
		}
	}
	for k := range h.state.warned {
		if !slices.Contains(r.Skipped, k) {
			delete(h.state.warned, k)
		}
	}

	a := &assembly{snap: snap, byKey: make(map[JobKey]*unit, len(snap.units))}
	// Clean-ups the snapshot found: pods on lost nodes, half-bound gangs,
	// pods whose devices another pod holds.
	for _, p := range snap.lost {
		a.cleanup = append(a.cleanup, deletion{pod: p, force: true, why: "node-lost"})
	}
	for _, p := range snap.broken {
		a.cleanup = append(a.cleanup, deletion{pod: p, why: "half-bound"})
	}
	for _, p := range snap.conflicting {
		a.cleanup = append(a.cleanup, deletion{pod: p, why: "conflict"})
	}

	a.in = scheduler.Input{Cluster: snap.cluster, Current: snap.current, Now: now}
	if qc != nil {
		a.in.Queues = qc.Queues
	}
	a.in.Carbon = h.carbonForecast(now)
	h.countUsed(snap.current, now)
	a.in.Jobs = h.inputJobs(snap, a.byKey)
	if h.slow != nil {
		a.in.Speeds = h.slow.round(snap.cluster, snap.current)
	}
	return a, nil
}

// inputJobs returns the snapshot's units as the scheduler's jobs, with
// their models, and indexes the units by key in byKey.
func (h *Host) inputJobs(snap *snapshot, byKey map[JobKey]*unit) []scheduler.Job {
	jobs := make([]scheduler.Job, 0, len(snap.units))
	even := map[string]*goodput.WorkerModel{} // W-jobs' default models, by W and types
	for _, u := range snap.units {
		j := u.sj
		byKey[u.key] = u
		if w := u.spec.work; w > 0 {
			j.RemainingWork = max(w-h.state.used[u.key], 0).Seconds()
		}
		if j.Workers > 0 {
			j.Speedup = h.workerSpeedup(u, snap, even)
			jobs = append(jobs, j)
			continue
		}
		if h.cfg.Models != nil && u.spec.kind != scheduler.Rigid {
			if s, ok := h.cfg.Models.Speedup(u.key); ok && s != nil {
				j.Kind, j.Speedup = scheduler.Adaptive, s
			} else if ps, isPS := h.cfg.Models.(PriorSource); isPS && u.spec.kind == scheduler.Adaptive {
				if s, ok := ps.Prior(u.key); ok && s != nil {
					j.Kind, j.Speedup = scheduler.Adaptive, s
				}
			}
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// workerSpeedup is a W-job's model: its ModelSource's, when that is a
// goodput.GangSpeedup for the job's W, else evenWorkers over the types it
// may use (cached in even for the round).
func (h *Host) workerSpeedup(u *unit, snap *snapshot, even map[string]*goodput.WorkerModel) goodput.Speedup {
	w := u.sj.Workers
	if h.cfg.Models != nil {
		if s, ok := h.cfg.Models.Speedup(u.key); ok {
			if gs, isGang := s.(goodput.GangSpeedup); isGang && gs.Workers() == w {
				return s
			}
		}
	}
	types := u.sj.Types
	if len(types) == 0 {
		for _, t := range slices.Sorted(maps.Keys(snap.capacity)) {
			if snap.capacity[t] > 0 {
				types = append(types, t)
			}
		}
	}
	key := strconv.Itoa(w) + ":" + joinTypes(types)
	if m, ok := even[key]; ok {
		return m
	}
	m, err := evenWorkers(w, types)
	if err != nil {
		return nil // no type offered: the job waits
	}
	even[key] = m
	return m
}

// carbonForecast fetches the round's carbon forecast (Config.Carbon): the
// zero Series, logged once and counted, when there is none.
func (h *Host) carbonForecast(now time.Time) carbon.Series {
	if h.cfg.Carbon == nil {
		return carbon.Series{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.CarbonTimeout)
	defer cancel()
	s, err := h.cfg.Carbon.Forecast(ctx, h.cfg.CarbonZone, now.Truncate(time.Hour), h.cfg.CarbonHorizon)
	if err == nil {
		err = s.Validate()
	}
	if err == nil {
		s, err = s.Convert(carbon.GPerKWh)
	}
	if err == nil {
		var v float64
		if v, err = s.At(now); err == nil {
			h.m.carbon.Set(v)
			if h.state.carbonErr != "" {
				h.log.Info("carbon forecast available again", "zone", h.cfg.CarbonZone)
				h.state.carbonErr = ""
			}
			return s
		}
	}
	h.m.errors.WithLabelValues("carbon").Inc()
	h.m.carbon.Set(math.NaN())
	if msg := err.Error(); msg != h.state.carbonErr {
		h.state.carbonErr = msg
		h.log.Warn("no carbon forecast: delay-tolerant jobs run unshifted until one is available", "zone", h.cfg.CarbonZone, "err", err)
	}
	return carbon.Series{}
}

// countUsed adds the GPU-time each job held since the last round.
func (h *Host) countUsed(current []placement.Assignment, now time.Time) {
	if !h.state.usedAt.IsZero() && now.After(h.state.usedAt) {
		dt := now.Sub(h.state.usedAt)
		for _, a := range current {
			h.state.used[JobKey(a.Job)] += dt * time.Duration(len(a.Devices))
		}
	}
	h.state.usedAt = now
}

// plan calls the scheduler; a misbehaving measured model makes the round
// run without models rather than not at all.
func (h *Host) plan(ctx context.Context, in scheduler.Input) (scheduler.Plan, error) {
	if len(in.Jobs) == 0 {
		return scheduler.Plan{}, nil
	}
	plan, err := h.sched.Schedule(ctx, in)
	if errors.Is(err, scheduler.ErrBadSpeedup) {
		h.log.Warn("a measured model is invalid; this round runs without models", "err", err)
		for i := range in.Jobs {
			if in.Jobs[i].Kind == scheduler.Adaptive {
				in.Jobs[i].Kind, in.Jobs[i].Speedup = scheduler.Elastic, nil
			}
		}
		plan, err = h.sched.Schedule(ctx, in)
	}
	return plan, err
}

// apply carries the plan out: evictions and deletions, binds (each unit
// all or nothing), Job and pod-status patches, Events, the models'
// decisions and the metrics.
func (h *Host) apply(ctx context.Context, a *assembly, plan scheduler.Plan, r *Round) {
	snap := a.snap
	cleanup := a.cleanup
	ups := h.planUnits(a, plan)
	for _, up := range ups {
		if up.deferred != "" && len(up.slots) > 0 {
			r.Deferred = append(r.Deferred, up.u.key)
		}
	}

	// 1. Evictions and deletions.
	for _, up := range ups {
		for _, p := range up.evict {
			cleanup = append(cleanup, deletion{pod: p.pod, why: up.evictWhy, up: up})
		}
		for _, p := range up.extra {
			cleanup = append(cleanup, deletion{pod: p.pod, why: "extra", up: up})
		}
	}
	h.deleteAll(ctx, cleanup, r)

	// 2. Binds, each unit all or nothing.
	h.bindAll(ctx, ups, r)
	h.bindServices(ctx, a, r)

	// 3. Patches, events, models.
	h.patchAll(ctx, ups, r)
	h.markUnschedulable(ctx, ups, snap.waitingNoType)
	for _, up := range ups {
		h.recordDecision(up)
		if up.d.Action != placement.Keep || up.deferred != "" {
			h.log.Debug("decision", "job", up.u.key, "decision", decisionText(up.d), "bind", len(up.bind), "evict", len(up.evict), "deferred", up.deferred)
		}
	}
	for _, u := range snap.waitingNoType {
		msg := waitingNoTypeText(u) + snap.hidden.note(u.spec.types)
		if h.state.said[u.key] != msg {
			h.state.said[u.key] = msg
			if obj := u.regarding(); obj != nil {
				h.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "Waiting", "Schedule", "%s", msg)
			}
		}
	}
	// Forget what was said about units that are gone (finished, deleted).
	live := make(map[JobKey]bool, len(ups)+len(snap.waitingNoType))
	for _, up := range ups {
		live[up.u.key] = true
	}
	for _, u := range snap.waitingNoType {
		live[u.key] = true
	}
	for k := range h.state.said {
		if !live[k] {
			delete(h.state.said, k)
		}
	}
	if h.cfg.Models != nil {
		for _, d := range plan.Decisions {
			h.cfg.Models.Publish(JobKey(d.Job), d)
		}
		if rs, ok := h.cfg.Models.(RoundSink); ok {
			rs.PublishRound(a.in, plan)
		}
	}
	h.recordMetrics(snap, plan)
}

// planUnits plans the apply of each decision: which pods go, which bind
// where; binds onto devices that pods being evicted still hold wait.
func (h *Host) planUnits(a *assembly, plan scheduler.Plan) []*unitPlan {
	ups := make([]*unitPlan, 0, len(plan.Decisions))
	freed := map[string]bool{}
	for _, d := range plan.Decisions {
		u := a.byKey[JobKey(d.Job)]
		if u == nil {
			continue
		}
		up := h.planUnit(u, d)
		for _, p := range up.evict {
			for _, dv := range p.devices {
				freed[deviceID(p.node, dv)] = true
			}
		}
		ups = append(ups, up)
	}
	for _, p := range a.cleanup {
		for _, dv := range a.snap.devices[p.pod.UID] {
			freed[deviceID(p.pod.Spec.NodeName, dv)] = true
		}
	}
	for _, up := range ups {
		if up.deferred == "" && slices.ContainsFunc(up.slots, func(s bindRecord) bool {
			return slices.ContainsFunc(s.devices, func(dv int) bool { return freed[deviceID(s.node, dv)] })
		}) {
			up.deferred = "its devices are still held by pods being evicted"
		}
		if up.deferred != "" && len(up.slots) > 0 {
			up.bind = nil
		}
	}
	return ups
}

// relabels are the kept pods of a W-job whose new share the round writes:
// all of them once the round's binds went through, none while the binds
// wait or after they failed, so that the bound pods' shares keep summing
// to W.
func (up *unitPlan) relabels() []relabel {
	if up.bindErr != nil || (up.deferred != "" && len(up.slots) > 0) {
		return nil
	}
	return up.relabel
}

func waitingNoTypeText(u *unit) string {
	return fmt.Sprintf("waiting: no GPU of the allowed types (%s) is offered", joinTypes(u.spec.types))
}

// recordMetrics sets the gauges from the round's snapshot and plan.
func (h *Host) recordMetrics(snap *snapshot, plan scheduler.Plan) {
	h.m.jobs.Reset()
	h.m.gpus.Reset()
	h.m.queueGPUs.Reset()
	running := 0
	for _, d := range plan.Decisions {
		if d.To > 0 {
			running++
			if len(d.Shares) > 1 {
				for _, s := range d.Shares {
					h.m.gpus.WithLabelValues(string(s.Type)).Add(float64(s.Count))
				}
			} else {
				h.m.gpus.WithLabelValues(string(d.Type)).Add(float64(d.To))
			}
		}
	}
	h.m.jobs.WithLabelValues("running").Set(float64(running))
	h.m.jobs.WithLabelValues("waiting").Set(float64(len(plan.Decisions) - running + len(snap.waitingNoType)))
	h.m.jobs.WithLabelValues("skipped").Set(float64(len(snap.skipped)))
	h.m.setOffered(snap)
	for _, q := range plan.Queues {
		t := string(q.Type)
		for _, m := range []struct {
			name string
			v    int
		}{{"guaranteed", q.Guaranteed}, {"entitled", q.Entitled}, {"used", q.Used}, {"borrowed", q.Borrowed}, {"lent", q.Lent}, {"pending", q.Pending}} {
			h.m.queueGPUs.WithLabelValues(q.Queue, t, m.name).Set(float64(m.v))
		}
	}
}

// markUnschedulable sets PodScheduled=False (reason Unschedulable, the
// decision in the message) on the pending pods of units the plan leaves
// waiting, as kube-scheduler does, so that kubectl describe and the
// Cluster Autoscaler see why they wait. A pod whose condition already says
// so is not written again.
func (h *Host) markUnschedulable(ctx context.Context, ups []*unitPlan, noType []*unit) {
	type mark struct {
		pod *corev1.Pod
		msg string
	}
	var ms []mark
	add := func(u *unit, msg string) {
		for _, p := range u.pods {
			if !p.bound() && !podScheduledSays(p.pod, msg) {
				ms = append(ms, mark{p.pod, msg})
			}
		}
	}
	for _, up := range ups {
		if up.d.To == 0 {
			add(up.u, "goodsched: "+truncate(decisionText(up.d), 900))
		}
	}
	for _, u := range noType {
		add(u, "goodsched: "+waitingNoTypeText(u))
	}
	h.parallel(len(ms), func(i int) {
		m := ms[i]
		body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: m.msg, LastTransitionTime: metav1.Now()}}}})
		if ctx.Err() != nil {
			return
		}
		_, err := h.cfg.Client.CoreV1().Pods(m.pod.Namespace).Patch(ctx, m.pod.Name, k8stypes.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			h.m.errors.WithLabelValues("patch").Inc()
			h.log.Warn("PodScheduled patch failed", "pod", m.pod.Namespace+"/"+m.pod.Name, "err", err)
		}
	})
}

// podScheduledSays reports whether the pod's PodScheduled condition is
// already False with the message.
func podScheduledSays(p *corev1.Pod, msg string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == msg
		}
	}
	return false
}

// planUnit decides which of the unit's pods the decision keeps, evicts and
// binds where.
func (h *Host) planUnit(u *unit, d scheduler.Decision) *unitPlan {
	up := &unitPlan{u: u, d: d}
	want := map[string]bool{}
	if d.To > 0 {
		for _, id := range d.Assignment.Devices {
			want[id] = true
		}
	}
	var bound, pending []*podInfo
	for _, p := range u.pods {
		if p.bound() {
			bound = append(bound, p)
		} else {
			pending = append(pending, p)
		}
	}
	var keep []*podInfo
	same := len(u.held) == len(want) && !slices.ContainsFunc(u.held, func(id string) bool { return !want[id] })
	if u.spec.kind == scheduler.Rigid {
		if same {
			keep = bound
		}
	} else {
		for _, p := range bound {
			if !slices.ContainsFunc(p.devices, func(dv int) bool { return !want[deviceID(p.node, dv)] }) {
				keep = append(keep, p)
			}
		}
	}
	for _, p := range bound {
		if !slices.Contains(keep, p) {
			up.evict = append(up.evict, p)
		}
	}
	switch d.Action {
	case placement.Stop:
		up.evictWhy = "preempt"
	case placement.Shrink:
		up.evictWhy = "shrink"
	default:
		up.evictWhy = "move"
	}
	// Devices to fill: wanted, not held by a kept pod; per node, in index
	// order, in pods' worth.
	held := map[string]bool{}
	for _, p := range keep {
		for _, dv := range p.devices {
			held[deviceID(p.node, dv)] = true
		}
	}
	perNode := map[string][]int{}
	for id := range want {
		if held[id] {
			continue
		}
		node, idx, ok := splitDeviceID(id)
		if !ok {
			up.deferred = "the plan names a device " + id + " the host does not know"
			return up
		}
		perNode[node] = append(perNode[node], idx)
	}
	for _, n := range slices.Sorted(maps.Keys(perNode)) {
		idx := perNode[n]
		slices.Sort(idx)
		if len(idx)%u.perPod != 0 {
			up.deferred = fmt.Sprintf("the plan gives node %s %d GPUs, not a whole number of pods of %d", n, len(idx), u.perPod)
			up.slots = nil
			break
		}
		for i := 0; i < len(idx); i += u.perPod {
			up.slots = append(up.slots, bindRecord{node: n, devices: slices.Clone(idx[i : i+u.perPod])})
		}
	}
	if shares := deviceShares(d); shares != nil {
		for k := range up.slots {
			up.slots[k].share = shares[deviceID(up.slots[k].node, up.slots[k].devices[0])]
		}
		for _, p := range keep {
			if s := shares[deviceID(p.node, p.devices[0])]; s.count > 0 && !s.says(p.pod) {
				up.relabel = append(up.relabel, relabel{p, s})
			}
		}
	}
	up.targetPods = d.To / u.perPod
	if d.To == 0 {
		up.targetPods = u.size
		if u.spec.kind != scheduler.Rigid {
			up.targetPods = u.spec.minReplicas
		}
	}
	if up.deferred == "" && len(up.slots) > 0 {
		if len(pending) < len(up.slots) && u.job == nil && u.spec.kind != scheduler.Rigid && len(pending) > 0 && len(keep)+len(pending) >= u.spec.minReplicas {
			// An elastic pod group whose controller has not followed the
			// target yet: bind the pods there are (the target annotation
			// asks for the rest).
			up.slots = up.slots[:len(pending)]
			up.bind = pending
		} else if len(pending) < len(up.slots) {
			up.deferred = fmt.Sprintf("waiting for %d pods to be created (have %d)", len(up.slots), len(pending))
		} else {
			up.bind = pending[:len(up.slots)]
		}
	}
	// Pending pods beyond the target (the Job controller's replacements
	// after a shrink) are deleted once the Job's parallelism shows the
	// target, so that only the pods the plan keeps remain.
	if u.job != nil && u.spec.kind != scheduler.Rigid && u.job.Spec.Parallelism != nil && int(*u.job.Spec.Parallelism) == up.targetPods {
		if n := len(keep) + len(pending) - up.targetPods; n > 0 {
			from := max(len(pending)-n, len(up.bind))
			up.extra = pending[from:]
		}
	}
	return up
}

func splitDeviceID(id string) (string, int, bool) {
	i := strings.LastIndexByte(id, '/')
	if i <= 0 {
		return "", 0, false
	}
	var n int
	if _, err := fmt.Sscanf(id[i+1:], "%d", &n); err != nil {
		return "", 0, false
	}
	return id[:i], n, true
}

// deletion is one pod the round removes.
type deletion struct {
	pod   *corev1.Pod
	force bool // grace period 0 (the pod's node is gone)
	why   string
	up    *unitPlan
}

// evict removes one pod through the Eviction API, never a plain DELETE:
// the API server then marks the pod with the DisruptionTarget condition, so
// a Job whose podFailurePolicy ignores DisruptionTarget (deploy's samples
// do) does not count the pods goodsched frees as failures towards its
// backoffLimit. force sets a grace period of 0, for pods on lost nodes.
// The UID precondition keeps a replacement pod of the same name safe.
func (h *Host) evict(ctx context.Context, ns, name string, uid k8stypes.UID, force bool) error {
	opts := &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if force {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	return h.cfg.Client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: ns, Name: name},
		DeleteOptions: opts,
	})
}

// deleteAll evicts the pods (for lost nodes with a grace period of 0), in
// parallel.
func (h *Host) deleteAll(ctx context.Context, ds []deletion, r *Round) {
	var mu sync.Mutex
	h.parallel(len(ds), func(i int) {
		d := ds[i]
		p := d.pod
		uid := p.UID
		err := h.evict(ctx, p.Namespace, p.Name, uid, d.force)
		if err != nil && !apierrors.IsNotFound(err) {
			h.m.errors.WithLabelValues("evict").Inc()
			h.log.Warn("evict failed", "pod", p.Namespace+"/"+p.Name, "why", d.why, "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		h.state.deleting[uid] = time.Now()
		r.Evictions++
		h.m.evictions.WithLabelValues(d.why).Inc()
		switch {
		case d.force:
			h.recorder.Eventf(p, nil, corev1.EventTypeWarning, "NodeNotReady", "Delete", "node %s is not ready: deleted so that the job restarts elsewhere", p.Spec.NodeName)
		case d.why == "half-bound":
			h.recorder.Eventf(p, nil, corev1.EventTypeWarning, "HalfBoundGang", "Evict", "its gang is not fully bound: evicted so that the gang restarts whole")
		case d.why == "conflict", d.why == "extra":
		default:
			var related runtime.Object
			if d.up != nil && d.up.u.job != nil {
				related = d.up.u.job
			}
			h.recorder.Eventf(p, related, corev1.EventTypeNormal, eventReason(d.up.d.Action), "Evict", "%s", truncate(decisionText(d.up.d), 900))
		}
	})
}

// bindAll binds the planned pods in parallel; a unit with a failed bind
// has its bound pods deleted (now, and retried next rounds until done).
func (h *Host) bindAll(ctx context.Context, ups []*unitPlan, r *Round) {
	type job struct {
		up *unitPlan
		k  int
	}
	var js []job
	for _, up := range ups {
		for k := range up.bind {
			js = append(js, job{up, k})
		}
	}
	ok := make([]bool, len(js))
	var mu sync.Mutex
	h.parallel(len(js), func(i int) {
		up, k := js[i].up, js[i].k
		mu.Lock()
		failed := up.bindErr != nil
		mu.Unlock()
		if failed {
			return // the gang is rolled back anyway
		}
		p, s := up.bind[k].pod, up.slots[k]
		err := h.bind(ctx, p, s)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if up.bindErr == nil {
				up.bindErr = fmt.Errorf("bind %s to %s: %w", p.Name, s.node, err)
			}
			// The bind may have landed (a lost response): delete the pod too.
			h.state.rollback[p.UID] = podRef{p.Namespace, p.Name, p.UID}
			return
		}
		ok[i] = true
		h.state.binds[p.UID] = timedBind{bindRecord: s, at: time.Now()}
	})
	for i, j := range js {
		if j.up.bindErr == nil {
			if ok[i] {
				r.Binds++
				h.m.binds.Inc()
			}
			continue
		}
		if ok[i] {
			r.Binds++
			h.m.binds.Inc()
			p := j.up.bind[j.k].pod
			h.state.rollback[p.UID] = podRef{p.Namespace, p.Name, p.UID}
		}
	}
	for _, up := range ups {
		if up.bindErr != nil {
			n := 0
			for range up.bind {
				n++
			}
			r.BindFailures++
			h.m.errors.WithLabelValues("bind").Inc()
			h.log.Warn("gang bind failed; rolling back", "job", up.u.key, "err", up.bindErr)
			if obj := up.u.regarding(); obj != nil {
				h.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "BindFailed", "Bind", "%s; the %d pods of this round are deleted and the gang waits", truncate(up.bindErr.Error(), 700), n)
			}
		}
	}
	if len(h.state.rollback) > 0 && ctx.Err() == nil {
		h.retryRollback(ctx, r)
	}
}

// retryRollback deletes the pods the host owes a deletion (gangs whose
// binds failed).
func (h *Host) retryRollback(ctx context.Context, r *Round) {
	refs := make([]podRef, 0, len(h.state.rollback))
	for _, p := range h.state.rollback {
		refs = append(refs, p)
	}
	slices.SortFunc(refs, func(a, b podRef) int { return cmp.Compare(a.namespace+"/"+a.name, b.namespace+"/"+b.name) })
	var mu sync.Mutex
	h.parallel(len(refs), func(i int) {
		p := refs[i]
		uid := p.uid
		err := ctx.Err()
		if err == nil {
			err = h.evict(ctx, p.namespace, p.name, uid, false)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			h.m.errors.WithLabelValues("delete").Inc()
			return
		}
		delete(h.state.rollback, uid)
		delete(h.state.binds, uid)
		h.state.deleting[uid] = time.Now()
		if err == nil {
			r.Evictions++
			h.m.evictions.WithLabelValues("rollback").Inc()
		}
	})
}

// patchAll writes each Job's annotations and (elastic Jobs) parallelism,
// and each elastic pod group's target, where they differ.
func (h *Host) patchAll(ctx context.Context, ups []*unitPlan, r *Round) {
	type patch struct {
		ns, name string
		body     []byte
		pod      bool     // a pod's annotations, through its status subresource
		workers  *relabel // a W-job's kept pod, told its new workers
	}
	var ps []patch
	for _, up := range ups {
		u := up.u
		rls := up.relabels()
		for k := range rls {
			rl := &rls[k]
			body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
				AnnotationPodWorkers: strconv.Itoa(rl.share.count), AnnotationPodWorkerRanks: rl.share.ranks()}}})
			ps = append(ps, patch{rl.p.pod.Namespace, rl.p.pod.Name, body, true, rl})
		}
		if u.job == nil {
			if u.spec.kind == scheduler.Rigid {
				continue
			}
			want := fmt.Sprint(up.targetPods)
			body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationTargetReplicas: want}}})
			for _, p := range u.pods {
				if p.pod.Annotations[AnnotationTargetReplicas] != want {
					ps = append(ps, patch{p.pod.Namespace, p.pod.Name, body, true, nil})
				}
			}
			continue
		}
		ann := map[string]any{}
		if up.d.Action != placement.Keep {
			if t := annotationText(up.d); u.job.Annotations[AnnotationLastDecision] != t {
				ann[AnnotationLastDecision] = t
			}
		}
		if restarted(up) {
			ann[AnnotationRestarts] = strconv.Itoa(restartsOf(u.job) + 1)
		}
		if bp := batchPlanJSON(up.d.Batch); bp != u.job.Annotations[AnnotationBatchPlan] {
			if bp == "" {
				ann[AnnotationBatchPlan] = nil
			} else {
				ann[AnnotationBatchPlan] = bp
			}
		}
		body := map[string]any{}
		if len(ann) > 0 {
			body["metadata"] = map[string]any{"annotations": ann}
		}
		if u.spec.kind != scheduler.Rigid && up.bindErr == nil {
			if u.job.Spec.Parallelism == nil || int(*u.job.Spec.Parallelism) != up.targetPods {
				body["spec"] = map[string]any{"parallelism": up.targetPods}
			}
		}
		if len(body) == 0 {
			continue
		}
		data, _ := json.Marshal(body)
		ps = append(ps, patch{u.job.Namespace, u.job.Name, data, false, nil})
	}
	var mu sync.Mutex
	h.parallel(len(ps), func(i int) {
		p := ps[i]
		var err error
		if err = ctx.Err(); err == nil {
			if p.pod {
				// Through the status subresource, as kube-scheduler writes
				// pods: the host may not patch pod specs.
				_, err = h.cfg.Client.CoreV1().Pods(p.ns).Patch(ctx, p.name, k8stypes.MergePatchType, p.body, metav1.PatchOptions{}, "status")
			} else {
				_, err = h.cfg.Client.BatchV1().Jobs(p.ns).Patch(ctx, p.name, k8stypes.MergePatchType, p.body, metav1.PatchOptions{})
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			switch {
			case apierrors.IsNotFound(err):
			case apierrors.IsForbidden(err):
				// A namespace that did not opt in (deploy/namespace-rbac.yaml):
				// its Jobs run as the plan says but are not resized.
				h.m.errors.WithLabelValues("patch-forbidden").Inc()
				if !h.state.forbidden[p.ns] {
					h.state.forbidden[p.ns] = true
					h.log.Warn("Job patches are forbidden in this namespace: bind goodsched-scheduler-jobs there (deploy/namespace-rbac.yaml) to resize its Jobs", "namespace", p.ns, "err", err)
				}
			default:
				h.m.errors.WithLabelValues("patch").Inc()
				h.log.Warn("patch failed", "object", p.ns+"/"+p.name, "err", err)
			}
			return
		}
		r.Patches++
		if p.workers != nil {
			h.state.workers[p.workers.p.pod.UID] = timedWorkers{workers: p.workers.share.count, at: time.Now()}
		}
	})
}

// restarted reports whether the round re-allocates a running job: a
// grow, shrink, move or preemption of which the round evicts or binds
// pods. A grow still waiting for its pods (or for devices being freed),
// or rolled back after a failed bind, is decided again next round and
// counted then.
func restarted(up *unitPlan) bool {
	if up.d.From == 0 || up.bindErr != nil || (len(up.evict) == 0 && len(up.bind) == 0) {
		return false
	}
	switch up.d.Action {
	case placement.Grow, placement.Shrink, placement.Move, placement.Stop:
		return true
	}
	return false
}

// recordDecision records a decision that changes something as an Event
// on the unit, naming the pods it binds.
func (h *Host) recordDecision(up *unitPlan) {
	d := up.d
	rls := up.relabels()
	if d.Action == placement.Keep && len(up.bind) == 0 && len(rls) == 0 {
		return
	}
	text := decisionText(d)
	if up.bindErr == nil && len(up.bind) > 0 {
		var b strings.Builder
		b.WriteString("; bound ")
		for k, p := range up.bind {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s→%s[%s]", p.pod.Name, up.slots[k].node, formatDevices(up.slots[k].devices))
			if n := up.slots[k].share.count; n > 0 {
				fmt.Fprintf(&b, " (%d workers)", n)
			}
		}
		text += b.String()
	} else if up.deferred != "" && len(up.slots) > 0 {
		text += "; binds wait: " + up.deferred
	}
	if len(rls) > 0 {
		// A W-job's running pods whose share of its workers changed.
		var b strings.Builder
		b.WriteString("; workers now ")
		for k, rl := range rls {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d (ranks %s)", rl.p.pod.Name, rl.share.count, rl.share.ranks())
		}
		text += b.String()
	}
	if h.state.said[up.u.key] == text {
		return
	}
	h.state.said[up.u.key] = text
	if obj := up.u.regarding(); obj != nil {
		h.recorder.Eventf(obj, nil, corev1.EventTypeNormal, eventReason(d.Action), "Schedule", "%s", truncate(text, 1000))
	}
}

// pruneState forgets assumptions the informers now show (or that are
// stale) and returns the ones left.
func (h *Host) pruneState(pods []*corev1.Pod) assumed {
	seen := make(map[k8stypes.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		seen[p.UID] = p
	}
	cutoff := time.Now().Add(-2 * time.Minute)
	as := assumed{binds: map[k8stypes.UID]bindRecord{}, deleting: map[k8stypes.UID]bool{}, workers: map[k8stypes.UID]int{}}
	for uid, w := range h.state.workers {
		p := seen[uid]
		if p == nil || p.Annotations[AnnotationPodWorkers] == strconv.Itoa(w.workers) || w.at.Before(cutoff) {
			delete(h.state.workers, uid)
			continue
		}
		as.workers[uid] = w.workers
	}
	for uid, b := range h.state.binds {
		p := seen[uid]
		if p == nil || p.Spec.NodeName != "" || b.at.Before(cutoff) {
			delete(h.state.binds, uid)
			continue
		}
		as.binds[uid] = b.bindRecord
	}
	for uid, at := range h.state.deleting {
		p := seen[uid]
		if p == nil || p.DeletionTimestamp != nil || at.Before(cutoff) {
			delete(h.state.deleting, uid)
			continue
		}
		as.deleting[uid] = true
	}
	for uid := range h.state.rollback {
		as.deleting[uid] = true
	}
	for k := range h.state.refusedSeen {
		if seen[k.uid] == nil {
			delete(h.state.refusedSeen, k)
		}
	}
	return as
}

// parallel runs f(0..n-1) on up to BindWorkers goroutines (client-go's
// workqueue.ParallelizeUntil; every piece runs: the writes check their own
// context).
func (h *Host) parallel(n int, f func(int)) {
	workqueue.ParallelizeUntil(context.Background(), h.cfg.BindWorkers, n, f)
}

func eventReason(a placement.Action) string {
	switch a {
	case placement.Start:
		return "Started"
	case placement.Grow:
		return "Grown"
	case placement.Shrink:
		return "Shrunk"
	case placement.Move:
		return "Moved"
	case placement.Stop:
		return "Preempted"
	case placement.Queue:
		return "Waiting"
	}
	return "Kept"
}

// decisionText is a decision in words, for Events.
func decisionText(d scheduler.Decision) string {
	s := fmt.Sprintf("%s %d→%d", d.Action, d.From, d.To)
	switch {
	case len(d.Shares) > 1:
		s += fmt.Sprintf(" %s on %d node(s)", sharesText(d.Shares), d.Nodes)
	case d.To > 0:
		s += fmt.Sprintf(" %s on %d node(s)", d.Type, d.Nodes)
	}
	s += " (" + d.Reason.String() + ")"
	if d.Message != "" {
		s += ": " + d.Message
	}
	return s
}

// annotationText is the decision as goodsched.io/last-decision holds it.
func annotationText(d scheduler.Decision) string { return truncate(decisionText(d), 1000) }

// batchPlanJSON is goodsched.io/batch-plan's value: the plan's fields as
// JSON, the goodput rounded to 4 significant digits so that a refitted
// model does not rewrite it every round; "" for a zero plan.
func batchPlanJSON(b goodput.BatchPlan) string {
	if b.Batch == 0 && b.Local == 0 {
		return ""
	}
	if b.Goodput != 0 && !math.IsNaN(b.Goodput) && !math.IsInf(b.Goodput, 0) {
		p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(b.Goodput))))
		b.Goodput = math.Round(b.Goodput*p) / p
	} else {
		b.Goodput = 0
	}
	data, err := json.Marshal(b)
	if err != nil {
		return ""
	}
	return string(data)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

// noteRefusals counts and logs each pod's refused annotation once.
func (h *Host) noteRefusals(rs []refusal) {
	for _, r := range rs {
		k := refusalKey{r.pod.UID, r.reason}
		if h.state.refusedSeen[k] {
			continue
		}
		h.state.refusedSeen[k] = true
		h.m.refused.WithLabelValues(r.reason).Inc()
		h.log.Warn("annotation refused", "pod", r.pod.Namespace+"/"+r.pod.Name, "reason", r.reason, "err", r.err)
	}
}

// bind binds pod p to s's node with the signed devices annotation (and,
// for a W-job's pod, its share of the logical workers); it does nothing
// but return ctx's error once ctx is done.
func (h *Host) bind(ctx context.Context, p *corev1.Pod, s bindRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	devs := formatDevices(s.devices)
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID,
			Annotations: map[string]string{AnnotationDevices: devs, AnnotationBinding: bindingMAC(h.key, p.UID, s.node, devs)}},
		Target: corev1.ObjectReference{Kind: "Node", Name: s.node},
	}
	if s.share.count > 0 {
		b.Annotations[AnnotationPodWorkers] = strconv.Itoa(s.share.count)
		b.Annotations[AnnotationPodWorkerRanks] = s.share.ranks()
	}
	return h.cfg.Client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
}
