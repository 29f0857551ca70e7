// Package sim replays a request trace through an inference service's
// replicas at token level and measures what users feel per 1-minute window.
//
// Each replica runs vLLM's (v0) iteration loop: when requests wait and fit
// (running below MaxRunning, prompt tokens of the batch below
// MaxBatchedTokens, KV cache for prompt and output free), the iteration is
// a prefill of the waiting requests in arrival order, which gives each its
// first token; otherwise it is a decode step that gives every running
// request one token. Iteration times come from an Engine (the ground truth,
// published measurements); every iteration is also a serving.Report fed to
// Config.Profile, the only way the autoscaler learns speeds. A router sends
// each arrival to the ready replica with the fewest requests. Every Tick the
// autoscaler sees the interval's serving.Metrics and the simulator starts
// replicas (ready after the service's Startup, GPUs held from the request)
// or stops them (starting ones first, then the least loaded ready ones,
// which drain: no new requests, released when empty).
package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodsched/goodsched/serving"
)

// ErrInvalidConfig reports a Config that cannot run.
var ErrInvalidConfig = errors.New("sim: invalid config")

// Config is one simulation. The zero values of Tick, Window, MaxRunning and
// MaxBatchedTokens are their documented defaults.
type Config struct {
	// Trace is replayed from its first arrival.
	Trace serving.Trace
	// Service gives the SLO, start-up lag and GPUs per replica.
	Service serving.Service
	// Engine is the ground truth of iteration times.
	Engine Engine
	// Autoscaler decides the replica count every Tick; nil keeps
	// InitialReplicas all along.
	Autoscaler serving.Autoscaler
	// Profile, if not nil, observes every iteration's Report.
	Profile *serving.Profile
	// InitialReplicas are ready at time 0; 0 means the service's minimum.
	InitialReplicas int
	// Tick is the autoscaler's period; 0 means 2 s (Knative's tick).
	Tick time.Duration
	// Hold keeps InitialReplicas for this long from time 0: the autoscaler
	// sees every tick but its decisions start to apply only after Hold, so
	// that its windows fill before it acts on a system that just started
	// from empty. 0 applies decisions from the first tick.
	Hold time.Duration
	// Window is the SLO window; 0 means 1 minute.
	Window time.Duration
	// MaxRunning is a replica's running-request limit; 0 means 256 (vLLM's
	// max_num_seqs).
	MaxRunning int
	// MaxBatchedTokens caps the prompt tokens of one prefill iteration (a
	// longer prompt goes alone); 0 means 8,192.
	MaxBatchedTokens int
	// GrantEvery, when positive, is the period at which the cluster hands
	// the service new GPUs: the scheduling round of the elastic training
	// that shares the cluster and gives devices back only at round starts
	// (multiples of GrantEvery from time 0). A scale-up decided between
	// two grants waits for the next one (a draining replica may be taken
	// back at once: it holds its GPUs); scale-downs apply at once. It must
	// be a multiple of Tick. 0 grants GPUs at once (the service alone).
	GrantEvery time.Duration
}

// Window is one SLO window's outcome; requests belong to the window of
// their arrival.
type Window struct {
	// Start is the window's offset from the trace start.
	Start time.Duration `json:"start"`
	// Requests is the arrivals in the window.
	Requests int `json:"requests"`
	// TTFTP90 and TPOTP90 are the window's 90th percentiles (nearest rank).
	TTFTP90 time.Duration `json:"ttft_p90"`
	TPOTP90 time.Duration `json:"tpot_p90"`
	// Met says both are within the SLO.
	Met bool `json:"met"`
	// Replicas is the mean count of replicas holding GPUs in the window.
	Replicas float64 `json:"replicas"`
	// Ready is the mean count of replicas serving (ready, not draining).
	Ready float64 `json:"ready"`
	// Concurrency is the mean count of requests in the system.
	Concurrency float64 `json:"concurrency"`
}

