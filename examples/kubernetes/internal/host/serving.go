package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/tiers"
	"github.com/goodsched/goodsched/serving"
)

// Annotations of an apps/v1 Deployment that goodsched scales as an
// inference service (with Config.Serving). Its pods name the scheduler
// (spec.schedulerName) and ask for nvidia.com/gpu (a replica's GPUs, on one
// node). AnnotationMinReplicas and AnnotationMaxReplicas bound its replica
// count and AnnotationGPUTypes the types its replicas may use; the other
// Job annotations do not apply.
const (
	// AnnotationService "true" makes the Deployment an inference service:
	// its replica count is decided by goodsched's autoscaler from its
	// pods' vLLM metrics and applied through its scale subresource, and
	// its replicas take their GPUs before training does.
	AnnotationService = "goodsched.io/service"
	// AnnotationModel names the model served (default: the Deployment's
	// name); services of one model share nothing yet.
	AnnotationModel = "goodsched.io/model"
	// AnnotationTTFTP90 is the service's objective for the 90th
	// percentile of the time to first token, a positive Go duration
	// ("1s"); required.
	AnnotationTTFTP90 = "goodsched.io/ttft-p90"
	// AnnotationTPOTP90 is the objective for the 90th percentile of the
	// time per output token, a positive Go duration ("50ms"); required.
	AnnotationTPOTP90 = "goodsched.io/tpot-p90"
	// AnnotationStartup is a replica's start-up time, from asking for it to
	// its first request (image pull, weight loading), a Go duration
	// (default 60s): the autoscaler provisions that far ahead and holds a
	// scale-down that long.
	AnnotationStartup = "goodsched.io/startup"
	// AnnotationMetricsURL is the template of a pod's metrics URL, where
	// {ip}, {pod} and {namespace} are replaced by the pod's IP, name and
	// namespace (default: ServingConfig.MetricsURL).
	AnnotationMetricsURL = "goodsched.io/metrics-url"
)

// DefaultMetricsURL is the default of ServingConfig.MetricsURL: vLLM's
// OpenAI server's port and path.
const DefaultMetricsURL = "http://{ip}:8000/metrics"

// DefaultStartup is a service's replica start-up time when
// AnnotationStartup is absent.
const DefaultStartup = 60 * time.Second

// ServingConfig turns on inference services (Config.Serving): Deployments
// annotated AnnotationService are scaled by an autoscaler of package
// serving from their pods' vLLM metrics, and their replicas enter every
// round as a pinned rigid job, as scheduler/sim's Services do.
type ServingConfig struct {
	// MetricsURL is the template of a pod's metrics URL ({ip}, {pod},
	// {namespace}); "" = DefaultMetricsURL. AnnotationMetricsURL
	// overrides it per Deployment.
	MetricsURL string
	// Timeout bounds one scrape; 0 = 2 s.
	Timeout time.Duration
	// HTTPClient scrapes the endpoints; nil = a client of its own.
	HTTPClient *http.Client
	// Autoscaler makes a service's autoscaler when the host first sees
	// it (and again when its annotations change), given the service and
	// the profile the host feeds from the pods' metrics; nil =
	// goodsched's serving.Predictive with its defaults.
	Autoscaler func(serving.Service, *serving.Profile) serving.Autoscaler
}

// minDecisionGap is the least time between two decisions of a service:
// rounds closer together reuse the last one.
const minDecisionGap = time.Second

// servingState is the host's state of its services (guarded by roundMu,
// but for the informer's lister).
type servingState struct {
	deploys  appslisters.DeploymentLister
	client   *http.Client
	services map[JobKey]*serviceState
	// replicas is goodsched_service_replicas{service,state}.
	replicas *prometheus.GaugeVec
}

// serviceState is what the host remembers of one service between rounds.
type serviceState struct {
	uid     types.UID
	svc     serving.Service
	scaler  serving.Autoscaler
	profile *serving.Profile
	prev    map[string]vllmSample // pod name → its last scrape
	at      time.Time             // of prev
	errText string                // the last scrape error, logged once
	// reserved are the devices picked for each pending replica pod, kept
	// while the pods that held them are evicted.
	reserved map[types.UID]reservation
}

type reservation struct {
	slot bindRecord
	at   time.Time
}

