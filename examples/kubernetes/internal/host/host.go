package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/variability"
)

// Defaults of Config's zero fields.
const (
	DefaultSchedulerName  = "goodsched"
	DefaultInterval       = 10 * time.Second
	DefaultMinInterval    = time.Second
	DefaultLeaseName      = "goodsched-scheduler"
	DefaultLeaseNamespace = "goodsched-system"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultBindWorkers    = 32
)

// Errors of this package (wrapped with the field or job they concern).
var (
	// ErrConfig reports an invalid Config field.
	ErrConfig = errors.New("host: invalid config")
	// ErrNotLeader is returned by RoundOnce when leader election is on and
	// this host does not hold the lease.
	ErrNotLeader = errors.New("host: not the leader")
	// ErrNotStarted is returned by RoundOnce before Start.
	ErrNotStarted = errors.New("host: informers not started")
)

// Config configures a Host. The zero value of every field but Client is
// its documented default.
type Config struct {
	// Client talks to the API server (required). Its rate limits are the
	// caller's; the binary sets QPS 500, burst 2000.
	Client kubernetes.Interface
	// SchedulerName is the spec.schedulerName of the pods this host
	// schedules; "" = "goodsched".
	SchedulerName string
	// Namespace limits the Jobs and pods scheduled to one namespace; "" =
	// all namespaces. Pods of every namespace are watched all the same, to
	// subtract the GPUs other pods use.
	Namespace string
	// Interval is the time between two rounds when nothing happens;
	// 0 = 10 s.
	Interval time.Duration
	// MinInterval is the least time between the end of a round and the
	// start of the next one triggered by an event; 0 = 1 s.
	MinInterval time.Duration
	// Scheduler configures the library's scheduler (policy and placer);
	// the zero value is the Pollux policy.
	Scheduler scheduler.Config
	// Models supplies measured goodput models (the measurement loop) and
	// learns each round's decisions; nil = none.
	Models ModelSource
	// Now is the clock of the scheduler's Input.Now (and so of job ages);
	// nil = time.Now. A digital twin passes a compressed clock.
	Now func() time.Time
	// Identity names this replica in the Lease and in Events; "" = the
	// host name.
	Identity string
	// LeaderElection makes Run campaign for a Lease and run rounds only
	// while it holds it.
	LeaderElection bool
	// LeaseName and LeaseNamespace name the Lease; "" = "goodsched-scheduler"
	// in "goodsched-system".
	LeaseName, LeaseNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election;
	// 0 = 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Registry receives the host's metrics; nil = a registry of the host's
	// own (with the Go and process collectors). Handler serves it.
	Registry *prometheus.Registry
	// BindWorkers is how many API writes a round makes at once; 0 = 32.
	BindWorkers int
	// ToleratedTaints are taint keys whose NoSchedule/NoExecute taints do
	// not keep GPU nodes from being offered; nil = ["nvidia.com/gpu"] (the
	// taint GPU node pools commonly carry, tolerated by GPU pods).
	ToleratedTaints []string
	// Logger logs rounds and failures; nil = slog.Default().
	Logger *slog.Logger
	// BindingKey is the key of the MAC the host writes with each binding
	// (AnnotationBinding), so that only pods it bound are read as holding
	// devices; at least MinBindingKeyBytes. nil = the key in the Secret
	// DefaultBindingKeySecret of LeaseNamespace, created at Start when
	// missing. Every replica must use the same key.
	BindingKey []byte
	// QueuesConfigMap, "namespace/name", is the ConfigMap whose
	// QueuesConfigKey holds the tenants' queues and quotas (QueueConfig);
	// "" = no queues. It is watched: a change applies from the next round.
	// While it does not exist no quota applies; while it is malformed the
	// last valid version does.
	QueuesConfigMap string
	// Carbon supplies each round's carbon-intensity forecast
	// (scheduler.Input.Carbon) for CarbonZone from the round's Now, down to
	// the hour so that a carbon.Cache in front shares answers, over
	// CarbonHorizon; nil = none. Only a carbon-aware policy
	// (carbonaware.Policy) reads it. A failed fetch is logged, counted
	// (goodsched_errors_total{op="carbon"}) and the round runs without a
	// forecast, so jobs run as the inner policy decides: chain providers
	// with carbon.Fallback ending in carbon/live's History so that a
	// round always has one.
	Carbon carbon.Forecaster
	// CarbonZone is the grid zone Carbon is asked for (required with
	// Carbon), such as "US-CAL-CISO".
	CarbonZone string
	// CarbonHorizon is how far ahead the forecast reaches; 0 = 48 h. The
	// policy plans a job's work before its deadline or the forecast's end,
	// whichever is first.
	CarbonHorizon time.Duration
	// CarbonTimeout bounds one fetch; 0 = 10 s.
	CarbonTimeout time.Duration
	// Serving turns on inference services: Deployments annotated
	// AnnotationService, scaled from their pods' vLLM metrics (see
	// ServingConfig); nil = none (Deployments are not watched).
	Serving *ServingConfig
	// TopologyConfigMap, "namespace/name", is the ConfigMap whose
	// TopologyConfigKey holds the network tiers as node-label levels
	// (TopologyConfig, Kueue's Topology shape); "" = no topology. With it
	// the scheduler places through scheduler/topoplace and honours
	// AnnotationTopologyRequired and AnnotationTopologyPreferred (see
	// topology.go). It is watched: a change applies from the next round.
	TopologyConfigMap string
	// Variability turns on per-device slowdown estimation from the step
	// times jobs report (see ObserveSteps and slowdown.go) with these
	// estimator options; nil = off, every device runs at one speed.
	Variability *variability.Options
}

