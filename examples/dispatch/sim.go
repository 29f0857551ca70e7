package main

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/goodsched/goodsched/scheduler/dispatch"
)

// Service is a distribution of per-copy service times. Each copy of a task
// draws its own time: a straggler is a slow server episode, not a slow task,
// which is what makes a duplicate on another worker useful.
type Service struct {
	// Name labels the distribution in output.
	Name string
	// MeanMs is the mean service time in milliseconds (defines the load).
	MeanMs float64
	draw   func(r *rand.Rand) float64
}

// Stragglers: 1 ms, except 1 copy in 20 that takes 10 ms.
func stragglers() Service {
	return Service{Name: "stragglers", MeanMs: 0.95*1 + 0.05*10, draw: func(r *rand.Rand) float64 {
		if r.IntN(20) == 0 {
			return 10
		}
		return 1
	}}
}

// Pareto with shape 2.1 and mean 1 ms (scale 1.1/2.1 ms).
func pareto() Service {
	const alpha = 2.1
	xm := (alpha - 1) / alpha
	return Service{Name: "pareto", MeanMs: 1, draw: func(r *rand.Rand) float64 {
		u := 1 - r.Float64() // (0, 1]
		return xm / math.Pow(u, 1/alpha)
	}}
}

// SimConfig is one simulated point.
type SimConfig struct {
	Workers int
	// Load is the offered primary load: arrival rate × mean service time /
	// workers. Duplicates come on top of it.
	Load    float64
	Policy  dispatch.Policy
	Choice  dispatch.Choice
	Service Service
	// Tasks is how many tasks are measured; as many again are run before
	// (warm-up, 1/10) and after (so the measured ones see a loaded system).
	Tasks int
	Seed  uint64
	// PurgeOnStart is passed to dispatch.Config (tied requests).
	PurgeOnStart bool
}

// SimResult is one point's outcome.
type SimResult struct {
	Policy  string  `json:"policy"`
	Service string  `json:"service"`
	Load    float64 `json:"load"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	P999Ms  float64 `json:"p999_ms"`
	// Utilization is the fraction of worker time spent serving any copy
	// (primaries, duplicates and cancelled partial work).
	Utilization float64 `json:"utilization"`
	// DupPerTask is the number of duplicate copies placed per task.
	DupPerTask float64 `json:"dup_per_task"`
}

type evKind uint8

const (
	evArrive evKind = iota
	evDone
	evHedge
)

type event struct {
	atNs   int64
	seq    uint64 // tie-break for determinism
	id     dispatch.TaskID
	task   int32 // task index (payload)
	worker int32
	epoch  uint32
	kind   evKind
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].atNs != h[j].atNs {
		return h[i].atNs < h[j].atNs
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type simWorker struct {
	busy    bool
	epoch   uint32
	startNs int64
}

// Simulate runs one point: a virtual clock, Poisson arrivals, per-copy
// service times, and the real Dispatcher deciding every placement, every
// Next and every purge. Cancelled copies stop at once.
func Simulate(cfg SimConfig) (SimResult, error) {
	d, err := dispatch.New[int32](dispatch.Config{Workers: cfg.Workers, Policy: cfg.Policy, Choice: cfg.Choice, Seed: cfg.Seed, PurgeOnStart: cfg.PurgeOnStart})
	if err != nil {
		return SimResult{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	rateMs := cfg.Load * float64(cfg.Workers) / cfg.Service.MeanMs // arrivals per ms
	warm := cfg.Tasks / 10
	total := warm + cfg.Tasks + warm
	base := time.Unix(0, 0)
	at := func(ns int64) time.Time { return base.Add(time.Duration(ns)) }

	ws := make([]simWorker, cfg.Workers)
	lat := make([]float64, 0, cfg.Tasks)
	var (
		h       eventHeap
		seq     uint64
		busyNs  int64
		nowNs   int64
		arrived int
		hedgeAt int64 = math.MaxInt64
	)
	push := func(e event) {
		seq++
		e.seq = seq
		heap.Push(&h, e)
	}
	start := func(w int32) error {
		t, ok, err := d.Next(dispatch.WorkerID(w))
		if err != nil {
			return err
		}
		sw := &ws[w]
		sw.busy = ok
		if !ok {
			return nil
		}
		sw.epoch++
		sw.startNs = nowNs
		s := int64(cfg.Service.draw(rng) * 1e6)
		push(event{atNs: nowNs + s, kind: evDone, worker: w, epoch: sw.epoch, id: t.ID, task: t.Payload})
		return nil
	}
	stop := func(w int32) {
		busyNs += nowNs - ws[w].startNs
		ws[w].busy = false
	}
	wake := func(w dispatch.WorkerID) error {
		if w != dispatch.NoWorker && !ws[w].busy {
			return start(int32(w))
		}
		return nil
	}
	step := func(e event) error {
		switch e.kind {
		case evArrive:
			i := int32(arrived)
			arrived++
			pl, err := d.Submit(i, at(nowNs))
			if err != nil {
				return err
			}
			if err := wake(pl.Primary); err != nil {
				return err
			}
			if err := wake(pl.Duplicate); err != nil {
				return err
			}
			if arrived < total {
				gapNs := int64(rng.ExpFloat64() / rateMs * 1e6)
				push(event{atNs: nowNs + gapNs, kind: evArrive})
			}
		case evDone:
			if !ws[e.worker].busy || ws[e.worker].epoch != e.epoch {
				return nil // this copy was cancelled
			}
			stop(e.worker)
			out, err := d.Complete(e.id, dispatch.WorkerID(e.worker), at(nowNs))
			if err != nil {
				return err
			}
			if out.Won && int(e.task) >= warm && int(e.task) < warm+cfg.Tasks {
				lat = append(lat, float64(out.Latency)/1e6)
			}
			if out.Cancel != dispatch.NoWorker {
				x := int32(out.Cancel)
				stop(x)
				if err := start(x); err != nil {
					return err
				}
			}
			return start(e.worker)
		case evHedge:
			if e.atNs == hedgeAt {
				hedgeAt = math.MaxInt64
			}
			for {
				pl, ok := d.Hedge(at(nowNs))
				if !ok {
					break
				}
				if err := wake(pl.Duplicate); err != nil {
					return err
				}
			}
		}
		return nil
	}
	push(event{atNs: 0, kind: evArrive})
	for h.Len() > 0 {
		e := heap.Pop(&h).(event)
		nowNs = e.atNs
		if err := step(e); err != nil {
			return SimResult{}, err
		}
		if cfg.Policy == dispatch.PolicyHedged {
			if t, ok := d.NextHedge(); ok {
				ns := max(int64(t.Sub(base)), nowNs)
				if ns < hedgeAt {
					hedgeAt = ns
					push(event{atNs: ns, kind: evHedge})
				}
			}
		}
	}
	st := d.Stats()
	if st.InFlight != 0 || int(st.Completed) != total {
		return SimResult{}, fmt.Errorf("simulation ended with %d tasks in flight, %d of %d completed", st.InFlight, st.Completed, total)
	}
	slices.Sort(lat)
	return SimResult{
		Policy:      cfg.Policy.String(),
		Service:     cfg.Service.Name,
		Load:        cfg.Load,
		P50Ms:       quantile(lat, 0.5),
		P99Ms:       quantile(lat, 0.99),
		P999Ms:      quantile(lat, 0.999),
		Utilization: float64(busyNs) / (float64(cfg.Workers) * float64(nowNs)),
		DupPerTask:  float64(st.Duplicates) / float64(st.Submitted),
	}, nil
}

// quantile returns the nearest-rank q-quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