// serviceUnit is a service Deployment as the snapshot reads it.
type serviceUnit struct {
	deploy *appsv1.Deployment
	spec   jobSpec
	svc    serving.Service
	url    string
	err    error // malformed annotations: skipped, like a Job
}

// watchServices adds the Deployment informer (Config.Serving).
func (h *Host) watchServices() error {
	sc := h.cfg.Serving
	if sc.Timeout < 0 {
		return fmt.Errorf("%w: Serving.Timeout is negative (%v)", ErrConfig, sc.Timeout)
	}
	if sc.Timeout == 0 {
		sc.Timeout = 2 * time.Second
	}
	if sc.MetricsURL == "" {
		sc.MetricsURL = DefaultMetricsURL
	}
	client := sc.HTTPClient
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
	}
	f := h.factory
	if h.extra != nil {
		f = h.extra
	}
	inf := f.Apps().V1().Deployments()
	h.svc = &servingState{deploys: inf.Lister(), client: client, services: map[JobKey]*serviceState{},
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_service_replicas",
			Help: "Each inference service's replicas at its last read, by service (namespace/name) and state (desired: the Deployment's count after the decision; ready: pods read)."}, []string{"service", "state"})}
	if err := h.reg.Register(h.svc.replicas); err != nil {
		return fmt.Errorf("%w: Registry: %w", ErrConfig, err)
	}
	h.synced = append(h.synced, inf.Informer().HasSynced)
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Kick() },
		DeleteFunc: func(any) { h.Kick() },
		UpdateFunc: func(o, n any) {
			a, ok1 := o.(*appsv1.Deployment)
			b, ok2 := n.(*appsv1.Deployment)
			if !ok1 || !ok2 || !equalInt32(a.Spec.Replicas, b.Spec.Replicas) || !maps.Equal(a.Annotations, b.Annotations) {
				h.Kick()
			}
		},
	})
	if err != nil {
		return fmt.Errorf("host: event handler: %w", err)
	}
	return nil
}

// serviceKey is the unit key of a service Deployment: its namespace and
// "service/" + its name (scheduler/sim's ServiceJobID), so that it never
// collides with a Job or pod group.
func serviceKey(d *appsv1.Deployment) JobKey {
	return JobKey(d.Namespace + "/service/" + d.Name)
}

// servicePods maps the pods of service Deployments to their service, and
// reads each service's annotations (nil maps without Config.Serving);
// nodeTypes are the nodes' GPU types (nodeTypesOf).
func (h *Host) servicePods(nodeTypes map[accel.TypeKey]bool, pods []*corev1.Pod) (map[types.UID]JobKey, map[JobKey]*serviceUnit) {
	if h.svc == nil {
		return nil, nil
	}
	deploys, err := h.svc.deploys.List(labels.Everything())
	if err != nil {
		return nil, nil
	}
	units := map[JobKey]*serviceUnit{}
	type sel struct {
		d   *appsv1.Deployment
		sel labels.Selector
	}
	byNS := map[string][]sel{}
	for _, d := range deploys {
		if on, _ := strconv.ParseBool(d.Annotations[AnnotationService]); !on || d.Spec.Template.Spec.SchedulerName != h.cfg.SchedulerName ||
			(h.cfg.Namespace != "" && d.Namespace != h.cfg.Namespace) {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || s.Empty() {
			continue
		}
		units[serviceKey(d)] = h.parseService(d, nodeTypes)
		byNS[d.Namespace] = append(byNS[d.Namespace], sel{d, s})
	}
	of := map[types.UID]JobKey{}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "ReplicaSet" || p.Spec.SchedulerName != h.cfg.SchedulerName {
			continue
		}
		for _, s := range byNS[p.Namespace] {
			if strings.HasPrefix(ref.Name, s.d.Name+"-") && s.sel.Matches(labels.Set(p.Labels)) {
				of[p.UID] = serviceKey(s.d)
				break
			}
		}
	}
	return of, units
}