// Host runs goodsched's rounds against a Kubernetes API server. Its
// methods are safe for concurrent use; rounds never overlap.
type Host struct {
	cfg     Config
	sched   *scheduler.Scheduler
	log     *slog.Logger
	factory informers.SharedInformerFactory
	extra   informers.SharedInformerFactory // the Jobs of one namespace, when Namespace is set
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	jobs    batchlisters.JobLister
	podInf  cache.SharedIndexInformer
	synced  []cache.InformerSynced
	m       *metrics
	reg     *prometheus.Registry

	broadcaster events.EventBroadcaster
	recorder    events.EventRecorder

	key []byte // the binding key, set by Start

	startOnce sync.Once
	startErr  error
	started   atomic.Bool
	leading   atomic.Bool
	// rounds is the work queue of the running loop (nil when none runs).
	rounds atomic.Pointer[workqueue.TypedDelayingInterface[string]]

	roundMu sync.Mutex // one round at a time; guards the fields below
	state   hostState
	// queues follows Config.QueuesConfigMap (nil without it); its
	// bookkeeping is guarded by roundMu.
	queues *queueWatch
	// svc follows Config.Serving's services (nil without it).
	svc *servingState
	// topo follows Config.TopologyConfigMap and is the scheduler's Placer
	// (nil without it); guarded by roundMu.
	topo *topologyWatch
	// slow learns per-device slowdowns (nil without Config.Variability).
	slow *slowdowns
}

// hostState is what a Host remembers between rounds. It is rebuilt from
// the API server when lost; it only covers the lag of the informers and
// the deletions the host still owes.
type hostState struct {
	binds    map[types.UID]timedBind
	deleting map[types.UID]time.Time
	// rollback are pods of gangs whose binds failed: deleted before the
	// next round's snapshot, retried until they are gone.
	rollback map[types.UID]podRef
	// warned remembers the last Warning per job, so a malformed job is not
	// reported every round.
	warned map[JobKey]string
	// said remembers the last decision text per job (Events are recorded
	// only when it changes).
	said map[JobKey]string
	// refusedSeen remembers the refusals already counted and logged.
	refusedSeen map[refusalKey]bool
	// forbidden are the namespaces whose Job patches were refused (logged
	// once each).
	forbidden map[string]bool
	// used is the GPU-time each job has held since this host started
	// (AnnotationWork minus it is the job's remaining work), and usedAt
	// the round it was last counted at.
	used   map[JobKey]time.Duration
	usedAt time.Time
	// carbonErr is the last carbon fetch error's text (logged once).
	carbonErr string
	// workers are the AnnotationPodWorkers the host patched on running
	// pods of W-jobs, until the informers show them.
	workers map[types.UID]timedWorkers
}

