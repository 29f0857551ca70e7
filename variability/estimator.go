package variability

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/goodsched/goodsched/accel"
)

// Options configures an Estimator. The zero value is the default.
type Options struct {
	// Window is how many recent observations each device keeps; its
	// estimate is their median, so a change shows after ⌊Window/2⌋+1
	// reports and a one-off outlier never moves it (default 5; ≥ 1).
	Window int
	// LocalityPenalty is how many times longer a gang's steps take when
	// it spans more than one node (default 1: none; ≥ 1).
	LocalityPenalty float64
	// Tolerance is the relative difference below which a report agrees
	// with the current estimate (default 0.02).
	Tolerance float64
	// Forget returns a device to its prior (dynamic factor 1) when no
	// report has touched it in this many Observe calls (a host calls
	// Observe once per measurement round, with every gang's report): a
	// device that placement avoids after an interference episode is
	// otherwise never measured again, and its episode never ends for the
	// scheduler. 0 = never; ≥ 0.
	Forget int
}

func (o Options) withDefaults() (Options, error) {
	if o.Window == 0 {
		o.Window = 5
	}
	if o.LocalityPenalty == 0 {
		o.LocalityPenalty = 1
	}
	if o.Tolerance == 0 {
		o.Tolerance = 0.02
	}
	switch {
	case o.Window < 1:
		return o, fmt.Errorf("%w: Options.Window %d < 1", ErrInvalid, o.Window)
	case !(o.LocalityPenalty >= 1) || math.IsInf(o.LocalityPenalty, 0):
		return o, fmt.Errorf("%w: Options.LocalityPenalty %v is not finite and ≥ 1", ErrInvalid, o.LocalityPenalty)
	case !(o.Tolerance > 0 && o.Tolerance < 1):
		return o, fmt.Errorf("%w: Options.Tolerance %v is outside (0, 1)", ErrInvalid, o.Tolerance)
	case o.Forget < 0:
		return o, fmt.Errorf("%w: Options.Forget %d < 0", ErrInvalid, o.Forget)
	}
	return o, nil
}

// Report is one gang's measured step time.
type Report struct {
	// Job names the job (for error messages).
	Job string
	// Class is the job's application class (see Table).
	Class string
	// Devices are the gang's devices (accel.Device.ID values).
	Devices []string
	// Step is the measured step time; Base is the step time the job's
	// model predicts for the same configuration on nominal devices of
	// one node (both > 0).
	Step, Base time.Duration
	// DeviceSteps, when the host measures them, are each device's own
	// part of the step, in Devices order: the time its worker computes
	// before it waits for the others (Base × the device's slowdown). They
	// tell which device slows the gang down, which Step alone does not
	// when one gang spans every suspect. Empty = only Step; each > 0.
	DeviceSteps []time.Duration
}

// ReportError is the error for one refused report of a batch.
type ReportError struct {
	// Index is the report's position in the batch; Job its job.
	Index int
	Job   string
	// Err wraps ErrBadReport or ErrUnknownDevice.
	Err error
}

// Error names the report's position and job, then why it was refused.
func (e *ReportError) Error() string {
	return fmt.Sprintf("report %d (job %q): %v", e.Index, e.Job, e.Err)
}

// Unwrap returns Err.
func (e *ReportError) Unwrap() error { return e.Err }

// Estimator learns each device's current slowdown online from gangs'
// step times. A device's slowdown for a class is its prior factor (the
// Table it was built with, for example binned measurements; 1 without
// one) times a dynamic factor learned from reports: interference, a
// throttled GPU, a noisy neighbour.
//
// Each report says the gang's largest factor is r = Step / Base (divided
// by the locality penalty when the gang spans nodes). Every device of the
// gang whose estimate exceeds r is no slower than r and observes r; when
// r exceeds every estimate, every device of the gang observes it (one of
// them became slower, and later gangs without it clear the others); when
// r agrees with the largest estimate, the devices that have it observe r.
// A report with DeviceSteps instead has each device observe its own
// time ÷ Base. A device's dynamic factor is the median of its last
// Options.Window observations (initially all 1).
//
// Estimator is safe for concurrent use.
type Estimator struct {
	mu    sync.RWMutex
	opts  Options
	prior *Table
	node  map[string]string    // device → node
	obs   map[string][]float64 // device → ring of dynamic observations
	next  map[string]int       // device → ring position
	dyn   map[string]float64   // device → current dynamic factor
	calls int                  // Observe calls so far
	seen  map[string]int       // device → the Observe call that last touched it
}

