package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// Queues: tenants share the cluster by queues with quotas (the library's
// quota.Queue tree, as Kueue's ClusterQueues and cohorts). The tree
// comes from a ConfigMap (Config.QueuesConfigMap), and each job's leaf
// queue from a label or its namespace.
const (
	// LabelQueue on a Job (or on the pods of a pod group) names the leaf
	// queue the job is submitted to. It takes precedence over the
	// namespace's queue.
	LabelQueue = "goodsched.io/queue"
	// QueuesConfigKey is the ConfigMap key that holds the QueueConfig,
	// in YAML or JSON.
	QueuesConfigKey = "queues.yaml"
)

// ErrQueueConfig reports a malformed queue ConfigMap.
var ErrQueueConfig = errors.New("host: malformed queue configuration")

// QueueConfig is the content of the queue ConfigMap's queues.yaml key:
//
//	queues:                  # the quota tree: quota.Queue's fields
//	- name: research         # a cohort (it has children)
//	- name: vision
//	  parent: research       # absent = a root (the cluster is the roots' cohort)
//	  weight: 2              # share of what is left over; absent = 1
//	  quotas:                # per GPU type (canonical key or alias)
//	  - type: a100-40gb
//	    nominal: 16          # guaranteed GPUs while the queue has demand
//	    borrowing_limit: 8   # most GPUs beyond nominal; absent = no limit
//	    lending_limit: 8     # most of its unused nominal others may use; absent = all
//	- name: speech
//	  parent: research
//	  quotas: [{type: a100-40gb, nominal: 8}]
//	- name: batch
//	  quotas: [{type: t4, nominal: 16}]
//	namespaces:              # namespace → leaf queue
//	  team-vision: vision
//	  team-speech: speech
//	default: batch           # leaf queue of jobs nothing else maps
//
// A job's leaf queue is, in order: its LabelQueue label; the queue its
// namespace maps to under namespaces; the leaf queue named like its
// namespace; default. A job with none of these, or whose label names no
// leaf queue, is skipped with a Warning Event, as a malformed annotation
// is.
type QueueConfig struct {
	// Queues is the quota tree (validated by the library's scheduler).
	Queues []quota.Queue `json:"queues"`
	// Namespaces maps namespaces to leaf queues.
	Namespaces map[string]string `json:"namespaces,omitempty"`
	// Default is the leaf queue of jobs nothing else maps ("" = none).
	Default string `json:"default,omitempty"`

	leaf map[string]bool
}

// ParseQueueConfig reads and checks the QueueConfig in a ConfigMap's
// QueuesConfigKey. GPU types may be aliases ("a100"); they are
// canonicalised. Errors wrap ErrQueueConfig and name the field or queue.
func ParseQueueConfig(cm *corev1.ConfigMap) (*QueueConfig, error) {
	data, ok := cm.Data[QueuesConfigKey]
	if !ok {
		return nil, fmt.Errorf("%w: ConfigMap %s/%s has no key %q", ErrQueueConfig, cm.Namespace, cm.Name, QueuesConfigKey)
	}
	var c QueueConfig
	if err := yaml.UnmarshalStrict([]byte(data), &c); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrQueueConfig, QueuesConfigKey, err)
	}
	if len(c.Queues) == 0 {
		return nil, fmt.Errorf("%w: %s: no queues", ErrQueueConfig, QueuesConfigKey)
	}
	for i := range c.Queues {
		q := &c.Queues[i]
		q.Quotas = slices.Clone(q.Quotas)
		for k := range q.Quotas {
			t, err := accel.CanonicalType(string(q.Quotas[k].Type))
			if err != nil {
				return nil, fmt.Errorf("%w: queue %q: quotas[%d]: %v", ErrQueueConfig, q.Name, k, err)
			}
			q.Quotas[k].Type = t
		}
	}
	// The scheduler validates the tree (cycles, unknown parents, quotas
	// over the cohort's, negative limits) on a round with no jobs.
	s, err := scheduler.New(scheduler.Config{Policy: baselines.FIFO{}})
	if err != nil {
		return nil, err
	}
	if _, err := s.Schedule(context.Background(), scheduler.Input{Queues: c.Queues}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrQueueConfig, err)
	}
	parent := map[string]bool{}
	for _, q := range c.Queues {
		parent[q.Parent] = true
	}
	c.leaf = map[string]bool{}
	for _, q := range c.Queues {
		c.leaf[q.Name] = !parent[q.Name]
	}
	for _, ns := range slices.Sorted(maps.Keys(c.Namespaces)) {
		if q := c.Namespaces[ns]; !c.leaf[q] {
			return nil, fmt.Errorf("%w: namespaces: %s maps to %q, which is not a leaf queue", ErrQueueConfig, ns, q)
		}
	}
	if c.Default != "" && !c.leaf[c.Default] {
		return nil, fmt.Errorf("%w: default %q is not a leaf queue", ErrQueueConfig, c.Default)
	}
	return &c, nil
}

