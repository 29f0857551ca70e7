package host

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodsched/goodsched/serving"
)

// The vLLM metrics the host reads from a service pod's Prometheus endpoint
// (vLLM's names; a series of every model_name the server reports is
// summed). The first three are required: an endpoint without them is
// malformed. The others make goodsched's Predictive autoscaler's profile:
// without the token counters and the time-per-output-token histogram it
// keeps the current count.
const (
	// MetricWaiting is the requests queued for prefill (gauge).
	MetricWaiting = "vllm:num_requests_waiting"
	// MetricKVUsage is the fraction of the KV cache in use, 0 to 1 (gauge).
	MetricKVUsage = "vllm:gpu_cache_usage_perc"
	// MetricTTFT is the time to first token of each request (histogram).
	MetricTTFT = "vllm:time_to_first_token_seconds"
	// MetricRunning is the requests being decoded (gauge; optional).
	MetricRunning = "vllm:num_requests_running"
	// MetricTPOT is the time between two output tokens of a request
	// (histogram; optional).
	MetricTPOT = "vllm:time_per_output_token_seconds"
	// MetricPromptTokens and MetricGenerationTokens count the prompt
	// tokens prefilled and the tokens generated (counters; optional).
	MetricPromptTokens = "vllm:prompt_tokens_total"
	// MetricGenerationTokens: see MetricPromptTokens.
	MetricGenerationTokens = "vllm:generation_tokens_total"
	// MetricPrefillTime is each request's prefill time, without its time
	// in the queue (histogram; optional, vLLM V1). Without it a pod's
	// prefill is read from its time to first token while it queues
	// nothing.
	MetricPrefillTime = "vllm:request_prefill_time_seconds"
)

// ErrMetrics reports a service pod's metrics endpoint that is down,
// answers with an error, or serves text that is not Prometheus's format
// or lacks a required vLLM metric. The service keeps its last decision.
var ErrMetrics = errors.New("host: bad metrics endpoint")

// histogram is a Prometheus histogram's cumulative state.
type histogram struct {
	count, sum float64
	bounds     []float64 // upper bounds, ascending (+Inf last when present)
	cum        []float64 // cumulative counts per bound
}

// vllmSample is one scrape of one pod's endpoint.
type vllmSample struct {
	waiting, running   float64
	kvUsage            float64
	ttft, tpot         histogram
	prefill            histogram
	prompt, generation float64
	hasTPOT, hasTokens bool
	hasPrefill         bool
}