// parseService reads a service Deployment's annotations; every problem is
// reported at once.
func (h *Host) parseService(d *appsv1.Deployment, nodeTypes map[accel.TypeKey]bool) *serviceUnit {
	ann := d.Annotations
	sp, err := parseSpec(ann)
	errs := []error{err, checkKnownTypes(sp.types, nodeTypes)}
	sp.kind, sp.preemptible = scheduler.Rigid, false
	su := &serviceUnit{deploy: d, spec: sp, url: h.cfg.Serving.MetricsURL}
	if v := strings.TrimSpace(ann[AnnotationMetricsURL]); v != "" {
		su.url = v
	}
	dur := func(key string, def time.Duration, positive bool) time.Duration {
		v, ok := ann[key]
		if !ok {
			if def < 0 {
				errs = append(errs, fmt.Errorf("%w: %s is required on a service", ErrAnnotation, key))
			}
			return max(def, 0)
		}
		t, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || t < 0 || (positive && t == 0) {
			want := "want a Go duration ≥ 0"
			if positive {
				want = "want a positive Go duration"
			}
			errs = append(errs, fmt.Errorf("%w: %s=%q: %s", ErrAnnotation, key, v, want))
			return 0
		}
		return t
	}
	svc := serving.Service{Name: d.Namespace + "/" + d.Name, Model: cmp.Or(strings.TrimSpace(ann[AnnotationModel]), d.Name),
		GPUsPerReplica: gpuCount(&d.Spec.Template.Spec),
		SLO:            serving.SLO{TTFTP90: dur(AnnotationTTFTP90, -1, true), TPOTP90: dur(AnnotationTPOTP90, -1, true)},
		Startup:        dur(AnnotationStartup, DefaultStartup, false),
		MinReplicas:    sp.minReplicas, MaxReplicas: sp.maxReplicas}
	if len(sp.types) == 1 {
		svc.GPUType = sp.types[0]
	}
	if svc.GPUsPerReplica < 1 {
		errs = append(errs, fmt.Errorf("%w: the pod template asks for no %s", ErrAnnotation, ResourceGPU))
	} else if svc.SLO.TTFTP90 > 0 && svc.SLO.TPOTP90 > 0 {
		if err := svc.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrAnnotation, err))
		}
	}
	su.svc, su.err = svc, errors.Join(errs...)
	return su
}

// serviceRound runs the services' part of a round, before Schedule: each
// service's autoscaler decides its replica count from its pods' metrics
// (applied through the Deployment's scale subresource), and its replicas
// enter the Input as a pinned rigid job: bound ones on their devices,
// pending ones on devices picked now — free ones first, else those of the
// training jobs holding the fewest devices, which lose them (an elastic
// job shrinks by them, any other is preempted and placed again by the
// policy in this round).
func (h *Host) serviceRound(ctx context.Context, a *assembly) {
	if h.svc == nil {
		return
	}
	now := h.cfg.Now()
	live := map[JobKey]bool{}
	for _, u := range a.snap.services {
		live[u.key] = true
		h.autoscale(ctx, u, now)
	}
	for k, st := range h.svc.services {
		if !live[k] {
			delete(h.svc.services, k)
			h.svc.replicas.DeletePartialMatch(prometheus.Labels{"service": st.svc.Name})
		}
	}
	h.reserveServices(a)
}

// serviceState returns the service's state, new when the Deployment or its
// service changed.
func (h *Host) serviceState(u *unit) *serviceState {
	su := u.svcUnit
	st := h.svc.services[u.key]
	if st == nil || st.uid != su.deploy.UID {
		st = &serviceState{uid: su.deploy.UID, profile: serving.NewProfile(), reserved: map[types.UID]reservation{}}
		h.svc.services[u.key] = st
	}
	if st.scaler == nil || st.svc != su.svc {
		st.svc = su.svc
		if f := h.cfg.Serving.Autoscaler; f != nil {
			st.scaler = f(su.svc, st.profile)
		} else {
			st.scaler = &serving.Predictive{Service: su.svc, Profile: st.profile}
		}
	}
	return st
}