// QueueOf returns the leaf queue of a job in namespace with labels (the
// Job's, or a pod group's first pod's). Errors wrap ErrAnnotation.
func (c *QueueConfig) QueueOf(namespace string, labels map[string]string) (string, error) {
	if v, ok := labels[LabelQueue]; ok {
		v = strings.TrimSpace(v)
		if !c.leaf[v] {
			return "", fmt.Errorf("%w: label %s=%q: not a leaf queue of the queue configuration", ErrAnnotation, LabelQueue, v)
		}
		return v, nil
	}
	if q, ok := c.Namespaces[namespace]; ok {
		return q, nil
	}
	if c.leaf[namespace] {
		return namespace, nil
	}
	if c.Default != "" {
		return c.Default, nil
	}
	return "", fmt.Errorf("%w: namespace %q maps to no queue, the job has no %s label and the queue configuration has no default", ErrAnnotation, namespace, LabelQueue)
}

// queueWatch follows the queue ConfigMap.
type queueWatch struct {
	namespace, name string
	factory         informers.SharedInformerFactory
	lister          corelisters.ConfigMapLister
	// last is the last valid configuration and version its
	// ResourceVersion; bad the last error reported.
	last    *QueueConfig
	version string
	bad     string
}

// watchQueues sets up the informer on Config.QueuesConfigMap
// ("namespace/name"), one object, and a round whenever it changes.
func (h *Host) watchQueues() error {
	ns, name, ok := strings.Cut(h.cfg.QueuesConfigMap, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("%w: QueuesConfigMap %q: want namespace/name", ErrConfig, h.cfg.QueuesConfigMap)
	}
	f := informers.NewSharedInformerFactoryWithOptions(h.cfg.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	inf := f.Core().V1().ConfigMaps()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Kick() },
		UpdateFunc: func(any, any) { h.Kick() },
		DeleteFunc: func(any) { h.Kick() },
	}); err != nil {
		return fmt.Errorf("host: event handler: %w", err)
	}
	h.queues = &queueWatch{namespace: ns, name: name, factory: f, lister: inf.Lister()}
	h.synced = append(h.synced, inf.Informer().HasSynced)
	return nil
}

// queueConfig returns the round's queue configuration: nil without
// Config.QueuesConfigMap or while the ConfigMap does not exist (no
// quotas); the last valid one while it is malformed (a Warning is logged
// and errors_total{op="queues"} counted once per bad version).
func (h *Host) queueConfig() *QueueConfig {
	w := h.queues
	if w == nil {
		return nil
	}
	cm, err := w.lister.ConfigMaps(w.namespace).Get(w.name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if w.bad != "absent" {
				w.bad = "absent"
				h.log.Warn("queue ConfigMap not found: no quotas", "configmap", h.cfg.QueuesConfigMap)
			}
			w.last, w.version = nil, ""
			return nil
		}
		h.m.errors.WithLabelValues("queues").Inc()
		return w.last
	}
	if cm.ResourceVersion == w.version && w.last != nil {
		return w.last
	}
	c, err := ParseQueueConfig(cm)
	if err != nil {
		if msg := cm.ResourceVersion + err.Error(); w.bad != msg {
			w.bad = msg
			h.m.errors.WithLabelValues("queues").Inc()
			h.log.Warn("queue ConfigMap malformed: keeping the last valid one", "configmap", h.cfg.QueuesConfigMap, "err", err)
		}
		return w.last
	}
	w.last, w.version, w.bad = c, cm.ResourceVersion, ""
	return c
}