// Result is a simulation's outcome.
type Result struct {
	// Windows are the windows with at least one arrival, in time order.
	Windows []Window
	// SLOAttainment is the fraction of Windows that met the SLO.
	SLOAttainment float64
	// GPUHours is GPU time held (starting, serving or draining replicas)
	// from time 0 to the end of the last window.
	GPUHours float64
	// PeakReplicas is the most replicas holding GPUs at once.
	PeakReplicas int
	// Requests is the requests replayed.
	Requests int
	// Decisions is the autoscaler calls; DecisionErrors those that failed
	// (the last decision was kept).
	Decisions, DecisionErrors int
	// Held is the count of replicas holding GPUs over time: a step at each
	// change, in time order, the first at time 0.
	Held []HeldStep
}

// HeldStep says that from At on, Replicas replicas hold GPUs.
type HeldStep struct {
	At       time.Duration `json:"at"`
	Replicas int           `json:"replicas"`
}

// MaxHeld is the most replicas holding GPUs at any time in [from, to):
// what a cluster shared with other work must set aside for the service
// over that span. A span past the run's end has the last count.
func (r Result) MaxHeld(from, to time.Duration) int {
	i, _ := slices.BinarySearchFunc(r.Held, from, func(h HeldStep, t time.Duration) int { return cmp.Compare(h.At, t) })
	most := 0
	if i < len(r.Held) && r.Held[i].At == from {
		most = r.Held[i].Replicas
	} else if i > 0 {
		most = r.Held[i-1].Replicas
	}
	for ; i < len(r.Held) && r.Held[i].At < to; i++ {
		most = max(most, r.Held[i].Replicas)
	}
	return most
}

type request struct {
	arrival, first, finish time.Duration
	prompt, output, done   int
}

type replicaState int

const (
	starting replicaState = iota
	ready
	draining
	released
)

type replica struct {
	id         int
	state      replicaState
	heldFrom   time.Duration
	readyAt    time.Duration
	waiting    []*request
	running    []*request
	prefilling []*request
	busy       bool
	iterEnd    time.Duration
	kvUsed     int
	heapIndex  int
}

func (r *replica) load() int { return len(r.waiting) + len(r.running) + len(r.prefilling) }

// sim holds one run's state.
type sim struct {
	cfg       Config
	now       time.Duration
	replicas  []*replica
	events    eventHeap
	backlog   []*request // arrivals while no replica is ready
	inSystem  int
	area      float64 // ∫ inSystem dt over the current tick, request·seconds
	lastArea  time.Duration
	tick      serving.Metrics
	ttfts     []time.Duration
	tpots     []time.Duration
	held      int // replicas holding GPUs
	heldArea  float64
	heldLast  time.Duration
	end       time.Duration
	winHeld   []float64
	winConc   []float64
	winReady  []float64
	nReady    int
	peak      int
	decisions int
	errs      int
	heldSteps []HeldStep
}

