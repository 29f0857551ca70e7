package sim

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/goodsched/goodsched/accel"
)

// JobResult is the outcome of one job.
type JobResult struct {
	// Name and Application come from the workload.
	Name        string `json:"name"`
	Application string `json:"application"`
	// Submit is the arrival time since the start of the workload; Start
	// and Finish are on the same clock.
	Submit time.Duration `json:"submit"`
	// Start is when the job first ran (-1 if it never did).
	Start time.Duration `json:"start"`
	// Finish is when it reached its target (-1 if it did not).
	Finish    time.Duration `json:"finish"`
	Completed bool          `json:"completed"`
	// JCT is Finish − Submit for completed jobs, 0 otherwise.
	JCT time.Duration `json:"jct"`
	// Restarts counts re-allocations after the first start.
	Restarts int `json:"restarts"`
	// Failures counts node failures that interrupted the job.
	Failures int `json:"failures"`
	// DeviceSeconds is the device time the job held (stalls included).
	DeviceSeconds float64 `json:"device_seconds"`
	// Isolated is the job's run time alone on its requested devices and
	// batch (ground truth, one restart stall), the reference of
	// finish-time fairness.
	Isolated time.Duration `json:"isolated"`
	// FTF is the finish-time fairness ρ = JCT / Isolated (0 if the job did
	// not complete); ρ ≤ 1 means the job fared at least as well as alone.
	FTF float64 `json:"ftf"`
}

// UtilSample is the state of the cluster at one round.
type UtilSample struct {
	Time    time.Duration `json:"time"`
	Busy    int           `json:"busy"`    // devices assigned to jobs
	Healthy int           `json:"healthy"` // devices up
	Running int           `json:"running"` // jobs holding devices
	Waiting int           `json:"waiting"` // submitted jobs without devices
}

// Result holds the metrics of one simulation. JCT statistics are over
// completed jobs.
type Result struct {
	// Jobs holds one result per workload job, in workload order.
	Jobs []JobResult `json:"jobs"`
	// Utilization holds one sample per round.
	Utilization []UtilSample `json:"utilization"`
	// AvgJCT, P50JCT and P99JCT are the mean, median and nearest-rank 99th
	// percentile JCT.
	AvgJCT time.Duration `json:"avg_jct"`
	P50JCT time.Duration `json:"p50_jct"`
	P99JCT time.Duration `json:"p99_jct"`
	// Makespan is the last completion minus the first submission.
	Makespan time.Duration `json:"makespan"`
	// GPUHours is the device time held by jobs, stalls included.
	GPUHours float64 `json:"gpu_hours"`
	// Restarts, Failures and Completed sum the per-job figures.
	Restarts  int `json:"restarts"`
	Failures  int `json:"failures"`
	Completed int `json:"completed"`
	// AvgFTF, P99FTF and MaxFTF summarise finish-time fairness.
	AvgFTF float64 `json:"avg_ftf"`
	P99FTF float64 `json:"p99_ftf"`
	MaxFTF float64 `json:"max_ftf"`
	// Reports counts the step-time measurements jobs reported to their
	// goodput Estimators (each may trigger a refit).
	Reports int `json:"reports"`
	// Rounds is the number of scheduling rounds simulated.
	Rounds int `json:"rounds"`
	// EnergyKWh and CarbonKg are the facility energy and the emissions of
	// every device, busy or idle, over the run and, with Config.Slack, on
	// to the latest deadline if the run ends before it (the same window
	// for every policy); Config.Carbon set, 0 otherwise. BusyCarbonKg and
	// IdleCarbonKg split CarbonKg.
	EnergyKWh    float64 `json:"energy_kwh,omitempty"`
	CarbonKg     float64 `json:"carbon_kg,omitempty"`
	BusyCarbonKg float64 `json:"busy_carbon_kg,omitempty"`
	IdleCarbonKg float64 `json:"idle_carbon_kg,omitempty"`
	// DownCarbonKg and TransitionCarbonKg are, of CarbonKg, the nodes
	// suspended or off and the nodes changing state, and Transitions how
	// many changes of state there were (Config.Provision; 0 otherwise).
	DownCarbonKg       float64 `json:"down_carbon_kg,omitempty"`
	TransitionCarbonKg float64 `json:"transition_carbon_kg,omitempty"`
	Transitions        int     `json:"transitions,omitempty"`
	// DeadlineMisses counts jobs that finished after their deadline or not
	// at all (Config.Slack set; 0 otherwise).
	DeadlineMisses int `json:"deadline_misses,omitempty"`
	// Tenants has one entry per leaf queue of Config.Queues, by name (nil
	// without queues).
	Tenants []TenantResult `json:"tenants,omitempty"`
	// ServiceShortfall counts the replica-rounds Config.Services asked for
	// and found no room for (0 when the cluster always had room).
	ServiceShortfall int `json:"service_shortfall,omitempty"`
}

func (e *engine) sample() {
	s := UtilSample{Time: dur(e.now), Healthy: e.healthy}
	e.refreshLive()
	for _, j := range e.live {
		if len(j.devs) > 0 {
			s.Running++
			s.Busy += len(j.devs)
		} else {
			s.Waiting++
		}
	}
	if k := len(e.util); k > 0 && e.util[k-1].Time == s.Time {
		e.util[k-1] = s
		return
	}
	e.util = append(e.util, s)
}

