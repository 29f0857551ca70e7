package sim

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PhillyOptions configures ReadPhilly.
type PhillyOptions struct {
	// Jobs is how many consecutive jobs to take (default 10,000).
	Jobs int
	// Seed picks the window's first job and the model of each job
	// (default 0: the window starts at the first eligible job).
	Seed uint64
}

// ReadPhilly builds a workload from a Philly-derived trace in the Pollux
// layout (timestamp "2006-01-02 15:04:05", duration s, num_gpus, gpu_time
// GPU-s, cluster) the way Pollux's workload generator does: jobs of at
// least 60 s and under 1,000 GPU-hours are kept; each is mapped to a model
// by its GPU-hours (under 1: cifar10 or ncf; 1–10: deepspeech2 or bert;
// 10–100: yolov3; above: imagenet), keeps its Philly GPU count, and asks
// for batch size M0 × GPUs (capped at the model's largest batch), as in
// Pollux's "realistic" workloads. Submit times are relative to the
// window's first job. apps must hold the models used.
//
// Each job's Queue is its virtual cluster (the optional cluster column,
// trimmed; "" when the trace has none) and its TraceDuration the run time
// the trace recorded, so that a host can derive tenants' quotas from their
// share of GPU-time (as examples/simulate's -tenants vc does).
func ReadPhilly(r io.Reader, apps map[string]*Application, opts PhillyOptions) ([]JobSpec, error) {
	if opts.Jobs < 0 {
		return nil, fmt.Errorf("%w: PhillyOptions.Jobs %d", ErrInvalid, opts.Jobs)
	}
	if opts.Jobs == 0 {
		opts.Jobs = 10000
	}
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: philly header: %v", ErrInvalid, err)
	}
	col, err := columns(header, "timestamp", "duration", "num_gpus", "gpu_time")
	if err != nil {
		return nil, err
	}
	vc, hasVC := col["cluster"]
	type row struct {
		t     time.Time
		gpus  int
		hours float64
		dur   float64
		vc    string
	}
	var rows []row
	for n := 1; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: philly row %d: %v", ErrInvalid, n, err)
		}
		ts, err := time.Parse("2006-01-02 15:04:05", strings.TrimSpace(rec[col["timestamp"]]))
		if err != nil {
			return nil, fmt.Errorf("%w: philly row %d: timestamp %q", ErrInvalid, n, rec[col["timestamp"]])
		}
		d, err1 := strconv.ParseFloat(strings.TrimSpace(rec[col["duration"]]), 64)
		g, err2 := strconv.ParseFloat(strings.TrimSpace(rec[col["num_gpus"]]), 64)
		gt, err3 := strconv.ParseFloat(strings.TrimSpace(rec[col["gpu_time"]]), 64)
		if err1 != nil || err2 != nil || err3 != nil || math.IsNaN(d+g+gt) || g < 0 || g > 1<<16 {
			return nil, fmt.Errorf("%w: philly row %d: duration/num_gpus/gpu_time", ErrInvalid, n)
		}
		if d < 60 || gt >= 1000*3600 || g < 1 {
			continue
		}
		rw := row{t: ts, gpus: int(g), hours: gt / 3600, dur: d}
		if hasVC && vc < len(rec) {
			rw.vc = strings.TrimSpace(rec[vc])
		}
		rows = append(rows, rw)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: philly trace has no eligible jobs", ErrInvalid)
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.t.Compare(b.t) })
	rng := rand.New(rand.NewPCG(opts.Seed, 0x7f4a7c159e3779b9))
	first := 0
	if opts.Seed != 0 && len(rows) > opts.Jobs {
		first = rng.IntN(len(rows) - opts.Jobs + 1)
	}
	rows = rows[first:min(first+opts.Jobs, len(rows))]
	jobs := make([]JobSpec, 0, len(rows))
	for i, r := range rows {
		var app string
		switch coin := rng.IntN(2) == 0; {
		case r.hours < 1 && coin:
			app = "cifar10"
		case r.hours < 1:
			app = "ncf"
		case r.hours < 10 && coin:
			app = "deepspeech2"
		case r.hours < 10:
			app = "bert"
		case r.hours < 100:
			app = "yolov3"
		default:
			app = "imagenet"
		}
		a := apps[app]
		if a == nil {
			return nil, fmt.Errorf("%w: philly job %d needs model %q", ErrUnknownApplication, i, app)
		}
		batch := min(a.InitBatch*r.gpus, max(a.MaxBatch, a.InitBatch))
		if a.FixedBatch > 0 {
			batch = a.FixedBatch
		}
		jobs = append(jobs, JobSpec{
			Name:          app + "-" + strconv.Itoa(i),
			Submit:        r.t.Sub(rows[0].t),
			Application:   app,
			Replicas:      r.gpus,
			BatchSize:     batch,
			Queue:         r.vc,
			TraceDuration: dur(r.dur),
		})
	}
	slices.SortStableFunc(jobs, func(a, b JobSpec) int { return cmp.Compare(a.Submit, b.Submit) })
	return jobs, nil
}