// Run replays cfg.Trace. It returns ErrInvalidConfig, a trace error (a
// *serving.RowError), a service error, or ctx's error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Service.Validate(); err != nil {
		return Result{}, err
	}
	if err := cfg.Trace.Validate(); err != nil {
		return Result{}, err
	}
	if len(cfg.Trace.Requests) == 0 {
		return Result{}, fmt.Errorf("%w: trace has no requests", serving.ErrInvalidTrace)
	}
	if cfg.Engine == nil {
		return Result{}, fmt.Errorf("%w: no Engine", ErrInvalidConfig)
	}
	if cfg.Tick < 0 || cfg.Hold < 0 || cfg.Window < 0 || cfg.MaxRunning < 0 || cfg.MaxBatchedTokens < 0 || cfg.InitialReplicas < 0 {
		return Result{}, fmt.Errorf("%w: tick %v, window %v, max running %d, max batched tokens %d, initial replicas %d: none may be negative",
			ErrInvalidConfig, cfg.Tick, cfg.Window, cfg.MaxRunning, cfg.MaxBatchedTokens, cfg.InitialReplicas)
	}
	if cfg.Tick == 0 {
		cfg.Tick = 2 * time.Second
	}
	if cfg.GrantEvery < 0 || cfg.GrantEvery%cfg.Tick != 0 {
		return Result{}, fmt.Errorf("%w: grant period %v is not a non-negative multiple of the tick %v", ErrInvalidConfig, cfg.GrantEvery, cfg.Tick)
	}
	if cfg.Window == 0 {
		cfg.Window = time.Minute
	}
	if cfg.MaxRunning == 0 {
		cfg.MaxRunning = 256
	}
	if cfg.MaxBatchedTokens == 0 {
		cfg.MaxBatchedTokens = 8192
	}
	s := &sim{cfg: cfg}
	last := cfg.Trace.Requests[len(cfg.Trace.Requests)-1].Arrival
	s.end = (last/cfg.Window + 1) * cfg.Window
	s.winHeld = make([]float64, int(s.end/cfg.Window))
	s.winConc = make([]float64, int(s.end/cfg.Window))
	s.winReady = make([]float64, int(s.end/cfg.Window))
	for range cfg.Service.Clamp(max(cfg.InitialReplicas, 1)) {
		r := s.addReplica()
		r.state = ready
		s.nReady++
	}
	reqs := make([]request, len(cfg.Trace.Requests))
	for i, q := range cfg.Trace.Requests {
		reqs[i] = request{arrival: q.Arrival, prompt: q.PromptTokens, output: q.OutputTokens, first: -1, finish: -1}
	}
	next := 0
	nextTick := cfg.Tick
	for steps := 0; ; steps++ {
		if steps&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
		}
		tA, tT, tR := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
		if next < len(reqs) {
			tA = reqs[next].arrival
		}
		if nextTick <= s.end {
			tT = nextTick
		}
		if len(s.events) > 0 {
			tR = s.events[0].eventTime()
		}
		switch {
		case tR == math.MaxInt64 && tA == math.MaxInt64 && tT == math.MaxInt64:
			return s.result(reqs), nil
		case tR <= tA && tR <= tT:
			r := s.events.pop()
			s.advance(tR)
			s.replicaEvent(r)
		case tA <= tT:
			s.advance(tA)
			s.arrive(&reqs[next])
			next++
		default:
			s.advance(tT)
			s.onTick()
			nextTick += cfg.Tick
		}
	}
}

// advance moves the clock, integrating concurrency and held replicas.
func (s *sim) advance(t time.Duration) {
	dt := (t - s.now).Seconds()
	s.area += float64(s.inSystem) * dt
	for from, to := s.now, min(t, s.end); from < to; {
		w := int(from / s.cfg.Window)
		wEnd := min(time.Duration(w+1)*s.cfg.Window, to)
		s.winConc[w] += float64(s.inSystem) * (wEnd - from).Seconds()
		s.winReady[w] += float64(s.nReady) * (wEnd - from).Seconds()
		from = wEnd
	}
	s.accountHeld(t)
	s.now = t
}

func (s *sim) accountHeld(t time.Duration) {
	from := s.heldLast
	to := min(t, s.end)
	for from < to {
		w := int(from / s.cfg.Window)
		wEnd := min(time.Duration(w+1)*s.cfg.Window, to)
		s.winHeld[w] += float64(s.held) * (wEnd - from).Seconds()
		s.heldArea += float64(s.held) * (wEnd - from).Seconds()
		from = wEnd
	}
	s.heldLast = max(s.heldLast, to)
}

func (s *sim) setHeld(delta int) {
	s.accountHeld(s.now)
	s.held += delta
	s.peak = max(s.peak, s.held)
	if n := len(s.heldSteps); n > 0 && s.heldSteps[n-1].At == s.now {
		s.heldSteps[n-1].Replicas = s.held
		return
	}
	s.heldSteps = append(s.heldSteps, HeldStep{At: s.now, Replicas: s.held})
}