type timedWorkers struct {
	workers int
	at      time.Time
}

type refusalKey struct {
	uid    types.UID
	reason string
}

type timedBind struct {
	bindRecord
	at time.Time
}

type podRef struct {
	namespace, name string
	uid             types.UID
}

// New validates cfg and returns a Host. It starts nothing: Run (or Start)
// does.
func New(cfg Config) (*Host, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: Client is nil", ErrConfig)
	}
	for name, d := range map[string]time.Duration{"Interval": cfg.Interval, "MinInterval": cfg.MinInterval,
		"LeaseDuration": cfg.LeaseDuration, "RenewDeadline": cfg.RenewDeadline, "RetryPeriod": cfg.RetryPeriod,
		"CarbonHorizon": cfg.CarbonHorizon, "CarbonTimeout": cfg.CarbonTimeout} {
		if d < 0 {
			return nil, fmt.Errorf("%w: %s is negative (%v)", ErrConfig, name, d)
		}
	}
	if cfg.BindingKey != nil && len(cfg.BindingKey) < MinBindingKeyBytes {
		return nil, fmt.Errorf("%w: BindingKey has %d bytes, want at least %d", ErrConfig, len(cfg.BindingKey), MinBindingKeyBytes)
	}
	if cfg.Carbon != nil && strings.TrimSpace(cfg.CarbonZone) == "" {
		return nil, fmt.Errorf("%w: Carbon is set but CarbonZone is empty", ErrConfig)
	}
	if cfg.CarbonHorizon == 0 {
		cfg.CarbonHorizon = 48 * time.Hour
	}
	if cfg.CarbonTimeout == 0 {
		cfg.CarbonTimeout = 10 * time.Second
	}
	if cfg.BindWorkers < 0 {
		return nil, fmt.Errorf("%w: BindWorkers is negative (%d)", ErrConfig, cfg.BindWorkers)
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = DefaultSchedulerName
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MinInterval == 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Identity == "" {
		name, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("%w: Identity is empty and the host name is unknown: %w", ErrConfig, err)
		}
		cfg.Identity = name
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = DefaultLeaseName
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = DefaultLeaseNamespace
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.LeaderElection && !(cfg.LeaseDuration > cfg.RenewDeadline && cfg.RenewDeadline > cfg.RetryPeriod) {
		return nil, fmt.Errorf("%w: want LeaseDuration > RenewDeadline > RetryPeriod, have %v, %v, %v", ErrConfig, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	}
	if cfg.BindWorkers == 0 {
		cfg.BindWorkers = DefaultBindWorkers
	}
	if cfg.ToleratedTaints == nil {
		cfg.ToleratedTaints = []string{ResourceGPU}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var topo *topologyWatch
	if cfg.TopologyConfigMap != "" {
		var err error
		if topo, err = newTopologyWatch(&cfg); err != nil {
			return nil, err
		}
	}
	s, err := scheduler.New(cfg.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("%w: Scheduler: %w", ErrConfig, err)
	}
	reg := cfg.Registry
	own := reg == nil
	if own {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg, own)
	if err != nil {
		return nil, fmt.Errorf("%w: Registry: %w", ErrConfig, err)
	}
	h := &Host{cfg: cfg, sched: s, log: cfg.Logger, m: m, reg: reg,
		state: hostState{binds: map[types.UID]timedBind{}, deleting: map[types.UID]time.Time{},
			rollback: map[types.UID]podRef{}, warned: map[JobKey]string{}, said: map[JobKey]string{},
			refusedSeen: map[refusalKey]bool{}, forbidden: map[string]bool{}, used: map[JobKey]time.Duration{},
			workers: map[types.UID]timedWorkers{}}}
	if cfg.Variability != nil {
		if h.slow, err = newSlowdowns(*cfg.Variability, reg, m.errors); err != nil {
			return nil, err
		}
	}
	h.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	nodeInf := h.factory.Core().V1().Nodes()
	podInf := h.factory.Core().V1().Pods()
	var jobInf cache.SharedIndexInformer
	var jobLister batchlisters.JobLister
	if cfg.Namespace != "" {
		f := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithNamespace(cfg.Namespace))
		ji := f.Batch().V1().Jobs()
		jobInf, jobLister = ji.Informer(), ji.Lister()
		h.extra = f
	} else {
		ji := h.factory.Batch().V1().Jobs()
		jobInf, jobLister = ji.Informer(), ji.Lister()
	}
	h.nodes, h.pods, h.jobs = nodeInf.Lister(), podInf.Lister(), jobLister
	h.podInf = podInf.Informer()
	if err := h.podInf.AddIndexers(cache.Indexers{jobIndex: indexPodJob}); err != nil {
		return nil, fmt.Errorf("host: pod index: %w", err)
	}
	h.synced = []cache.InformerSynced{nodeInf.Informer().HasSynced, h.podInf.HasSynced, jobInf.HasSynced}
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Kick() },
		DeleteFunc: func(any) { h.Kick() },
	}
	nodeHandler := kick
	nodeHandler.UpdateFunc = func(o, n any) {
		if nodeChanged(o, n) {
			h.Kick()
		}
	}
	podHandler := kick
	podHandler.AddFunc = func(o any) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == "" && p.Spec.SchedulerName != cfg.SchedulerName {
			return // another scheduler's pending pod
		}
		h.Kick()
	}
	podHandler.UpdateFunc = func(o, n any) {
		if podChanged(o, n) {
			h.Kick()
		}
	}
	jobHandler := kick
	jobHandler.UpdateFunc = func(o, n any) {
		if jobChanged(o, n) {
			h.Kick()
		}
	}
	for _, x := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{{nodeInf.Informer(), nodeHandler}, {h.podInf, podHandler}, {jobInf, jobHandler}} {
		if _, err := x.inf.AddEventHandler(x.h); err != nil {
			return nil, fmt.Errorf("host: event handler: %w", err)
		}
	}
	if cfg.QueuesConfigMap != "" {
		if err := h.watchQueues(); err != nil {
			return nil, err
		}
	}
	if cfg.Serving != nil {
		sc := *cfg.Serving
		h.cfg.Serving = &sc
		if err := h.watchServices(); err != nil {
			return nil, err
		}
	}
	if topo != nil {
		h.topo = topo
		if err := topo.watch(h); err != nil {
			return nil, err
		}
	}
	h.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: cfg.Client.EventsV1()})
	h.recorder = h.broadcaster.NewRecorder(scheme.Scheme, "goodsched-scheduler")
	return h, nil
}

