package host

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability"
)

// Per-device slowdown estimation (Config.Variability): the step times jobs
// report (ObserveSteps, called by the report endpoint for every report it
// accepts) feed a variability.Estimator together with the devices the
// job's pods held at the last round, as this host bound them; each round
// passes the estimates to the scheduler as Input.Speeds, so that the
// default placer keeps gangs off slow devices and the goodput policy sees
// a gang's slowdown.
//
// A job's base time for a configuration (replicas, per-GPU batch,
// accumulation passes) is the fastest step it has reported in it, less
// the locality penalty when its gang spanned nodes: the estimator learns
// how much slower a job runs on its current devices than on the best ones
// it has had. A job that has only run on slow devices teaches nothing
// until it runs elsewhere or other jobs run on them.

// StepTime is one configuration's measured step time, as a job reports it
// (client.Steps): the gang's replicas, its per-GPU batch and accumulation
// passes, and the mean time of one optimizer step in seconds.
type StepTime struct {
	Replicas, Local, Accum int
	Seconds                float64
}

// StepSink learns the step times jobs report; *Host implements it (see
// ObserveSteps).
type StepSink interface {
	ObserveSteps(job JobKey, steps []StepTime) error
}

var _ StepSink = (*Host)(nil)

// slowdowns is the host's side of Config.Variability.
type slowdowns struct {
	est     *variability.Estimator
	penalty float64
	gauge   *prometheus.GaugeVec
	errs    prometheus.Counter

	mu   sync.Mutex
	held map[JobKey][]string // the devices each job held at the last round
	node map[string]string   // device → node, as of the last round
	base map[stepKey]float64 // see the package comment above
}

type stepKey struct {
	job                    JobKey
	replicas, local, accum int
}

// newSlowdowns validates o and registers goodsched_device_slowdown.
func newSlowdowns(o variability.Options, reg *prometheus.Registry, errs *prometheus.CounterVec) (*slowdowns, error) {
	est, err := variability.NewEstimator(accel.Cluster{}, nil, o)
	if err != nil {
		return nil, fmt.Errorf("%w: Variability: %w", ErrConfig, err)
	}
	s := &slowdowns{est: est, penalty: max(o.LocalityPenalty, 1), errs: errs.WithLabelValues("slowdown"),
		held: map[JobKey][]string{}, node: map[string]string{}, base: map[stepKey]float64{},
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodsched_device_slowdown",
			Help: "Estimated slowdown of each GPU of the last round's cluster, learned from the jobs' step-time reports (1 = nominal, 2 = steps take twice as long); only with -variability-estimate."},
			[]string{"node", "gpu"})}
	if err := reg.Register(s.gauge); err != nil {
		return nil, fmt.Errorf("%w: Registry: %w", ErrConfig, err)
	}
	return s, nil
}

// round records the devices each job holds, exports the estimates of
// every device of c and returns them for Input.Speeds: nil while every
// estimate is 1, so that nothing changes before a slowdown is learned.
func (s *slowdowns) round(c accel.Cluster, current []placement.Assignment) placement.Speeds {
	s.est.AddDevices(c)
	held := make(map[JobKey][]string, len(current))
	for _, a := range current {
		held[JobKey(a.Job)] = append(held[JobKey(a.Job)], a.Devices...)
	}
	node := map[string]string{}
	s.gauge.Reset()
	slow := false
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			node[d.ID] = n.Name
			f := s.est.Slowdown(d.ID, "")
			slow = slow || f != 1
			s.gauge.WithLabelValues(n.Name, strings.TrimPrefix(d.ID, n.Name+"/")).Set(f)
		}
	}
	s.mu.Lock()
	s.held, s.node = held, node
	for k := range s.base { // forget the jobs that are gone
		if _, ok := held[k.job]; !ok {
			delete(s.base, k)
		}
	}
	s.mu.Unlock()
	if !slow {
		return nil
	}
	return s.est.Speeds(nil)
}

// ObserveSteps feeds a job's reported step times to the slowdown
// estimator (Config.Variability; without it, it does nothing), with the
// devices the job's pods held at the last round. Only the configurations
// with as many replicas as the job holds devices are attributed to them;
// the others were measured before a resize and are skipped. A step time
// the estimator refuses (not > 0, or a device it does not know) is counted
// in goodsched_errors_total{op="slowdown"}, changes no estimate, and is
// returned (errors.Is variability.ErrBadReport or ErrUnknownDevice).
func (h *Host) ObserveSteps(job JobKey, steps []StepTime) error {
	s := h.slow
	if s == nil {
		return nil
	}
	s.mu.Lock()
	devs := s.held[job]
	spans := false
	for _, d := range devs {
		spans = spans || s.node[d] != s.node[devs[0]]
	}
	var reps []variability.Report
	for _, st := range steps {
		if len(devs) == 0 || st.Replicas != len(devs) {
			continue
		}
		r := variability.Report{Job: string(job), Devices: devs}
		if st.Seconds > 0 && !math.IsInf(st.Seconds, 0) {
			r.Step = time.Duration(st.Seconds * float64(time.Second))
			own := st.Seconds
			if spans {
				own /= s.penalty
			}
			k := stepKey{job, st.Replicas, st.Local, st.Accum}
			if b, ok := s.base[k]; !ok || own < b {
				s.base[k] = own
			}
			r.Base = time.Duration(s.base[k] * float64(time.Second))
		} else {
			r.Base = time.Second // Step stays 0: the estimator refuses it
		}
		reps = append(reps, r)
	}
	s.mu.Unlock()
	if len(reps) == 0 {
		return nil
	}
	err := s.est.Observe(reps...)
	if err != nil {
		s.errs.Add(float64(len(unwrapJoined(err))))
		h.log.Warn("slowdown: step times refused", "job", job, "err", err)
	}
	return err
}

func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
