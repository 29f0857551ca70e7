package main

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goodsched/goodsched/scheduler/dispatch"
)

// The faulty-work scenario, in the model of Abdulazeez, Garncarek, Kowalski
// and Wong (IEEE EDGE 2017, arXiv 1705.02671): part of the work is faulty
// or malicious; the host knows each task's risk; a scan costs worker time
// and catches a bad task, which is then rejected; a bad task that runs
// unscanned costs its worker its run and then a recovery time. The numbers
// below are this example's, not the paper's (it states conditions, not a
// parameter set).
const (
	faultyMeanWork  = time.Millisecond       // task run time: exponential, this mean
	faultyScanCost  = 500 * time.Microsecond // a scan, whatever the task
	faultyRecovery  = 10 * time.Millisecond  // a worker hit by an unscanned bad task is lost this long
	faultyRiskyFrac = 0.1                    // share of tasks from a risky source …
	faultyRiskyP    = 0.8                    // … which are bad with this probability;
	faultySafeP     = 0.02                   // the others with this one
)

// evScanDone marks the end of a worker's scan of a task.
const evScanDone = evHedge + 1

// faultyRisk is the risk the host declares for a task from a risky source
// or not; the task is bad with exactly that probability.
func faultyRisk(risky bool) dispatch.Risk {
	p := faultySafeP
	if risky {
		p = faultyRiskyP
	}
	return dispatch.Risk{Probability: p, ScanCost: faultyScanCost, Work: faultyMeanWork}
}

// FaultyConfig is one point of the faulty-work scenario.
type FaultyConfig struct {
	Workers int
	// Load is the offered load of the tasks' own work: arrival rate × mean
	// run time ÷ workers. Scans and recoveries come on top.
	Load     float64
	Scan     dispatch.ScanPolicy
	Choice   dispatch.Choice
	Arrivals int
	Seed     uint64
	// Samples is how many queue-length samples to keep for the plot.
	Samples int
}

// QueuePoint is one sample of the number of tasks in the system.
type QueuePoint struct {
	Arrivals int
	Tasks    int
}

// FaultyResult is one point's outcome.
type FaultyResult struct {
	Policy   string  `json:"policy"`
	Load     float64 `json:"load"`
	Arrivals int     `json:"arrivals"`
	// PredictedLoad is the stability condition's left side divided by the
	// workers: arrival rate × the policy's expected worker time per task ÷
	// workers. The queues stay bounded iff it is below 1.
	PredictedLoad float64 `json:"predicted_load"`
	// QueueSlope is the least-squares slope of the number of tasks in the
	// system (queued or in service, sampled at each arrival) against the
	// arrival count, in tasks per 10⁶ arrivals.
	QueueSlope float64 `json:"queue_slope"`
	MeanQueue  float64 `json:"mean_queue"`
	FinalQueue int     `json:"final_queue"`
	// Bad counts bad tasks submitted; BadCaught those a scan rejected;
	// BadRun those that ran unscanned (each cost a worker the recovery).
	Bad       int `json:"bad"`
	Scans     int `json:"scans"`
	BadCaught int `json:"bad_caught"`
	BadRun    int `json:"bad_run"`
	// ScansPerBadCaught is Scans ÷ BadCaught; null when nothing was caught.
	ScansPerBadCaught *float64 `json:"scans_per_bad_caught"`
	// Series holds Samples queue-length samples for the plot.
	Series []QueuePoint `json:"-"`
}

type faultyTask struct {
	workNs int64
	bad    bool
}