// autoscale scrapes the service's ready pods and applies its autoscaler's
// count. A pod whose endpoint is down or malformed keeps the last decision
// (the next good scrape spans the gap) and counts in
// goodsched_errors_total{op="serving-metrics"}.
func (h *Host) autoscale(ctx context.Context, u *unit, now time.Time) {
	st := h.serviceState(u)
	su := u.svcUnit
	d := su.deploy
	if !st.at.IsZero() && now.Sub(st.at) < minDecisionGap {
		return
	}
	var ready []*corev1.Pod
	for _, p := range u.pods {
		if p.bound() && podReady(p.pod) {
			ready = append(ready, p.pod)
		}
	}
	cur := make(map[string]vllmSample, len(ready))
	errs := make([]error, len(ready))
	var mu sync.Mutex
	h.parallel(len(ready), func(i int) {
		s, err := h.scrape(ctx, su.url, ready[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs[i] = fmt.Errorf("pod %s: %w", ready[i].Name, err)
			return
		}
		cur[ready[i].Name] = s
	})
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if e != nil {
				h.m.errors.WithLabelValues("serving-metrics").Inc()
			}
		}
		if msg := err.Error(); msg != st.errText {
			st.errText = msg
			h.log.Warn("service metrics unavailable: its replica count stays as decided", "service", u.key, "err", err)
			h.recorder.Eventf(d, nil, corev1.EventTypeWarning, "MetricsUnavailable", "Scale", "%s; the replica count stays as last decided", truncate(msg, 900))
		}
		return
	}
	if st.errText != "" {
		st.errText = ""
		h.log.Info("service metrics available again", "service", u.key)
	}
	prev, at := st.prev, st.at
	st.prev, st.at = cur, now
	if at.IsZero() || !now.After(at) {
		return // the first scrape: rates need two
	}
	replicas := 1
	if d.Spec.Replicas != nil {
		replicas = int(*d.Spec.Replicas)
	}
	m, reports := serviceMetrics(now, now.Sub(at), len(ready), max(0, replicas-len(ready)), cur, prev)
	for _, r := range reports {
		_ = st.profile.Observe(r) // a degenerate mean (0 tokens) is dropped
	}
	h.svc.replicas.WithLabelValues(su.svc.Name, "ready").Set(float64(len(ready)))
	h.svc.replicas.WithLabelValues(su.svc.Name, "desired").Set(float64(replicas))
	n, err := st.scaler.Desired(m)
	h.log.Debug("service decision", "service", u.key, "replicas", replicas, "desired", n, "err", err, "ready", m.Ready,
		"arrivals", m.Arrivals, "interval", m.Interval, "waiting", m.Waiting, "ttft_p90", m.TTFTP90, "tpot_p90", m.TPOTP90, "reports", len(reports), "profile", st.profile.Ready())
	if err != nil {
		h.m.errors.WithLabelValues("serving-metrics").Inc()
		h.log.Warn("service metrics rejected: its replica count stays as decided", "service", u.key, "err", err)
		return
	}
	if n == replicas {
		return
	}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
	if _, err := h.cfg.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, body, metav1.PatchOptions{}, "scale"); err != nil {
		if apierrors.IsForbidden(err) {
			h.m.errors.WithLabelValues("patch-forbidden").Inc()
		} else {
			h.m.errors.WithLabelValues("scale").Inc()
		}
		h.log.Warn("service scale failed", "service", u.key, "replicas", n, "err", err)
		return
	}
	h.svc.replicas.WithLabelValues(su.svc.Name, "desired").Set(float64(n))
	reason := "ScaledUp"
	if n < replicas {
		reason = "ScaledDown"
	}
	h.recorder.Eventf(d, nil, corev1.EventTypeNormal, reason, "Scale", "scale %d→%d (%s): %.2f requests/s, %d waiting, KV cache %.0f%%, p90 TTFT %v, p90 TPOT %v over %v",
		replicas, n, st.scaler.Name(), float64(m.Arrivals)/m.Interval.Seconds(), m.Waiting, 100*m.KVUsage,
		m.TTFTP90.Round(time.Millisecond), m.TPOTP90.Round(time.Millisecond), m.Interval.Round(time.Millisecond))
	h.log.Info("service scaled", "service", u.key, "from", replicas, "to", n, "autoscaler", st.scaler.Name())
}

