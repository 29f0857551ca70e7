package host

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/tiers"
	"github.com/goodsched/goodsched/scheduler/topoplace"
)

// Topology: the network tiers above the node (block › rack › NVLink
// domain › node), from node labels named by an ordered level list in a
// ConfigMap (Config.TopologyConfigMap), the shape of Kueue's Topology
// object; a Job asks for a level with the annotations below, and the
// scheduler places through scheduler/topoplace.
const (
	// AnnotationTopologyRequired names a level (one of the topology's
	// node labels, or kubernetes.io/hostname for one node) every pod of the
	// job must share one domain of: the gang waits until one domain of it
	// can hold it, evicting jobs of lower AnnotationPriority when that
	// frees one (topoplace.Placer.Preempt: the fewest GPUs evicted; never
	// a job that is not preemptible or of the premium or standard tier).
	// Kueue's
	// kueue.x-k8s.io/podset-required-topology.
	AnnotationTopologyRequired = "goodsched.io/topology-required"
	// AnnotationTopologyPreferred names a level the job should fit in one
	// domain of, spilling over to outer levels when none can hold it
	// (never outside AnnotationTopologyRequired). Kueue's
	// kueue.x-k8s.io/podset-preferred-topology.
	AnnotationTopologyPreferred = "goodsched.io/topology-preferred"
	// TopologyConfigKey is the ConfigMap key that holds the
	// TopologyConfig, in YAML or JSON.
	TopologyConfigKey = "topology.yaml"
)

// ErrTopologyConfig reports a malformed topology ConfigMap.
var ErrTopologyConfig = errors.New("host: malformed topology configuration")

// TopologyConfig is the content of the topology ConfigMap's
// TopologyConfigKey: a Kueue Topology object (kueue.x-k8s.io, kind
// Topology), whose spec.levels list the node labels of the tiers,
// outermost first:
//
//	apiVersion: kueue.x-k8s.io/v1beta1   # optional
//	kind: Topology                        # optional; if set, Topology
//	metadata: {name: default}             # optional
//	spec:
//	  levels:
//	  - nodeLabel: cloud.provider.com/topology-block
//	  - nodeLabel: cloud.provider.com/topology-rack
//	  - nodeLabel: kubernetes.io/hostname  # optional, last only
//
// A node's domain at a level is the path of its label values from the
// outermost level down (topology.FromLabels); a node without the labels
// sits outside every domain.
type TopologyConfig struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec            TopologySpec      `json:"spec"`
}

// TopologySpec is a Topology's spec.
type TopologySpec struct {
	// Levels are the tiers, outermost first (1 to 16, as Kueue allows).
	Levels []TopologyLevel `json:"levels"`
}

// TopologyLevel is one tier: the node label whose value names a node's
// domain at that level.
type TopologyLevel struct {
	NodeLabel string `json:"nodeLabel"`
}

// maxTopologyLevels is Kueue's bound on spec.levels.
const maxTopologyLevels = 16