// parseVLLM reads one endpoint's text exposition.
func parseVLLM(r io.Reader) (vllmSample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return vllmSample{}, fmt.Errorf("%w: %w", ErrMetrics, err)
	}
	var s vllmSample
	var errs []error
	scalar := func(name string, required bool) (float64, bool) {
		f := fams[name]
		if f == nil || len(f.Metric) == 0 {
			if required {
				errs = append(errs, fmt.Errorf("%w: no %s", ErrMetrics, name))
			}
			return 0, false
		}
		v := 0.0
		for _, m := range f.Metric {
			switch {
			case m.Gauge != nil:
				v += m.Gauge.GetValue()
			case m.Counter != nil:
				v += m.Counter.GetValue()
			case m.Untyped != nil:
				v += m.Untyped.GetValue()
			default:
				errs = append(errs, fmt.Errorf("%w: %s is a %s, want a gauge or counter", ErrMetrics, name, f.GetType()))
				return 0, false
			}
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%w: %s is %v", ErrMetrics, name, v))
			return 0, false
		}
		return v, true
	}
	hist := func(name string, required bool) (histogram, bool) {
		f := fams[name]
		if f == nil || len(f.Metric) == 0 {
			if required {
				errs = append(errs, fmt.Errorf("%w: no %s", ErrMetrics, name))
			}
			return histogram{}, false
		}
		var h histogram
		byBound := map[float64]float64{}
		for _, m := range f.Metric {
			if m.Histogram == nil {
				errs = append(errs, fmt.Errorf("%w: %s is a %s, want a histogram", ErrMetrics, name, f.GetType()))
				return histogram{}, false
			}
			h.count += float64(m.Histogram.GetSampleCount())
			h.sum += m.Histogram.GetSampleSum()
			for _, b := range m.Histogram.GetBucket() {
				byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		h.bounds = make([]float64, 0, len(byBound))
		for b := range byBound {
			h.bounds = append(h.bounds, b)
		}
		slices.Sort(h.bounds)
		for _, b := range h.bounds {
			h.cum = append(h.cum, byBound[b])
		}
		if h.sum < 0 || math.IsNaN(h.sum) || math.IsInf(h.sum, 0) {
			errs = append(errs, fmt.Errorf("%w: %s_sum is %v", ErrMetrics, name, h.sum))
			return histogram{}, false
		}
		return h, true
	}
	s.waiting, _ = scalar(MetricWaiting, true)
	s.kvUsage, _ = scalar(MetricKVUsage, true)
	s.ttft, _ = hist(MetricTTFT, true)
	s.running, _ = scalar(MetricRunning, false)
	s.tpot, s.hasTPOT = hist(MetricTPOT, false)
	s.prefill, s.hasPrefill = hist(MetricPrefillTime, false)
	var okP, okG bool
	s.prompt, okP = scalar(MetricPromptTokens, false)
	s.generation, okG = scalar(MetricGenerationTokens, false)
	s.hasTokens = okP && okG
	if s.kvUsage > 1 {
		errs = append(errs, fmt.Errorf("%w: %s is %v, want a fraction from 0 to 1", ErrMetrics, MetricKVUsage, s.kvUsage))
	}
	return s, errors.Join(errs...)
}

// since is the histogram's change from an earlier state; a count that went
// down (the server restarted) makes the whole histogram the change.
func (h histogram) since(old histogram) histogram {
	if h.count < old.count || !slices.Equal(h.bounds, old.bounds) {
		return h
	}
	d := histogram{count: h.count - old.count, sum: h.sum - old.sum, bounds: h.bounds, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		d.cum[i] = max(0, h.cum[i]-old.cum[i])
	}
	d.sum = max(0, d.sum)
	return d
}

// add merges another histogram of the same bounds into h (bounds that
// differ are merged by bound).
func (h *histogram) add(o histogram) {
	if h.bounds == nil {
		*h = histogram{count: o.count, sum: o.sum, bounds: slices.Clone(o.bounds), cum: slices.Clone(o.cum)}
		return
	}
	h.count += o.count
	h.sum += o.sum
	byBound := map[float64]float64{}
	for i, b := range h.bounds {
		byBound[b] += h.cum[i]
	}
	for i, b := range o.bounds {
		byBound[b] += o.cum[i]
	}
	h.bounds = h.bounds[:0]
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	h.cum = h.cum[:0]
	for _, b := range h.bounds {
		h.cum = append(h.cum, byBound[b])
	}
}

// quantile is the q-quantile of the histogram's observations, linear
// within the bucket it falls in (as PromQL's histogram_quantile); 0 for
// an empty histogram.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return 0
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.cum[i] >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			in := h.cum[i] - below
			if in <= 0 {
				return b
			}
			return lower + (b-lower)*(rank-below)/in
		}
		lower, below = b, h.cum[i]
	}
	return lower
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// serviceMetrics turns the pods' scrapes (now and at the previous
// decision) into the autoscaler's Metrics over interval, and the profile
// reports the interval's means make: a prefill report per pod from its
// prefill-time histogram, or without one when it queued nothing at either
// scrape (its time to first token is then its prefill), and a decode
// report per pod with output tokens (the mean time between
// tokens at its running batch).
func serviceMetrics(now time.Time, interval time.Duration, ready, starting int, cur, prev map[string]vllmSample) (serving.Metrics, []serving.Report) {
	m := serving.Metrics{Now: now, Interval: interval, Ready: ready, Starting: starting}
	var ttft, tpot histogram
	var reports []serving.Report
	kv, pods := 0.0, 0
	for _, name := range slices.Sorted(maps.Keys(cur)) {
		s := cur[name]
		old, seen := prev[name]
		m.Waiting += int(math.Round(s.waiting))
		m.Concurrency += s.waiting + s.running
		kv += s.kvUsage
		pods++
		if !seen {
			continue // its first scrape: the next one gives its rates
		}
		dt := s.ttft.since(old.ttft)
		ttft.add(dt)
		var dPrompt, dGen float64
		if s.hasTokens && old.hasTokens {
			dPrompt, dGen = s.prompt-old.prompt, s.generation-old.generation
			if dPrompt < 0 || dGen < 0 {
				dPrompt, dGen = s.prompt, s.generation
			}
			m.PromptTokens += int(math.Round(dPrompt))
			m.OutputTokens += int(math.Round(dGen))
		}
		m.Arrivals += int(math.Round(dt.count))
		var dp histogram
		if s.hasTPOT && old.hasTPOT {
			dp = s.tpot.since(old.tpot)
			tpot.add(dp)
		}
		if dt.count >= 1 && dPrompt > 0 {
			isl := dPrompt / dt.count
			if s.hasPrefill && old.hasPrefill {
				if pf := s.prefill.since(old.prefill); pf.count >= 1 {
					reports = append(reports, serving.Report{Phase: serving.Prefill, Tokens: max(1, int(math.Round(isl))), Duration: seconds(pf.sum / pf.count)})
				}
			} else if s.waiting == 0 && old.waiting == 0 {
				reports = append(reports, serving.Report{Phase: serving.Prefill, Tokens: max(1, int(math.Round(isl))), Duration: seconds(dt.sum / dt.count)})
			}
			if dp.count >= 1 {
				osl := dGen / dt.count
				reports = append(reports, serving.Report{Phase: serving.Decode, Batch: max(1, int(math.Round(s.running))),
					ContextTokens: int(math.Round(isl + osl/2)), Duration: seconds(dp.sum / dp.count)})
			}
		}
	}
	if pods > 0 {
		m.KVUsage = kv / float64(pods)
	}
	m.Concurrency = math.Max(m.Concurrency, 0)
	m.FirstTokens = int(math.Round(ttft.count))
	m.TTFTSum, m.TTFTP90 = seconds(ttft.sum), seconds(ttft.quantile(0.9))
	m.Finished = int(math.Round(tpot.count))
	m.TPOTSum, m.TPOTP90 = seconds(tpot.sum), seconds(tpot.quantile(0.9))
	return m, reports
}