func (s *sim) addReplica() *replica {
	r := &replica{id: len(s.replicas), state: starting, heldFrom: s.now, readyAt: s.now + s.cfg.Service.Startup, heapIndex: -1}
	s.replicas = append(s.replicas, r)
	s.setHeld(1)
	return r
}

func (s *sim) arrive(q *request) {
	s.inSystem++
	s.tick.Arrivals++
	s.tick.PromptTokens += q.prompt
	s.tick.OutputTokens += q.output
	r := s.route()
	if r == nil {
		s.backlog = append(s.backlog, q)
		return
	}
	r.waiting = append(r.waiting, q)
	s.kick(r)
}

// route picks the ready replica with the fewest requests (lowest id on ties).
func (s *sim) route() *replica {
	var best *replica
	for _, r := range s.replicas {
		if r.state == ready && (best == nil || r.load() < best.load()) {
			best = r
		}
	}
	return best
}

// kick starts an iteration on an idle replica.
func (s *sim) kick(r *replica) {
	if r.busy || r.state == starting || r.state == released {
		return
	}
	s.startIteration(r)
}

func (s *sim) startIteration(r *replica) {
	e := s.cfg.Engine
	kvCap := e.KVCapacityTokens()
	// Prefill first (vLLM v0's scheduler).
	tokens, n := 0, 0
	for n < len(r.waiting) && len(r.running)+n < s.cfg.MaxRunning {
		q := r.waiting[n]
		need := q.prompt + q.output
		if n > 0 && tokens+q.prompt > s.cfg.MaxBatchedTokens {
			break
		}
		if r.kvUsed+need > kvCap && (len(r.running) > 0 || n > 0) {
			break
		}
		tokens += q.prompt
		r.kvUsed += need
		n++
	}
	if n > 0 {
		r.prefilling = append(r.prefilling[:0], r.waiting[:n]...)
		r.waiting = append(r.waiting[:0], r.waiting[n:]...)
		d := e.Prefill(tokens)
		s.report(serving.Report{Phase: serving.Prefill, Tokens: tokens, Duration: d, KVCapacityTokens: kvCap})
		s.schedule(r, d)
		return
	}
	if len(r.running) > 0 {
		ctxSum := 0
		for _, q := range r.running {
			ctxSum += q.prompt + q.done
		}
		b := len(r.running)
		meanCtx := ctxSum / b
		d := e.Decode(b, meanCtx)
		s.report(serving.Report{Phase: serving.Decode, Batch: b, ContextTokens: meanCtx, Duration: d})
		s.tick.DecodeSteps++
		s.tick.DecodeBatchSum += b
		s.tick.DecodeContextSum += meanCtx
		s.schedule(r, d)
		return
	}
	r.busy = false
	if r.state == draining {
		s.release(r)
	}
}

func (s *sim) report(rep serving.Report) {
	if s.cfg.Profile != nil {
		_ = s.cfg.Profile.Observe(rep) // the engine's reports are well formed
	}
}

func (s *sim) schedule(r *replica, d time.Duration) {
	r.busy = true
	r.iterEnd = s.now + max(d, time.Microsecond)
	s.events.push(r)
}

func (s *sim) replicaEvent(r *replica) {
	if r.state == starting {
		r.state = ready
		s.nReady++
		backlog := s.backlog
		s.backlog = nil
		for _, q := range backlog {
			t := s.route()
			t.waiting = append(t.waiting, q)
		}
		for _, t := range s.replicas {
			s.kick(t)
		}
		return
	}
	// An iteration ended.
	if len(r.prefilling) > 0 {
		for _, q := range r.prefilling {
			q.first = s.now
			q.done = 1
			s.firstToken(q)
			if q.done >= q.output {
				s.finish(r, q)
			} else {
				r.running = append(r.running, q)
			}
		}
		r.prefilling = r.prefilling[:0]
	} else {
		kept := r.running[:0]
		for _, q := range r.running {
			q.done++
			if q.done >= q.output {
				s.finish(r, q)
			} else {
				kept = append(kept, q)
			}
		}
		clear(r.running[len(kept):])
		r.running = kept
	}
	s.startIteration(r)
}