// Start starts the informers and the Event broadcaster and waits until the
// caches are synced. It is idempotent; Run calls it. The informers stop
// when ctx is done.
func (h *Host) Start(ctx context.Context) error {
	h.startOnce.Do(func() {
		key, err := h.loadBindingKey(ctx)
		if err != nil {
			h.startErr = err
			return
		}
		h.key = key
		h.factory.Start(ctx.Done())
		if h.extra != nil {
			h.extra.Start(ctx.Done())
		}
		if h.queues != nil {
			h.queues.factory.Start(ctx.Done())
		}
		if h.topo != nil {
			h.topo.factory.Start(ctx.Done())
		}
		if err := h.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			h.startErr = fmt.Errorf("host: events: %w", err)
			return
		}
		go func() { <-ctx.Done(); h.broadcaster.Shutdown() }()
		if !cache.WaitForCacheSync(ctx.Done(), h.synced...) {
			h.startErr = fmt.Errorf("host: informers did not sync: %w", context.Cause(ctx))
			return
		}
		h.started.Store(true)
	})
	return h.startErr
}

// Kick asks for a round soon (at most one per MinInterval). It never
// blocks.
func (h *Host) Kick() {
	if q := h.rounds.Load(); q != nil {
		(*q).Add(roundKey)
	}
}