// NewEstimator returns an estimator over c's devices with the prior
// factors (nil = all 1; it must not be modified afterwards).
func NewEstimator(c accel.Cluster, prior *Table, o Options) (*Estimator, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Estimator{opts: o, prior: prior, node: map[string]string{}, obs: map[string][]float64{}, next: map[string]int{}, dyn: map[string]float64{}, seen: map[string]int{}}
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if _, dup := e.node[d.ID]; dup {
				return nil, fmt.Errorf("%w: device %q appears twice in the cluster", ErrInvalid, d.ID)
			}
			e.node[d.ID] = n.Name
			e.dyn[d.ID] = 1
		}
	}
	if prior != nil {
		for _, d := range prior.Devices() {
			if _, ok := e.node[d]; !ok {
				return nil, fmt.Errorf("%w: prior lists device %q", ErrUnknownDevice, d)
			}
		}
	}
	return e, nil
}

// Observe applies a batch of reports in order. A report that cannot be
// used is refused and the others apply; the error joins one *ReportError
// per refused report (errors.Is ErrBadReport or ErrUnknownDevice).
func (e *Estimator) Observe(reports ...Report) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	var errs []error
	defer e.forget()
	for i, r := range reports {
		if err := e.check(r); err != nil {
			errs = append(errs, &ReportError{Index: i, Job: r.Job, Err: err})
			continue
		}
		e.apply(r)
	}
	return errors.Join(errs...)
}

// forget returns the devices no report has touched in Options.Forget
// calls to their prior.
func (e *Estimator) forget() {
	if e.opts.Forget == 0 {
		return
	}
	for d := range e.obs {
		if e.calls-e.seen[d] >= e.opts.Forget {
			delete(e.obs, d)
			delete(e.next, d)
			delete(e.seen, d)
			e.dyn[d] = 1
		}
	}
}

func (e *Estimator) check(r Report) error {
	if len(r.Devices) == 0 {
		return fmt.Errorf("%w: no devices", ErrBadReport)
	}
	if r.Step <= 0 || r.Base <= 0 {
		return fmt.Errorf("%w: step time %v and base time %v must be > 0", ErrBadReport, r.Step, r.Base)
	}
	if len(r.DeviceSteps) > 0 && len(r.DeviceSteps) != len(r.Devices) {
		return fmt.Errorf("%w: %d device step times for %d devices", ErrBadReport, len(r.DeviceSteps), len(r.Devices))
	}
	for i, st := range r.DeviceSteps {
		if st <= 0 {
			return fmt.Errorf("%w: device %q step time %v must be > 0", ErrBadReport, r.Devices[i], st)
		}
	}
	seen := make(map[string]bool, len(r.Devices))
	for _, d := range r.Devices {
		if _, ok := e.node[d]; !ok {
			return fmt.Errorf("%w: %q", ErrUnknownDevice, d)
		}
		if seen[d] {
			return fmt.Errorf("%w: device %q listed twice", ErrBadReport, d)
		}
		seen[d] = true
	}
	return nil
}