func (s *sim) firstToken(q *request) {
	s.tick.FirstTokens++
	ttft := q.first - q.arrival
	s.tick.TTFTSum += ttft
	s.ttfts = append(s.ttfts, ttft)
}

func (s *sim) finish(r *replica, q *request) {
	q.finish = s.now
	r.kvUsed -= q.prompt + q.output
	s.inSystem--
	if q.output >= 2 {
		tpot := (q.finish - q.first) / time.Duration(q.output-1)
		s.tick.Finished++
		s.tick.TPOTSum += tpot
		s.tpots = append(s.tpots, tpot)
	}
}

func (s *sim) release(r *replica) {
	r.state = released
	s.setHeld(-1)
}

func (s *sim) onTick() {
	m := s.tick
	s.tick = serving.Metrics{}
	m.Now = s.cfg.Trace.Start.Add(s.now)
	m.Interval = s.cfg.Tick
	m.Concurrency = s.area / s.cfg.Tick.Seconds()
	s.area = 0
	m.TTFTP90 = p90(s.ttfts)
	m.TPOTP90 = p90(s.tpots)
	s.ttfts, s.tpots = s.ttfts[:0], s.tpots[:0]
	var kv float64
	for _, r := range s.replicas {
		switch r.state {
		case ready:
			m.Ready++
			m.Waiting += len(r.waiting)
			kv += float64(r.kvUsed) / float64(max(1, s.cfg.Engine.KVCapacityTokens()))
		case starting:
			m.Starting++
		}
	}
	m.Waiting += len(s.backlog)
	if m.Ready > 0 {
		m.KVUsage = kv / float64(m.Ready)
	}
	if s.cfg.Autoscaler == nil {
		return
	}
	s.decisions++
	want, err := s.cfg.Autoscaler.Desired(m)
	if err != nil {
		s.errs++
		return
	}
	if s.now < s.cfg.Hold {
		return
	}
	want = s.cfg.Service.Clamp(want)
	if g := s.cfg.GrantEvery; g > 0 && s.now%g != 0 {
		// No new GPUs before the next grant: only draining replicas,
		// which still hold theirs, may come back.
		have := 0
		for _, r := range s.replicas {
			if r.state != released {
				have++
			}
		}
		want = min(want, have)
	}
	s.scaleTo(want)
}

// scaleTo brings ready plus starting replicas to n.
func (s *sim) scaleTo(n int) {
	active := 0
	for _, r := range s.replicas {
		if r.state == ready || r.state == starting {
			active++
		}
	}
	for active < n {
		// Undrain the busiest draining replica first, then start one.
		var pick *replica
		for _, r := range s.replicas {
			if r.state == draining && (pick == nil || r.load() > pick.load()) {
				pick = r
			}
		}
		if pick != nil {
			pick.state = ready
			s.nReady++
		} else {
			r := s.addReplica()
			s.events.push(r)
		}
		active++
	}
	for active > n {
		var pick *replica
		for _, r := range s.replicas {
			if r.state == starting && (pick == nil || r.readyAt > pick.readyAt) {
				pick = r
			}
		}
		if pick != nil {
			s.events.remove(pick)
			s.release(pick)
			active--
			continue
		}
		for _, r := range s.replicas {
			if r.state == ready && (pick == nil || r.load() < pick.load()) {
				pick = r
			}
		}
		pick.state = draining
		s.nReady--
		if !pick.busy && pick.load() == 0 {
			s.release(pick)
		}
		active--
	}
	// Draining replicas hand their queued, not yet started requests back.
	for _, r := range s.replicas {
		if r.state == draining && len(r.waiting) > 0 {
			moved := r.waiting
			r.waiting = nil
			for _, q := range moved {
				t := s.route()
				if t == nil {
					s.backlog = append(s.backlog, q)
					continue
				}
				t.waiting = append(t.waiting, q)
				s.kick(t)
			}
		}
	}
}