// roundKey is the one key of the rounds' work queue.
const roundKey = "round"

// IsLeader reports whether this host runs rounds now: it holds the lease,
// or leader election is off and Run is running.
func (h *Host) IsLeader() bool { return h.leading.Load() }

// Run starts the host and runs rounds until ctx is done: at once, then
// every Interval and early on events. With LeaderElection it campaigns for
// the Lease and runs rounds only while it holds it, campaigning again when
// it loses it. It returns nil when ctx is done, or the error that kept it
// from starting.
func (h *Host) Run(ctx context.Context) error {
	if err := h.Start(ctx); err != nil {
		return err
	}
	if !h.cfg.LeaderElection {
		h.leading.Store(true)
		h.m.leader.Set(1)
		defer func() { h.leading.Store(false); h.m.leader.Set(0) }()
		h.loop(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaName(h.cfg.LeaseNamespace, h.cfg.LeaseName),
		Client:     h.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: h.cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   h.cfg.LeaseDuration,
			RenewDeadline:   h.cfg.RenewDeadline,
			RetryPeriod:     h.cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            h.cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					h.log.Info("leading", "identity", h.cfg.Identity)
					h.leading.Store(true)
					h.m.leader.Set(1)
					h.loop(lctx)
				},
				OnStoppedLeading: func() {
					h.leading.Store(false)
					h.m.leader.Set(0)
					h.log.Info("stopped leading", "identity", h.cfg.Identity)
				},
			},
		})
		if err != nil {
			return fmt.Errorf("%w: leader election: %w", ErrConfig, err)
		}
		le.Run(ctx)
	}
	return nil
}

// loop runs rounds until ctx is done, from a client-go work queue of one
// key: informer events (Kick) add it, each round adds it again after
// Interval, and a round is followed by at least MinInterval without one.
// The queue's deduplication folds a burst of events into one round.
func (h *Host) loop(ctx context.Context) {
	q := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{})
	h.rounds.Store(&q)
	defer h.rounds.CompareAndSwap(&q, nil)
	stop := context.AfterFunc(ctx, q.ShutDown)
	defer stop()
	defer q.ShutDown()
	q.Add(roundKey)
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		if _, err := h.round(ctx); err != nil && ctx.Err() == nil {
			h.log.Error("round failed", "err", err)
		}
		q.Done(key)
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.cfg.MinInterval):
		}
		q.AddAfter(roundKey, h.cfg.Interval-h.cfg.MinInterval)
	}
}

// RoundOnce runs one round now: snapshot, Schedule, apply. It needs Start;
// with LeaderElection it fails with ErrNotLeader unless this host leads.
// The round's writes are made under ctx.
func (h *Host) RoundOnce(ctx context.Context) (Round, error) {
	if !h.started.Load() {
		return Round{}, ErrNotStarted
	}
	if h.cfg.LeaderElection && !h.leading.Load() {
		return Round{}, ErrNotLeader
	}
	return h.round(ctx)
}

// Handler serves /metrics (Prometheus text format) and /healthz (200 once
// the informers are synced, 503 before).
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h.m.handler(h.reg))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !h.started.Load() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Registry returns the registry the host's metrics are in (Config.Registry
// or the host's own), for a caller that adds its own collectors.
func (h *Host) Registry() *prometheus.Registry { return h.reg }