// ParseTopologyConfig reads and checks the TopologyConfig in a ConfigMap's
// TopologyConfigKey: a known kind, 1 to 16 levels, each a valid label key,
// no duplicates, kubernetes.io/hostname only as the last level (Kueue's
// rules). Errors wrap ErrTopologyConfig and name the ConfigMap and field.
func ParseTopologyConfig(cm *corev1.ConfigMap) (*TopologyConfig, error) {
	where := cm.Namespace + "/" + cm.Name
	data, ok := cm.Data[TopologyConfigKey]
	if !ok {
		return nil, fmt.Errorf("%w: ConfigMap %s has no key %q", ErrTopologyConfig, where, TopologyConfigKey)
	}
	var c TopologyConfig
	if err := yaml.UnmarshalStrict([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("%w: ConfigMap %s: %s: %v", ErrTopologyConfig, where, TopologyConfigKey, err)
	}
	if c.Kind != "" && c.Kind != "Topology" {
		return nil, fmt.Errorf("%w: ConfigMap %s: kind %q, want Topology", ErrTopologyConfig, where, c.Kind)
	}
	if n := len(c.Spec.Levels); n == 0 || n > maxTopologyLevels {
		return nil, fmt.Errorf("%w: ConfigMap %s: spec.levels has %d levels, want 1 to %d", ErrTopologyConfig, where, n, maxTopologyLevels)
	}
	seen := map[string]bool{}
	for i, l := range c.Spec.Levels {
		if errs := validation.IsQualifiedName(l.NodeLabel); len(errs) > 0 {
			return nil, fmt.Errorf("%w: ConfigMap %s: spec.levels[%d].nodeLabel %q: %s", ErrTopologyConfig, where, i, l.NodeLabel, strings.Join(errs, "; "))
		}
		if seen[l.NodeLabel] {
			return nil, fmt.Errorf("%w: ConfigMap %s: spec.levels[%d].nodeLabel %q appears twice", ErrTopologyConfig, where, i, l.NodeLabel)
		}
		seen[l.NodeLabel] = true
		if l.NodeLabel == corev1.LabelHostname && i != len(c.Spec.Levels)-1 {
			return nil, fmt.Errorf("%w: ConfigMap %s: spec.levels[%d]: %s must be the last level", ErrTopologyConfig, where, i, corev1.LabelHostname)
		}
	}
	return &c, nil
}

// Build returns the topology of nodes under c's levels (bandwidths
// unknown). Errors: those of topology.FromLabels, naming the node (a node
// with an inner level's label but not an outer one's).
func (c *TopologyConfig) Build(nodes []*corev1.Node) (*topology.Topology, error) {
	levels := make([]topology.Level, len(c.Spec.Levels))
	for i, l := range c.Spec.Levels {
		levels[i] = topology.Level{Name: l.NodeLabel}
	}
	labels := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		labels[n.Name] = n.Labels
	}
	return topology.FromLabels(levels, labels)
}

// TopologyConstraint reads a job's AnnotationTopologyRequired and
// AnnotationTopologyPreferred against top. perPod > 1 adds a slice of
// perPod devices per node (also without the annotations), so that no
// pod's GPUs are split over nodes. Errors wrap
// ErrAnnotation and name the annotation (an unknown level, preferred
// outside required).
func TopologyConstraint(ann map[string]string, top *topology.Topology, perPod int) (topoplace.Constraint, error) {
	var c topoplace.Constraint
	var errs []error
	for _, a := range []struct {
		key string
		dst *string
	}{{AnnotationTopologyRequired, &c.Required}, {AnnotationTopologyPreferred, &c.Preferred}} {
		v, ok := ann[a.key]
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if err := (topoplace.Constraint{Required: v}).Validate(top); v == "" || err != nil {
			errs = append(errs, fmt.Errorf("%w: %s=%q: not a level of the topology (want one of %s)", ErrAnnotation, a.key, v, levelList(top)))
			continue
		}
		*a.dst = v
	}
	if err := errors.Join(errs...); err != nil {
		return topoplace.Constraint{}, err
	}
	if perPod > 1 {
		c.Slices = []topoplace.Slice{{Level: topoplace.NodeLevel, Size: perPod}}
	}
	if err := c.Validate(top); err != nil {
		return topoplace.Constraint{}, fmt.Errorf("%w: %s=%q, %s=%q: %v", ErrAnnotation, AnnotationTopologyRequired, c.Required, AnnotationTopologyPreferred, c.Preferred, err)
	}
	return c, nil
}

func levelList(top *topology.Topology) string {
	var names []string
	for _, l := range top.Levels() {
		names = append(names, l.Name)
	}
	if len(names) == 0 || names[len(names)-1] != topoplace.NodeLevel {
		names = append(names, topoplace.NodeLevel)
	}
	return strings.Join(names, ", ")
}