func (e *engine) result() (Result, error) {
	var r Result
	r.Utilization = e.util
	r.ServiceShortfall = e.serviceShortfall
	r.Rounds = len(e.util)
	var jcts, ftfs []float64
	first, last := math.Inf(1), math.Inf(-1)
	for _, j := range e.jobs {
		if j.done && len(j.devs) > 0 {
			return Result{}, fmt.Errorf("%w: completed job %s still holds devices", ErrLostJob, j.spec.Name)
		}
		jr := JobResult{
			Name: j.spec.Name, Application: j.spec.Application, Submit: j.spec.Submit,
			Start: -1, Finish: -1, Completed: j.done, Restarts: max(j.allocs-1, 0),
			Failures: j.failures, DeviceSeconds: j.attained,
		}
		if j.started {
			jr.Start = dur(j.startAt)
		}
		first = min(first, j.submit)
		iso := e.isolated(j)
		jr.Isolated = dur(iso)
		if j.done {
			jr.Finish = dur(j.finish)
			jr.JCT = dur(j.finish - j.submit)
			jcts = append(jcts, j.finish-j.submit)
			last = max(last, j.finish)
			if iso > 0 {
				jr.FTF = (j.finish - j.submit) / iso
				ftfs = append(ftfs, jr.FTF)
			}
			r.Completed++
		}
		r.Restarts += jr.Restarts
		r.Failures += j.failures
		r.GPUHours += j.attained / 3600
		if j.lrn != nil {
			r.Reports += j.lrn.reports
		}
		r.Jobs = append(r.Jobs, jr)
	}
	if r.Completed+countUnfinished(e.jobs) != len(e.cfg.Jobs) || len(r.Jobs) != len(e.cfg.Jobs) {
		return Result{}, fmt.Errorf("%w: %d jobs in, %d accounted for", ErrLostJob, len(e.cfg.Jobs), len(r.Jobs))
	}
	if len(jcts) > 0 {
		r.AvgJCT = dur(mean(jcts))
		r.P50JCT = dur(percentile(jcts, 50))
		r.P99JCT = dur(percentile(jcts, 99))
		r.Makespan = dur(last - first)
	}
	if len(ftfs) > 0 {
		r.AvgFTF, r.P99FTF, r.MaxFTF = mean(ftfs), percentile(ftfs, 99), slices.Max(ftfs)
	}
	if err := e.carbonResult(&r); err != nil {
		return Result{}, err
	}
	r.Tenants = e.tenantResults()
	return r, nil
}

func countUnfinished(js []*job) int {
	k := 0
	for _, j := range js {
		if !j.done {
			k++
		}
	}
	return k
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentile is the nearest-rank p-th percentile.
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// isolated is the job's ground-truth run time alone on its requested
// devices of its application's default type (packed on as few nodes as
// possible) with its requested batch, plus one restart stall.
func (e *engine) isolated(j *job) float64 { return e.isolatedFrom(j, 0, 0) }

// isolatedFrom is isolated from a point of the job's training: its
// progress within epoch, restart stall included.
func (e *engine) isolatedFrom(j *job, progress float64, epoch int) float64 {
	app := j.app
	typ := app.DefaultType()
	if _, ok := e.perNode[typ]; !ok && len(e.types) > 0 {
		typ = e.jobTypesOr(j)
	}
	per := max(e.perNode[typ], 1)
	r := j.spec.Replicas
	var counts []int
	for left := r; left > 0; left -= per {
		counts = append(counts, min(left, per))
	}
	lo, hi, ok := app.LocalRange(typ)
	if !ok {
		return 0
	}
	b := j.fixedBatch()
	local, accum := SplitBatch(b, r, lo, hi, max(app.MaxBatch, b), r == 1 && b > app.InitBatch)
	step, sync, ok := app.StepTime(typ, counts, float64(local))
	if !ok || !(step > 0) {
		return 0
	}
	iter := step + float64(accum)*(step-min(sync, step))
	batch := float64(local * r * (accum + 1))
	t := app.RestartDelay.Seconds()
	for ep := epoch; ep < app.MaxEpochs; ep++ {
		from := app.EpochProgress(ep)
		if ep == epoch && progress > from {
			from = progress
		}
		if to := app.EpochProgress(ep + 1); to > from {
			t += (to - from) / (app.Gain(batch, ep) / iter)
		}
	}
	return t
}

func (e *engine) jobTypesOr(j *job) accel.TypeKey {
	if ts := e.jobTypes(j); len(ts) > 0 {
		return ts[0]
	}
	return j.app.DefaultType()
}

// WriteCSV writes one row per job: name, application, submit_s, start_s,
// finish_s, completed, jct_s, restarts, failures, gpu_seconds, isolated_s,
// ftf. Times are seconds; start and finish are -1 when not reached.
func (r Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"name", "application", "submit_s", "start_s", "finish_s", "completed", "jct_s", "restarts", "failures", "gpu_seconds", "isolated_s", "ftf"}); err != nil {
		return err
	}
	f := func(d time.Duration) string {
		if d < 0 {
			return "-1"
		}
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	}
	jobs := slices.Clone(r.Jobs)
	slices.SortStableFunc(jobs, func(a, b JobResult) int { return cmp.Or(cmp.Compare(a.Submit, b.Submit), cmp.Compare(a.Name, b.Name)) })
	for _, j := range jobs {
		rec := []string{j.Name, j.Application, f(j.Submit), f(j.Start), f(j.Finish), strconv.FormatBool(j.Completed),
			f(j.JCT), strconv.Itoa(j.Restarts), strconv.Itoa(j.Failures), strconv.FormatFloat(j.DeviceSeconds, 'f', 1, 64),
			f(j.Isolated), strconv.FormatFloat(j.FTF, 'f', 4, 64)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