// JobOfPod returns the unit a pod of this scheduler belongs to, from the
// informer cache (no API call): its Job, or its pod group. ok is false for
// an unknown pod or one of another scheduler.
func (h *Host) JobOfPod(namespace, name string) (JobKey, bool) {
	p, err := h.pods.Pods(namespace).Get(name)
	if err != nil || p.Spec.SchedulerName != h.cfg.SchedulerName {
		return "", false
	}
	return podUnitKey(p, h.jobs)
}

// PodsOfJob returns the live pods of a unit, from the informer cache.
func (h *Host) PodsOfJob(job JobKey) []*corev1.Pod {
	objs, err := h.podInf.GetIndexer().ByIndex(jobIndex, string(job))
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.SchedulerName == h.cfg.SchedulerName && p.DeletionTimestamp == nil && !podFinished(p) {
			out = append(out, p)
		}
	}
	return out
}

const jobIndex = "goodsched-unit"

// indexPodJob indexes a pod under "namespace/job-name" (from its
// controller's Job name label) or "namespace/group".
func indexPodJob(o any) ([]string, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if name := p.Labels[batchv1.JobNameLabel]; name != "" {
		if _, ok := jobOwner(p); ok {
			return []string{p.Namespace + "/" + name}, nil
		}
	}
	if g := p.Labels[LabelGroup]; g != "" {
		return []string{p.Namespace + "/" + g}, nil
	}
	return []string{p.Namespace + "/" + p.Name}, nil
}

// podUnitKey returns the unit of a pod: the Job its controller reference
// names, looked up by that reference (name, then UID), or its pod group.
func podUnitKey(p *corev1.Pod, jobs batchlisters.JobLister) (JobKey, bool) {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Job" {
		j, err := jobs.Jobs(p.Namespace).Get(ref.Name)
		if err != nil || j.UID != ref.UID {
			return "", false
		}
		return JobKey(p.Namespace + "/" + j.Name), true
	}
	if g := p.Labels[LabelGroup]; g != "" {
		return JobKey(p.Namespace + "/" + g), true
	}
	return JobKey(p.Namespace + "/" + p.Name), true
}

// JobUID returns the UID of the live batch/v1 Job of a job key, from the
// informer cache; ok is false for a pod group or an unknown key.
func (h *Host) JobUID(job JobKey) (types.UID, bool) {
	ns, name, ok := strings.Cut(string(job), "/")
	if !ok {
		return "", false
	}
	j, err := h.jobs.Jobs(ns).Get(name)
	if err != nil {
		return "", false
	}
	return j.UID, true
}

func nodeChanged(o, n any) bool {
	a, ok1 := o.(*corev1.Node)
	b, ok2 := n.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	qa, qb := a.Status.Allocatable[ResourceGPU], b.Status.Allocatable[ResourceGPU]
	return nodeReady(a) != nodeReady(b) || qa.Cmp(qb) != 0 || a.Spec.Unschedulable != b.Spec.Unschedulable ||
		len(a.Spec.Taints) != len(b.Spec.Taints) || a.Labels[LabelGPUProduct] != b.Labels[LabelGPUProduct]
}

func podChanged(o, n any) bool {
	a, ok1 := o.(*corev1.Pod)
	b, ok2 := n.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return a.Spec.NodeName != b.Spec.NodeName || (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) ||
		podFinished(a) != podFinished(b)
}

func jobChanged(o, n any) bool {
	a, ok1 := o.(*batchv1.Job)
	b, ok2 := n.(*batchv1.Job)
	if !ok1 || !ok2 {
		return true
	}
	if jobFinished(a) != jobFinished(b) || !equalInt32(a.Spec.Parallelism, b.Spec.Parallelism) || !equalBool(a.Spec.Suspend, b.Spec.Suspend) {
		return true
	}
	for k, v := range b.Annotations {
		if k != AnnotationLastDecision && k != AnnotationBatchPlan && a.Annotations[k] != v {
			return true
		}
	}
	return len(a.Annotations) != len(b.Annotations) && a.Annotations[AnnotationLastDecision] == b.Annotations[AnnotationLastDecision]
}

func metaName(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

func equalInt32(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func equalBool(a, b *bool) bool   { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