// topologyWatch follows the topology ConfigMap and is the scheduler's
// Placer: topoplace's LeastLoss on the round's topology, with each job's
// constraint and, for a required level, preemption of jobs of lower
// priority. The round sets top, cons and prio under the round lock before
// Schedule calls Place.
type topologyWatch struct {
	namespace, name string
	factory         informers.SharedInformerFactory
	lister          corelisters.ConfigMapLister
	fallback        placement.Placer
	// bad is the last problem reported (once per ConfigMap version).
	bad string
	// built is the last topology built and key what it was built from
	// (the ConfigMap's version and the nodes' level labels): reused while
	// they do not change, so the placer's per-topology caches stay warm
	// and bounded.
	built *topology.Topology
	key   string
	// parsed is the ConfigMap last parsed, or why it could not be, and
	// parsedAt its UID and version: an unchanged ConfigMap is not parsed
	// again.
	parsed    *TopologyConfig
	parsedErr error
	parsedAt  string

	top  *topology.Topology // nil: no usable topology this round
	err  error              // why top is nil
	cons map[string]topoplace.Constraint
	prio map[string]int
	// cost is what evicting a job loses: the GPUs it holds (0 for a
	// placement made this round only), NaN for a job that must not be
	// evicted (not preemptible, or of the premium or standard tier).
	cost map[string]float64
	// settling: pods are still being evicted (by an earlier preemption,
	// say) and their GPUs are hidden; no preemption until they are gone,
	// or each round would evict again for GPUs already on their way.
	settling bool
}

var _ placement.StateUser = (*topologyWatch)(nil)

// newTopologyWatch checks cfg.TopologyConfigMap and makes the Placer that
// cfg.Scheduler is given (the configured one, or the default, is used
// while the topology is unusable).
func newTopologyWatch(cfg *Config) (*topologyWatch, error) {
	ns, name, ok := strings.Cut(cfg.TopologyConfigMap, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: TopologyConfigMap %q: want namespace/name", ErrConfig, cfg.TopologyConfigMap)
	}
	w := &topologyWatch{namespace: ns, name: name, fallback: cfg.Scheduler.Placer}
	if w.fallback == nil {
		w.fallback = placement.RoundPlacer{}
	}
	cfg.Scheduler.Placer = w
	return w, nil
}

// watch sets up the informer on the ConfigMap (one object) and a round
// whenever it changes.
func (w *topologyWatch) watch(h *Host) error {
	f := informers.NewSharedInformerFactoryWithOptions(h.cfg.Client, 0, informers.WithNamespace(w.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.name).String()
		}))
	inf := f.Core().V1().ConfigMaps()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Kick() },
		UpdateFunc: func(any, any) { h.Kick() },
		DeleteFunc: func(any) { h.Kick() },
	}); err != nil {
		return fmt.Errorf("host: event handler: %w", err)
	}
	w.factory, w.lister = f, inf.Lister()
	h.synced = append(h.synced, inf.Informer().HasSynced)
	return nil
}

// round reads the ConfigMap and builds the round's topology from the
// nodes' labels. When it cannot (the ConfigMap is absent or malformed, or
// a node's labels are inconsistent), the round places without a topology,
// the problem is logged, counted (errors_total{op="topology"}) and, for a
// malformed ConfigMap, recorded as a Warning Event on it, once per
// version; jobs that ask for a level are skipped (check).
func (w *topologyWatch) round(h *Host, nodes []*corev1.Node) {
	w.top, w.err, w.cons, w.prio, w.cost = nil, nil, nil, nil, nil
	where := w.namespace + "/" + w.name
	cm, err := w.lister.ConfigMaps(w.namespace).Get(w.name)
	var tc *TopologyConfig
	switch {
	case apierrors.IsNotFound(err):
		w.err = fmt.Errorf("%w: ConfigMap %s not found", ErrTopologyConfig, where)
	case err != nil:
		w.err = fmt.Errorf("%w: ConfigMap %s: %v", ErrTopologyConfig, where, err)
	default:
		if at := string(cm.UID) + "/" + cm.ResourceVersion; at != w.parsedAt {
			w.parsed, w.parsedErr = ParseTopologyConfig(cm)
			w.parsedAt = at
		}
		if tc = w.parsed; w.parsedErr != nil {
			w.err = w.parsedErr
		} else if key := topologyKey(cm, tc, nodes); key == w.key && w.built != nil {
			w.top = w.built
		} else if w.top, err = tc.Build(nodes); err != nil {
			w.err = fmt.Errorf("%w: ConfigMap %s: node labels: %v", ErrTopologyConfig, where, err)
		} else {
			w.built, w.key = w.top, key
		}
	}
	if w.err == nil {
		w.bad = ""
		return
	}
	version := ""
	if cm != nil {
		version = cm.ResourceVersion
	}
	if msg := version + w.err.Error(); msg != w.bad {
		w.bad = msg
		h.m.errors.WithLabelValues("topology").Inc()
		h.log.Warn("topology unusable: jobs that ask for a level are skipped", "configmap", where, "err", w.err)
		if cm != nil {
			h.recorder.Eventf(cm, nil, corev1.EventTypeWarning, "InvalidTopology", "Skip", "%s; jobs with %s or %s are not scheduled until it is fixed",
				truncate(w.err.Error(), 800), AnnotationTopologyRequired, AnnotationTopologyPreferred)
		}
	}
}

