package host

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/serving"
)

// vllmText is a vLLM server's exposition as Python's prometheus_client
// writes it (HELP and TYPE lines, _created series, a model_name label),
// with two models whose series are summed.
const vllmText = `# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama"} 4.0
vllm:num_requests_running{model_name="lora-a"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="llama"} 2.0
vllm:num_requests_waiting{model_name="lora-a"} 1.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="llama"} 0.25
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="llama"} 10000.0
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{model_name="llama"} 1.7e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="llama"} 2000.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="llama"} 10.0
vllm:time_to_first_token_seconds_bucket{le="0.25",model_name="llama"} 50.0
vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="llama"} 90.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="llama"} 100.0
vllm:time_to_first_token_seconds_count{model_name="llama"} 100.0
vllm:time_to_first_token_seconds_sum{model_name="llama"} 30.0
`

func TestParseVLLMRealExposition(t *testing.T) {
	s, err := parseVLLM(strings.NewReader(vllmText))
	if err != nil {
		t.Fatal(err)
	}
	if s.waiting != 3 || s.running != 5 || s.kvUsage != 0.25 || s.prompt != 10000 || s.generation != 2000 || !s.hasTokens || s.hasTPOT || s.hasPrefill {
		t.Errorf("sample %+v", s)
	}
	if s.ttft.count != 100 || s.ttft.sum != 30 || len(s.ttft.bounds) != 4 || !math.IsInf(s.ttft.bounds[3], 1) {
		t.Errorf("ttft %+v", s.ttft)
	}
	// histogram_quantile's interpolation, worked by hand: rank 90 falls in
	// (0.25, 0.5] with 50 below and 40 in it → 0.5; rank 50 in (0.1, 0.25]
	// with 10 below and 40 in it → 0.25; rank 95 in +Inf → 0.5.
	for _, c := range []struct{ q, want float64 }{{0.9, 0.5}, {0.5, 0.25}, {0.95, 0.5}, {0.05, 0.05}} {
		if got := s.ttft.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestParseVLLMMalformed(t *testing.T) {
	drop := func(metric string) string {
		var out []string
		for _, l := range strings.Split(vllmText, "\n") {
			if !strings.Contains(l, metric) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	for _, c := range []struct{ name, text, want string }{
		{"not prometheus", "vllm:num_requests_waiting{model_name=\"x\" 3\n", "parsing error"},
		{"html", "<html><body>502 Bad Gateway</body></html>\n", "parsing error"},
		{"no waiting", drop(MetricWaiting), MetricWaiting},
		{"no kv", drop(MetricKVUsage), MetricKVUsage},
		{"no ttft", drop(MetricTTFT), MetricTTFT},
		{"kv above 1", strings.Replace(vllmText, "} 0.25", "} 25", 1), MetricKVUsage},
		{"negative waiting", strings.Replace(vllmText, `{model_name="llama"} 2.0`, `{model_name="llama"} -9`, 1), MetricWaiting},
		{"ttft not a histogram", drop(MetricTTFT) + "# TYPE vllm:time_to_first_token_seconds gauge\nvllm:time_to_first_token_seconds 1\n", "want a histogram"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseVLLM(strings.NewReader(c.text))
			if !errors.Is(err, ErrMetrics) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want ErrMetrics naming %q", err, c.want)
			}
		})
	}
}

// hist is a histogram of n observations, all of value v.
func hist(bounds []float64, n, v float64) histogram {
	h := histogram{count: n, sum: n * v, bounds: bounds}
	for _, b := range bounds {
		c := 0.0
		if v <= b {
			c = n
		}
		h.cum = append(h.cum, c)
	}
	return h
}

// TestServiceMetricsDeltas: the Metrics of an interval are the counters'
// changes summed over pods; a pod whose counters went down (restarted)
// counts from zero, a pod seen for the first time counts only in the
// levels; the reports are the interval's means.
func TestServiceMetricsDeltas(t *testing.T) {
	b := []float64{0.05, 0.1, 0.25, 0.5, 1, math.Inf(1)}
	sample := func(n, waiting, ttft, prefill float64) vllmSample {
		return vllmSample{waiting: waiting, running: 8, kvUsage: 0.5, ttft: hist(b, n, ttft), tpot: hist(b, 99*n, 0.04),
			prefill: hist(b, n, prefill), prompt: 1000 * n, generation: 100 * n, hasTPOT: true, hasTokens: true, hasPrefill: true}
	}
	prev := map[string]vllmSample{"a": sample(100, 0, 0.2, 0.2), "b": sample(500, 0, 0.2, 0.2)}
	cur := map[string]vllmSample{
		"a": sample(130, 2, 0.2, 0.2), // 30 new requests
		"b": sample(20, 0, 0.2, 0.2),  // restarted: 20 requests since
		"c": sample(7, 1, 0.2, 0.2),   // new: levels only
	}
	now := time.Unix(1000, 0)
	m, reports := serviceMetrics(now, 10*time.Second, 3, 1, cur, prev)
	if m.Arrivals != 50 || m.PromptTokens != 50000 || m.OutputTokens != 5000 || m.FirstTokens != 50 || m.Finished != 99*50 {
		t.Errorf("counts %+v", m)
	}
	if m.Waiting != 3 || m.Concurrency != 3+24 || math.Abs(m.KVUsage-0.5) > 1e-12 || m.Ready != 3 || m.Starting != 1 {
		t.Errorf("levels %+v", m)
	}
	if m.TTFTSum != 10*time.Second || m.TTFTP90 != 235*time.Millisecond || m.TPOTP90 != 45*time.Millisecond {
		t.Errorf("latencies: ttft sum %v p90 %v, tpot p90 %v", m.TTFTSum, m.TTFTP90, m.TPOTP90)
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	want := []serving.Report{
		{Phase: serving.Prefill, Tokens: 1000, Duration: 200 * time.Millisecond},
		{Phase: serving.Decode, Batch: 8, ContextTokens: 1050, Duration: 40 * time.Millisecond},
	}
	if len(reports) != 4 || reports[0] != want[0] || reports[1] != want[1] || reports[2] != want[0] || reports[3] != want[1] {
		t.Errorf("reports %+v, want twice %+v", reports, want)
	}
	// Without a prefill histogram, a pod that queued is no prefill point.
	for k, s := range cur {
		s.hasPrefill = false
		cur[k] = s
	}
	for k, s := range prev {
		s.hasPrefill = false
		prev[k] = s
	}
	_, reports = serviceMetrics(now, 10*time.Second, 3, 1, cur, prev)
	prefills := 0
	for _, r := range reports {
		if r.Phase == serving.Prefill {
			prefills++
		}
	}
	if prefills != 1 {
		t.Errorf("%d prefill reports without the prefill histogram, want 1 (pod b, which queued nothing)", prefills)
	}
}