// scrape reads one pod's metrics endpoint.
func (h *Host) scrape(ctx context.Context, tmpl string, p *corev1.Pod) (vllmSample, error) {
	if strings.Contains(tmpl, "{ip}") && p.Status.PodIP == "" {
		return vllmSample{}, fmt.Errorf("%w: the pod has no IP yet", ErrMetrics)
	}
	url := strings.NewReplacer("{ip}", p.Status.PodIP, "{pod}", p.Name, "{namespace}", p.Namespace).Replace(tmpl)
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Serving.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return vllmSample{}, fmt.Errorf("%w: %w", ErrMetrics, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := h.svc.client.Do(req)
	if err != nil {
		return vllmSample{}, fmt.Errorf("%w: %w", ErrMetrics, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return vllmSample{}, fmt.Errorf("%w: %s: %s", ErrMetrics, url, resp.Status)
	}
	return parseVLLM(http.MaxBytesReader(nil, resp.Body, 8<<20))
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// reserveServices puts every service's replicas into the round's Input as
// a pinned rigid job and plans the binds of its pending pods.
func (h *Host) reserveServices(a *assembly) {
	if len(a.snap.services) == 0 {
		return
	}
	offered := map[string]devInfo{}
	for _, n := range a.in.Cluster.Nodes {
		for _, d := range n.Devices {
			offered[d.ID] = devInfo{n.Name, d.Type}
		}
	}
	jobOf := map[string]*scheduler.Job{}
	for i := range a.in.Jobs {
		jobOf[a.in.Jobs[i].ID] = &a.in.Jobs[i]
	}
	owner := map[string]int{} // device → index in a.in.Current
	for i, as := range a.in.Current {
		for _, d := range as.Devices {
			owner[d] = i
		}
	}
	busy := map[string]bool{} // devices of pods the round deletes anyway
	for _, c := range a.cleanup {
		for _, dv := range a.snap.devices[c.pod.UID] {
			busy[deviceID(c.pod.Spec.NodeName, dv)] = true
		}
	}
	taken := map[string]bool{} // devices of services
	lost := map[int][]string{} // Current index → devices it loses
	var binds []serviceBind
	for _, u := range a.snap.services {
		st := h.serviceState(u) // as autoscale left it
		devs := slices.Clone(u.held)
		for _, d := range devs {
			taken[d] = true
		}
		pending := map[types.UID]bool{}
		for _, p := range u.pods {
			if p.bound() {
				continue
			}
			pending[p.pod.UID] = true
			r, ok := st.reserved[p.pod.UID]
			if ok && time.Since(r.at) > 2*time.Minute {
				ok = false // what held its devices never left
			}
			var ids []string
			if ok {
				for _, dv := range r.slot.devices {
					ids = append(ids, deviceID(r.slot.node, dv))
				}
				if !a.snap.offered[r.slot.node] || slices.ContainsFunc(ids, func(id string) bool { return taken[id] }) {
					ok = false // its node went away, or another replica holds them
				} else if slices.ContainsFunc(ids, func(id string) bool { _, on := offered[id]; return !on }) {
					// Some are still held by terminating pods: wait, and
					// keep the others from the policy meanwhile.
					for _, id := range ids {
						if _, on := offered[id]; on {
							taken[id] = true
							if i, held := owner[id]; held {
								lost[i] = append(lost[i], id)
							}
							devs = append(devs, id)
						}
					}
					continue
				}
			}
			if !ok {
				ids = h.replicaSpot(u, a, owner, taken, jobOf)
				if ids == nil {
					continue // no room: the pod waits
				}
				node, _, _ := splitDeviceID(ids[0])
				r = reservation{slot: bindRecord{node: node}, at: time.Now()}
				for _, id := range ids {
					_, idx, _ := splitDeviceID(id)
					r.slot.devices = append(r.slot.devices, idx)
				}
				st.reserved[p.pod.UID] = r
			}
			free := true
			for _, id := range ids {
				taken[id] = true
				free = free && !busy[id]
				if i, held := owner[id]; held {
					free = false
					lost[i] = append(lost[i], id)
				}
			}
			devs = append(devs, ids...)
			if free {
				binds = append(binds, serviceBind{u: u, pod: p.pod, slot: r.slot})
			}
		}
		for uid := range st.reserved {
			if !pending[uid] {
				delete(st.reserved, uid)
			}
		}
		if len(devs) == 0 {
			continue
		}
		slices.Sort(devs)
		var ts []accel.TypeKey
		for _, d := range devs {
			if t := offered[d].typ; !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		}
		a.in.Jobs = append(a.in.Jobs, scheduler.Job{ID: string(u.key), Submitted: u.svcUnit.deploy.CreationTimestamp.Time,
			Kind: scheduler.Rigid, Requested: len(devs), MinReplicas: len(devs), MaxReplicas: len(devs),
			NonPreemptible: true, Weight: 1, Types: ts})
		a.in.Current = append(a.in.Current, placement.Assignment{Job: string(u.key), Devices: devs})
	}
	// The training jobs that lose devices: an elastic one keeps the rest
	// (it shrinks), any other is placed again from nothing.
	var drop []int
	for _, i := range slices.Sorted(maps.Keys(lost)) {
		as := &a.in.Current[i]
		j := jobOf[as.Job]
		keep := slices.DeleteFunc(slices.Clone(as.Devices), func(d string) bool { return slices.Contains(lost[i], d) })
		what := "preempted"
		if j != nil && j.Kind != scheduler.Rigid && j.Workers == 0 && len(keep) >= max(1, j.MinReplicas) {
			as.Devices = keep
			what = "shrunk"
		} else {
			drop = append(drop, i)
		}
		if u := a.byKey[JobKey(as.Job)]; u != nil {
			if obj := u.regarding(); obj != nil {
				h.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "ServiceScaledUp", "Schedule", "%s: %d GPU(s) (%s) go to an inference service's new replicas",
					what, len(lost[i]), strings.Join(lost[i], ","))
			}
		}
	}
	for k, i := range drop {
		a.in.Current = slices.Delete(a.in.Current, i-k, i-k+1)
	}
	a.serviceBinds = binds
}

// devInfo is an offered device's node and type.
type devInfo struct {
	node string
	typ  accel.TypeKey
}

// replicaSpot picks the devices of one new replica: perPod devices of an
// allowed type on one node new pods may go to, not a service's; free ones
// first, else the node whose jobs to take them from hold the fewest
// devices in all (ties: the fewest free devices left over, keeping larger
// free blocks whole). Devices of non-preemptible and premium jobs are
// never taken. nil when no node has room.
func (h *Host) replicaSpot(u *unit, a *assembly, owner map[string]int, taken map[string]bool, jobOf map[string]*scheduler.Job) []string {
	g := max(1, u.perPod)
	var best []string
	bestCost, bestSpare := -1, 0
	for _, n := range a.in.Cluster.Nodes {
		if !a.snap.offered[n.Name] {
			continue
		}
		var free, held []string
		for _, d := range n.Devices {
			if taken[d.ID] || (len(u.spec.types) > 0 && !slices.Contains(u.spec.types, d.Type)) {
				continue
			}
			i, ok := owner[d.ID]
			if !ok {
				free = append(free, d.ID)
				continue
			}
			if j := jobOf[a.in.Current[i].Job]; j == nil || j.NonPreemptible || j.Tier == tiers.Premium {
				continue
			}
			held = append(held, d.ID)
		}
		if len(free)+len(held) < g {
			continue
		}
		devs := append(free, held...)[:g]
		cost := 0
		var victims []int
		for _, d := range devs {
			if i, ok := owner[d]; ok && !slices.Contains(victims, i) {
				victims = append(victims, i)
				cost += len(a.in.Current[i].Devices)
			}
		}
		spare := len(free) - min(len(free), g)
		if bestCost < 0 || cost < bestCost || (cost == bestCost && spare < bestSpare) {
			best, bestCost, bestSpare = slices.Clone(devs), cost, spare
		}
	}
	return best
}

// serviceBind is a pending replica pod the round binds.
type serviceBind struct {
	u    *unit
	pod  *corev1.Pod
	slot bindRecord
}

// bindServices binds the service pods whose devices are free, each on its
// own (a replica is no gang).
func (h *Host) bindServices(ctx context.Context, a *assembly, r *Round) {
	var mu sync.Mutex
	bs := a.serviceBinds
	h.parallel(len(bs), func(i int) {
		b := bs[i]
		p, s := b.pod, b.slot
		err := h.bind(ctx, p, s)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			h.m.errors.WithLabelValues("bind").Inc()
			h.log.Warn("service replica bind failed", "pod", p.Namespace+"/"+p.Name, "node", s.node, "err", err)
			return
		}
		r.Binds++
		h.m.binds.Inc()
		h.state.binds[p.UID] = timedBind{bindRecord: s, at: time.Now()}
		delete(h.svc.services[b.u.key].reserved, p.UID)
	})
}