// SimulateFaulty runs one point on a virtual clock: Poisson arrivals, the
// real Dispatcher (no duplication, so the scan policy alone decides
// stability) placing every task, deciding which to scan and rejecting what
// its scans find bad. It stops at the last arrival.
func SimulateFaulty(cfg FaultyConfig) (FaultyResult, error) {
	d, err := dispatch.New[int32](dispatch.Config{Workers: cfg.Workers, Policy: dispatch.PolicyNone, Choice: cfg.Choice,
		Seed: cfg.Seed, Scan: cfg.Scan, BadRecovery: faultyRecovery})
	if err != nil {
		return FaultyResult{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xfa017))
	rateNs := cfg.Load * float64(cfg.Workers) / float64(faultyMeanWork) // arrivals per ns
	base := time.Unix(0, 0)
	at := func(ns int64) time.Time { return base.Add(time.Duration(ns)) }
	tasks := make([]faultyTask, 0, cfg.Arrivals)
	ws := make([]simWorker, cfg.Workers)
	res := FaultyResult{Policy: cfg.Scan.String(), Load: cfg.Load, Arrivals: cfg.Arrivals}
	every := max(1, cfg.Arrivals/max(1, cfg.Samples))
	var (
		h     eventHeap
		seq   uint64
		nowNs int64
		// least-squares sums over (arrival index, tasks in system)
		sx, sy, sxx, sxy float64
	)
	push := func(e event) {
		seq++
		e.seq = seq
		heap.Push(&h, e)
	}
	// A worker's events: evScanDone ends a scan, evDone a run (and its
	// recovery).
	start := func(w int32) error {
		t, ok, err := d.Next(dispatch.WorkerID(w))
		if err != nil {
			return err
		}
		ws[w].busy = ok
		if !ok {
			return nil
		}
		ws[w].epoch++
		if t.Scan {
			res.Scans++
			push(event{atNs: nowNs + int64(faultyScanCost), kind: evScanDone, worker: w, id: t.ID, task: t.Payload})
			return nil
		}
		push(runEvent(nowNs, w, t.ID, t.Payload, tasks))
		return nil
	}
	for i := range cfg.Arrivals {
		nowNs += int64(rng.ExpFloat64() / rateNs)
		for h.Len() > 0 && h[0].atNs <= nowNs {
			e := heap.Pop(&h).(event)
			saved := nowNs
			nowNs = e.atNs
			if err := faultyStep(d, e, &res, tasks, start, push, nowNs); err != nil {
				return FaultyResult{}, err
			}
			nowNs = saved
		}
		risky := rng.Float64() < faultyRiskyFrac
		r := faultyRisk(risky)
		bad := rng.Float64() < r.Probability
		if bad {
			res.Bad++
		}
		tasks = append(tasks, faultyTask{workNs: int64(rng.ExpFloat64() * float64(faultyMeanWork)), bad: bad})
		pl, err := d.SubmitRisk(int32(i), at(nowNs), r)
		if err != nil {
			return FaultyResult{}, err
		}
		if !ws[pl.Primary].busy {
			if err := start(int32(pl.Primary)); err != nil {
				return FaultyResult{}, err
			}
		}
		q := d.Stats().InFlight
		x, y := float64(i), float64(q)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		if i%every == 0 || i == cfg.Arrivals-1 {
			res.Series = append(res.Series, QueuePoint{Arrivals: i + 1, Tasks: q})
		}
		res.FinalQueue = q
	}
	n := float64(cfg.Arrivals)
	if den := n*sxx - sx*sx; den > 0 {
		res.QueueSlope = (n*sxy - sx*sy) / den * 1e6
	}
	res.MeanQueue = sy / n
	if res.BadCaught > 0 {
		v := float64(res.Scans) / float64(res.BadCaught)
		res.ScansPerBadCaught = &v
	}
	res.PredictedLoad = predictedLoad(cfg.Scan, cfg.Load)
	return res, nil
}

// runEvent schedules the run of task i on worker w: its work, plus the
// recovery when it is bad (it ran unscanned, or it would have been caught).
func runEvent(nowNs int64, w int32, id dispatch.TaskID, i int32, tasks []faultyTask) event {
	dur := tasks[i].workNs
	if tasks[i].bad {
		dur += int64(faultyRecovery)
	}
	return event{atNs: nowNs + dur, kind: evDone, worker: w, id: id, task: i}
}

func faultyStep(d *dispatch.Dispatcher[int32], e event, res *FaultyResult, tasks []faultyTask,
	start func(int32) error, push func(event), nowNs int64) error {
	w := dispatch.WorkerID(e.worker)
	switch e.kind {
	case evScanDone:
		v := dispatch.ScanVerdict{Bad: tasks[e.task].bad, Reason: "scan: faulty or malicious"}
		sr, err := d.Scanned(e.id, w, v)
		if err != nil {
			return err
		}
		if sr.Rejected {
			res.BadCaught++
			return start(e.worker)
		}
		push(runEvent(nowNs, e.worker, e.id, e.task, tasks))
		return nil
	case evDone:
		if tasks[e.task].bad {
			res.BadRun++
		}
		if _, err := d.Complete(e.id, w, time.Unix(0, 0).Add(time.Duration(nowNs))); err != nil {
			return err
		}
		return start(e.worker)
	}
	return fmt.Errorf("unexpected event kind %d", e.kind)
}

// predictedLoad is the stability condition's left side over the workers:
// the offered load times the policy's expected worker time per task over
// the mean run time (expectations are linear, so the mean run time
// stands for the exponential one).
func predictedLoad(p dispatch.ScanPolicy, load float64) float64 {
	cost := func(risky bool) float64 {
		r := faultyRisk(risky)
		return float64(r.ExpectedCost(p.Decide(r, faultyRecovery), faultyRecovery))
	}
	mean := faultyRiskyFrac*cost(true) + (1-faultyRiskyFrac)*cost(false)
	return load * mean / float64(faultyMeanWork)
}