func (e *Estimator) apply(r Report) {
	if len(r.DeviceSteps) > 0 { // each device observes its own
		for i, d := range r.Devices {
			e.touch(d)
			e.observe(d, float64(r.DeviceSteps[i])/float64(r.Base)/e.prior.Factor(d, r.Class))
		}
		return
	}
	ratio := float64(r.Step) / float64(r.Base)
	if e.spans(r.Devices) {
		ratio /= e.opts.LocalityPenalty
	}
	est := make([]float64, len(r.Devices))
	worst := 0.0
	for i, d := range r.Devices {
		e.touch(d)
		est[i] = e.prior.Factor(d, r.Class) * e.dyn[d]
		worst = max(worst, est[i])
	}
	tol := 1 + e.opts.Tolerance
	slower := ratio > worst*tol
	for i, d := range r.Devices {
		if slower || est[i] > ratio*tol || est[i]*tol >= worst {
			e.observe(d, ratio/e.prior.Factor(d, r.Class))
		}
	}
}

// touch records that this Observe call reported dev, for forget (which
// alone reads seen, and only when Options.Forget > 0).
func (e *Estimator) touch(dev string) {
	if e.opts.Forget > 0 {
		e.seen[dev] = e.calls
	}
}

func (e *Estimator) spans(devs []string) bool {
	for _, d := range devs[1:] {
		if e.node[d] != e.node[devs[0]] {
			return true
		}
	}
	return false
}

func (e *Estimator) observe(dev string, v float64) {
	w := e.obs[dev]
	if w == nil {
		w = make([]float64, e.opts.Window)
		for i := range w {
			w[i] = 1
		}
		e.obs[dev] = w
	}
	w[e.next[dev]] = v
	e.next[dev] = (e.next[dev] + 1) % len(w)
	e.dyn[dev] = median(slices.Clone(w))
}

// Slowdown returns device's current estimated slowdown for class (1 for
// a device it does not know).
func (e *Estimator) Slowdown(device, class string) float64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.slowdown(device, class)
}

func (e *Estimator) slowdown(device, class string) float64 {
	d, ok := e.dyn[device]
	if !ok {
		return 1
	}
	return e.prior.Factor(device, class) * d
}

// Speeds returns an immutable snapshot of the estimates for the
// scheduler (it implements placement.Speeds): classOf maps each job to
// its application class (a job it does not list, or a class the prior
// does not have, gets factor 1 times the device's dynamic factor).
// classOf must not be modified afterwards.
func (e *Estimator) Speeds(classOf map[string]string) *Speeds {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var classes []string
	if e.prior != nil {
		classes = e.prior.classes
	}
	s := &Speeds{classes: classes, classOf: classOf, penalty: e.opts.LocalityPenalty,
		rows: make(map[string][]float64, len(e.dyn))}
	for d, v := range e.dyn {
		row := make([]float64, len(classes)+1) // per class, then no class
		for k, c := range classes {
			row[k] = e.prior.Factor(d, c) * v
		}
		row[len(classes)] = v
		s.rows[d] = row
	}
	return s
}

// Speeds is a snapshot of an Estimator's estimates. It implements
// placement.Speeds and is safe for concurrent use.
type Speeds struct {
	classes []string
	classOf map[string]string
	penalty float64
	rows    map[string][]float64 // device → slowdown per class, then without one
}

func (s *Speeds) classIndex(job string) int {
	c, ok := s.classOf[job]
	if !ok {
		return len(s.classes)
	}
	if k := slices.Index(s.classes, c); k >= 0 {
		return k
	}
	return len(s.classes)
}

// Slowdown returns the device's slowdown for job's class.
func (s *Speeds) Slowdown(job, device string) float64 {
	row, ok := s.rows[device]
	if !ok {
		return 1
	}
	return row[s.classIndex(job)]
}

// Slowdowns writes job's slowdown on each of devices into out (as long
// as devices): Slowdown for many devices at once, for placers.
func (s *Speeds) Slowdowns(job string, devices []string, out []float64) {
	k := s.classIndex(job)
	for i, d := range devices {
		out[i] = 1
		if row, ok := s.rows[d]; ok {
			out[i] = row[k]
		}
	}
}

// LocalityPenalty returns the estimator's Options.LocalityPenalty.
func (s *Speeds) LocalityPenalty(string) float64 { return s.penalty }

// Class returns job's application class ("" when not known).
func (s *Speeds) Class(job string) string { return s.classOf[job] }