// topologyKey identifies what a topology is built from: the ConfigMap's
// version and each node's name and level labels, in name order.
func topologyKey(cm *corev1.ConfigMap, tc *TopologyConfig, nodes []*corev1.Node) string {
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString(cm.ResourceVersion)
	for _, n := range sorted {
		b.WriteByte(0)
		b.WriteString(n.Name)
		for _, l := range tc.Spec.Levels {
			b.WriteByte(1)
			b.WriteString(n.Labels[l.NodeLabel])
		}
	}
	return b.String()
}

// check validates a job's topology annotations for snapshotOptions and
// returns its constraint on the round's topology (zero without one, or
// when it is not valid). The error is nil for a job without the
// annotations; for one with them, one wrapping ErrAnnotation naming the
// annotation (and, while the topology is unusable, the ConfigMap's
// problem).
func (w *topologyWatch) check(ann map[string]string, perPod int) (topoplace.Constraint, error) {
	_, req := ann[AnnotationTopologyRequired]
	_, pref := ann[AnnotationTopologyPreferred]
	if w.top == nil {
		if !req && !pref {
			return topoplace.Constraint{}, nil
		}
		key := AnnotationTopologyRequired
		if !req {
			key = AnnotationTopologyPreferred
		}
		return topoplace.Constraint{}, fmt.Errorf("%w: %s: %v", ErrAnnotation, key, w.err)
	}
	c, err := TopologyConstraint(ann, w.top, perPod)
	if !req && !pref {
		err = nil // a job without the annotations is not checked
	}
	return c, err
}

// setJobs records the constraints and priorities of the round's units,
// and whether evictions are still under way (evicting: the host has
// evictions the informers do not show yet).
func (w *topologyWatch) setJobs(snap *snapshot, evicting bool) {
	if w.top == nil {
		return
	}
	units := snap.units
	w.settling = evicting
	for _, counts := range snap.hidden.byType {
		w.settling = w.settling || counts[HiddenTerminating] > 0
	}
	w.cons, w.prio, w.cost = make(map[string]topoplace.Constraint, len(units)), make(map[string]int, len(units)), make(map[string]float64, len(units))
	for _, u := range units {
		w.prio[string(u.key)] = u.sj.Priority
		w.cost[string(u.key)] = float64(len(u.held))
		if u.sj.NonPreemptible || u.sj.Tier == tiers.Premium || u.sj.Tier == tiers.Standard {
			w.cost[string(u.key)] = math.NaN() // never a victim
		}
		w.cons[string(u.key)] = u.spec.topology
	}
}

// Place implements placement.Placer: topoplace.Placer (LeastLoss) on the
// round's topology, or the fallback while there is none. A gang with a
// required level may preempt only while no eviction is under way.
func (w *topologyWatch) Place(ctx context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	if w.top == nil {
		return w.fallback.Place(ctx, in)
	}
	p := topoplace.Placer{Topology: w.top, Constraint: w.constraint}
	if !w.settling {
		p.Preempt = &topoplace.Preemption{Priority: w.priority, DeviceSeconds: w.deviceSeconds}
	}
	return p.Place(ctx, in)
}

// UsesState implements placement.StateUser: only the fallback reads it.
func (w *topologyWatch) UsesState() bool {
	if w.top != nil {
		return false
	}
	su, ok := w.fallback.(placement.StateUser)
	return !ok || su.UsesState()
}

func (w *topologyWatch) constraint(job string) topoplace.Constraint { return w.cons[job] }
func (w *topologyWatch) priority(job string) int                    { return w.prio[job] }

// deviceSeconds is topoplace's eviction cost: see topologyWatch.cost; a
// job the round does not know is never a victim.
func (w *topologyWatch) deviceSeconds(job string) float64 {
	if c, ok := w.cost[job]; ok {
		return c
	}
	return math.NaN()
}
