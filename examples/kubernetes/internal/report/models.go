package report

import (
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/host"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// models keeps each job's stored state, the goodput models fitted from it
// and the job's last published decision. It is safe for concurrent use.
type models struct {
	cfg Config

	mu        sync.Mutex
	jobs      map[host.JobKey]*entry
	decisions map[host.JobKey]scheduler.Decision
}

// entry is one job's latest known state and, when fitted, its models.
type entry struct {
	rv    uint64 // resource version of the ConfigMap state came from
	state *State
	// fitted for state (fitRV == rv):
	fitRV  uint64
	fitted bool
	curve  *goodput.Curve
	est    *goodput.Estimator
}

func newModels(cfg Config) *models {
	return &models{cfg: cfg, jobs: map[host.JobKey]*entry{}, decisions: map[host.JobKey]scheduler.Decision{}}
}

// parseRV reads a resource version; the API server's are decimal etcd
// revisions. An unparsable one compares as newest.
func parseRV(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return ^uint64(0)
	}
	return n
}

// put records a state read from (or written to) the API server at rv,
// unless a newer one is known already. States of two UIDs of one job key
// (a Job and its re-created successor) compete by resource version too:
// the old Job's pods can no longer write, so the live Job's state, once
// written, stays the newest; until then Config.JobUID keeps the old one
// unused.
func (m *models) put(job host.JobKey, rv uint64, s *State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.jobs[job]
	if e == nil {
		m.jobs[job] = &entry{rv: rv, state: s}
		return
	}
	if rv != ^uint64(0) && e.rv != ^uint64(0) && rv <= e.rv {
		return
	}
	e.rv, e.state = rv, s
}

// forget drops a job whose state ConfigMap was deleted.
func (m *models) forget(job host.JobKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.jobs, job)
	delete(m.decisions, job)
}

// state returns the job's latest known state (nil if none).
func (m *models) state(job host.JobKey) *State {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.jobs[job]; e != nil {
		return e.state
	}
	return nil
}

// fit returns the job's estimator and curve for its latest state, refitting
// when the state changed since the last fit. ok is false when the job has no
// state or no usable measurement.
func (m *models) fit(job host.JobKey) (*goodput.Estimator, *goodput.Curve, bool) {
	m.mu.Lock()
	e := m.jobs[job]
	if e != nil && e.state.UID != "" && m.cfg.JobUID != nil {
		if uid, ok := m.cfg.JobUID(job); ok && string(uid) != e.state.UID {
			e = nil // the state of a deleted Job of the same name
		}
	}
	if e == nil {
		m.mu.Unlock()
		return nil, nil, false
	}
	if e.fitted && e.fitRV == e.rv {
		est, c := e.est, e.curve
		m.mu.Unlock()
		return est, c, c != nil
	}
	rv, s := e.rv, e.state
	m.mu.Unlock()

	est, c := fitState(s, m.cfg)

	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.jobs[job]; cur == e && e.rv == rv {
		e.fitted, e.fitRV, e.est, e.curve = true, rv, est, c
	}
	return est, c, c != nil
}

// fitState builds a fresh Estimator from a stored state, so that the model
// is a function of the state alone (no warm start from a fit that a
// restarted scheduler would not have), and takes its curve.
func fitState(s *State, cfg Config) (*goodput.Estimator, *goodput.Curve) {
	obs := s.Observations()
	if len(obs) == 0 {
		return nil, nil
	}
	est, err := goodput.NewEstimator(goodput.EstimatorConfig{Limits: s.Limits, MaxReplicas: cfg.MaxReplicas, Explore: cfg.Explore, Fit: cfg.Fit})
	if err != nil {
		return nil, nil
	}
	for _, typ := range slices.Sorted(maps.Keys(obs)) {
		if est.ObserveBatch(typ, obs[typ]) != nil {
			return nil, nil
		}
	}
	if s.Grad != (goodput.GradStats{}) && est.ObserveGrad(s.Grad) != nil {
		return nil, nil
	}
	c, err := est.Curve(goodput.CurveOptions{})
	if err != nil {
		return nil, nil
	}
	return est, c
}

// Speedup implements host.ModelSource: the job's fitted curve once it has
// reported at least one measured configuration.
func (m *models) Speedup(job host.JobKey) (goodput.Speedup, bool) {
	_, c, ok := m.fit(job)
	if !ok {
		return nil, false
	}
	return c, true
}

// Publish implements host.ModelSource. It keeps the decisions of jobs
// that can report (those with stored state or a batch plan) and drops the
// rest, so that rigid and elastic jobs that never report do not pile up.
func (m *models) Publish(job host.JobKey, d scheduler.Decision) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.jobs[job] == nil && d.Batch.Local == 0 {
		delete(m.decisions, job)
		return
	}
	m.decisions[job] = d
}

func (m *models) decision(job host.JobKey) (scheduler.Decision, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.decisions[job]
	return d, ok
}

// firstRun is the model of an adaptive job that has not reported yet: one
// GPU, the Estimator's exploration bound before any run (Pollux's
// maxProfiledReplicas rule), speedup 1 there and 0 elsewhere.
type firstRun struct{}

func (firstRun) Speedup(_ string, nodes, replicas int) float64 {
	if nodes == 1 && replicas == 1 {
		return 1
	}
	return 0
}

// Prior implements host.PriorSource: an adaptive job without measurements
// is offered one GPU until its first report, as the simulator and Pollux
// do; once it reported, Speedup's fitted curve takes over.
func (m *models) Prior(job host.JobKey) (goodput.Speedup, bool) {
	if _, _, ok := m.fit(job); ok {
		return nil, false
	}
	return firstRun{}, true
}
