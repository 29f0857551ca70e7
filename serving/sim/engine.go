package sim

import (
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/serving"
)

// Engine is the ground truth of one replica's speed: what an iteration
// really takes. Only the simulator reads it; autoscalers learn from the
// Reports it produces.
type Engine interface {
	// Prefill is the time of a prefill iteration over tokens prompt tokens.
	Prefill(tokens int) time.Duration
	// Decode is the time of one decode iteration of batch requests with a
	// mean context of context tokens.
	Decode(batch, context int) time.Duration
	// KVCapacityTokens is the replica's KV-cache size in tokens.
	KVCapacityTokens() int
}

// Point is one measurement of a Table: Size (prompt tokens of a prefill
// iteration, or batch of a decode iteration) and its time in milliseconds.
type Point struct {
	Size int
	Ms   float64
}

// Table is an Engine that interpolates measured points linearly, flat below
// the first, along the last segment's slope beyond the last.
type Table struct {
	// Model and Type name what was measured; GPUs is the devices of one
	// replica (tensor parallelism).
	Model string
	Type  accel.TypeKey
	GPUs  int
	// PrefillMs is prefill time by prompt tokens of the iteration.
	PrefillMs []Point
	// DecodeMs is decode step time by batch (context had no measurable
	// effect in the source: see Llama2_70B_H100).
	DecodeMs []Point
	// KVTokens is the KV-cache capacity in tokens.
	KVTokens int
	// Source cites the measurements.
	Source string
}

func interpolate(pts []Point, x float64) float64 {
	if x <= float64(pts[0].Size) {
		return pts[0].Ms
	}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		if x <= float64(b.Size) {
			return a.Ms + (b.Ms-a.Ms)*(x-float64(a.Size))/float64(b.Size-a.Size)
		}
	}
	a, b := pts[len(pts)-2], pts[len(pts)-1]
	return b.Ms + (b.Ms-a.Ms)*(x-float64(b.Size))/float64(b.Size-a.Size)
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// Prefill implements Engine.
func (t *Table) Prefill(tokens int) time.Duration {
	return ms(interpolate(t.PrefillMs, float64(tokens)))
}

// Decode implements Engine.
func (t *Table) Decode(batch, _ int) time.Duration {
	return ms(interpolate(t.DecodeMs, float64(batch)))
}

// KVCapacityTokens implements Engine.
func (t *Table) KVCapacityTokens() int { return t.KVTokens }

// splitwiseSource cites the measurements of both tables.
const splitwiseSource = "Splitwise (Patel et al., ISCA'24) measured Llama-2-70B with vLLM; " +
	"github.com/Mutinifni/splitwise-sim@8f99e7dc data/perf_model.csv (MIT), tensor_parallel 4, " +
	"mean of the five repetitions: prompt_time by prompt_size×batch_size (batch-1 rows and " +
	"512-token batches merged by total tokens) and token_time by batch_size at prompt 512"

// kvTokensLlama2_70B_TP4 is the KV-cache capacity of Llama-2-70B on four
// 80 GB GPUs: 80 layers × 8 KV heads (grouped-query attention) × 128 dims ×
// 2 (K and V) × 2 bytes = 327,680 bytes a token; 0.9 × 320 GB usable (vLLM's
// gpu_memory_utilization default) − 138 GB of fp16 weights − about 20 GB of
// activations ≈ 130 GB ≈ 396,000 tokens.
const kvTokensLlama2_70B_TP4 = 396_000

// Llama2_70B_H100 is Llama-2-70B on four H100-80GB (TP4), from Splitwise's
// measurements. Decode time did not change with context from 128 to 8,192
// tokens at batch 1 (29.4–29.8 ms), so the table has no context term.
func Llama2_70B_H100() *Table {
	return &Table{
		Model: "llama2-70b", Type: "h100-80gb", GPUs: 4, KVTokens: kvTokensLlama2_70B_TP4, Source: splitwiseSource,
		PrefillMs: []Point{{128, 48.9}, {256, 54.3}, {512, 61.0}, {1024, 105.0}, {2048, 199.0},
			{4096, 454.2}, {8192, 912.7}, {16384, 1727.9}, {32768, 3532.3}},
		DecodeMs: []Point{{1, 29.4}, {2, 30.0}, {4, 30.0}, {8, 31.4}, {16, 32.8}, {32, 36.9}, {64, 52.0}},
	}
}

// Llama2_70B_A100 is Llama-2-70B on four A100-80GB (TP4), from the same
// measurements.
func Llama2_70B_A100() *Table {
	return &Table{
		Model: "llama2-70b", Type: "a100-80gb", GPUs: 4, KVTokens: kvTokensLlama2_70B_TP4, Source: splitwiseSource,
		PrefillMs: []Point{{128, 66.6}, {256, 78.5}, {512, 127.5}, {1024, 242.0}, {2048, 467.5},
			{4096, 1091.6}, {8192, 2609.5}, {16384, 5165.8}, {32768, 10808.8}},
		DecodeMs: []Point{{1, 44.5}, {2, 45.0}, {4, 45.2}, {8, 45.9}, {16, 48.7}, {32, 52.4}, {64, 72.8}},
	}
}

// Sweep returns the Reports of a pre-deployment profiling run of e (as
// Dynamo's profiler and Splitwise's measurements do): prefills of 128 to
// 16,384 tokens and decode steps of batch 1 to 128 at contexts 512 and 2,048.
// They are ordinary Reports: a Profile learns from them as from live ones.
func Sweep(e Engine) []serving.Report {
	var out []serving.Report
	for tokens := 128; tokens <= 16384; tokens *= 2 {
		out = append(out, serving.Report{Phase: serving.Prefill, Tokens: tokens, Duration: e.Prefill(tokens), KVCapacityTokens: e.KVCapacityTokens()})
	}
	for batch := 1; batch <= 128; batch *= 2 {
		for _, ctx := range []int{512, 2048} {
			out = append(out, serving.Report{Phase: serving.Decode, Batch: batch, ContextTokens: ctx, Duration: e.Decode(batch, ctx)})
		}
	}
	return out
}
