package host

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the host's Prometheus metrics.
type metrics struct {
	roundDuration prometheus.Histogram
	jobs          *prometheus.GaugeVec // state: running, waiting, skipped
	gpus          *prometheus.GaugeVec // type: allocated GPUs
	gpusOffered   *prometheus.GaugeVec // type: offered GPUs
	queueGPUs     *prometheus.GaugeVec // queue, type, measure: Plan.Queues
	gpusHidden    *prometheus.GaugeVec // type, reason: GPUs not offered
	binds         prometheus.Counter
	evictions     *prometheus.CounterVec // reason
	errors        *prometheus.CounterVec // op
	refused       *prometheus.CounterVec // reason
	leader        prometheus.Gauge
	rounds        prometheus.Counter
	carbon        prometheus.Gauge // g/kWh now, from Config.Carbon
}

func newMetrics(reg *prometheus.Registry, own bool) (*metrics, error) {
	m := &metrics{
		roundDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "goodsched_round_duration_seconds",
			Help: "Time of one scheduling round: snapshot, Schedule and apply.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_jobs",
			Help: "Jobs after the last round, by state (running, waiting, skipped)."}, []string{"state"}),
		gpus: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_gpus_allocated",
			Help: "GPUs the last round's plan gives jobs, by canonical type."}, []string{"type"}),
		gpusOffered: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_gpus_offered",
			Help: "GPUs offered to the last round, by canonical type (every type of a node with GPUs, zero included)."}, []string{"type"}),
		gpusHidden: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_gpus_hidden",
			Help: "GPUs of the nodes the last round did not offer, by canonical type and reason (not-ready, cordoned, taint, foreign-pods, terminating, unallocatable; every type of a node with GPUs, zero included)."}, []string{"type", "reason"}),
		queueGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_queue_gpus",
			Help: "Each queue's standing after the last round (scheduler.Plan.Queues), by queue, canonical type and measure (guaranteed, entitled, used, borrowed, lent, pending)."}, []string{"queue", "type", "measure"}),
		binds: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodsched_binds_total",
			Help: "Pods bound."}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodsched_evictions_total",
			Help: "Pods evicted or deleted by the scheduler, by reason (preempt, shrink, move, node-lost, half-bound, rollback, extra)."}, []string{"reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodsched_errors_total",
			Help: "Failed operations, by op (schedule, bind, evict, delete, patch, annotation, carbon, slowdown)."}, []string{"op"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodsched_refused_total",
			Help: "Pods of ours whose goodsched.io/devices annotation was not read, counted once per pod, by reason (annotation-too-long, binding-unverified, annotation-malformed)."}, []string{"reason"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goodsched_leader",
			Help: "1 while this replica runs rounds (holds the lease)."}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodsched_rounds_total", Help: "Rounds run."}),
		carbon: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goodsched_carbon_intensity_grams_per_kwh",
			Help: "Grid carbon intensity for the last round's moment, from the configured forecast (Config.Carbon); NaN when the last fetch failed."}),
	}
	cs := []prometheus.Collector{m.roundDuration, m.jobs, m.gpus, m.gpusOffered, m.gpusHidden, m.queueGPUs, m.binds, m.evictions, m.errors, m.refused, m.leader, m.rounds, m.carbon}
	if own {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