func p90(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[int(math.Ceil(0.9*float64(len(v))))-1]
}

func (s *sim) result(reqs []request) Result {
	s.accountHeld(s.end)
	w := s.cfg.Window
	nw := int(s.end / w)
	ttft := make([][]time.Duration, nw)
	tpot := make([][]time.Duration, nw)
	for i := range reqs {
		q := &reqs[i]
		k := int(q.arrival / w)
		ttft[k] = append(ttft[k], q.first-q.arrival)
		if q.output >= 2 {
			tpot[k] = append(tpot[k], (q.finish-q.first)/time.Duration(q.output-1))
		}
	}
	res := Result{Requests: len(reqs), Decisions: s.decisions, DecisionErrors: s.errs, PeakReplicas: s.peak, Held: s.heldSteps}
	met := 0
	for k := range nw {
		if len(ttft[k]) == 0 {
			continue
		}
		win := Window{Start: time.Duration(k) * w, Requests: len(ttft[k]), TTFTP90: p90(ttft[k]), TPOTP90: p90(tpot[k]),
			Replicas: s.winHeld[k] / w.Seconds(), Concurrency: s.winConc[k] / w.Seconds(), Ready: s.winReady[k] / w.Seconds()}
		win.Met = win.TTFTP90 <= s.cfg.Service.SLO.TTFTP90 && win.TPOTP90 <= s.cfg.Service.SLO.TPOTP90
		if win.Met {
			met++
		}
		res.Windows = append(res.Windows, win)
	}
	res.SLOAttainment = float64(met) / float64(len(res.Windows))
	res.GPUHours = s.heldArea * float64(s.cfg.Service.GPUs()) / 3600
	return res
}

// eventHeap orders replicas by their next event: the end of the current
// iteration, or readiness for a starting replica.
type eventHeap []*replica

func (r *replica) eventTime() time.Duration {
	if r.state == starting {
		return r.readyAt
	}
	return r.iterEnd
}

func less(a, b *replica) bool {
	return cmp.Or(cmp.Compare(a.eventTime(), b.eventTime()), cmp.Compare(a.id, b.id)) < 0
}

func (h *eventHeap) push(r *replica) {
	r.heapIndex = len(*h)
	*h = append(*h, r)
	h.up(r.heapIndex)
}

func (h *eventHeap) pop() *replica {
	r := (*h)[0]
	h.removeAt(0)
	return r
}

func (h *eventHeap) remove(r *replica) {
	if r.heapIndex >= 0 {
		h.removeAt(r.heapIndex)
	}
}

func (h *eventHeap) removeAt(i int) {
	old := *h
	n := len(old) - 1
	r := old[i]
	if i != n {
		old[i] = old[n]
		old[i].heapIndex = i
	}
	old[n] = nil
	*h = old[:n]
	r.heapIndex = -1
	if i < n {
		h.down(i)
		h.up(i)
	}
}

func (h eventHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		h[i].heapIndex, h[p].heapIndex = i, p
		i = p
	}
}

func (h eventHeap) down(i int) {
	for {
		l, small := 2*i+1, i
		if l < len(h) && less(h[l], h[small]) {
			small = l
		}
		if r := l + 1; r < len(h) && less(h[r], h[small]) {
			small = r
		}
		if small == i {
			return
		}
		h[i], h[small] = h[small], h[i]
		h[i].heapIndex, h[small].heapIndex = i, small
		i = small
	}
}
