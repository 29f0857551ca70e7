package serving

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/goodsched/goodsched/accel"
)

// Phase is the kind of engine iteration a Report measures.
type Phase int

const (
	// Prefill is an iteration that computes the prompts of a batch of
	// requests and emits their first tokens.
	Prefill Phase = iota + 1
	// Decode is an iteration that emits one token for every running request.
	Decode
)

// String names the phase as reports and errors spell it.
func (p Phase) String() string {
	switch p {
	case Prefill:
		return "prefill"
	case Decode:
		return "decode"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Report is what a replica says about one engine iteration (or the mean of
// several alike), as vLLM's iteration statistics do.
type Report struct {
	// Phase says which kind of iteration was measured.
	Phase Phase
	// Tokens is, for Prefill, the prompt tokens computed in the iteration.
	Tokens int
	// Batch is, for Decode, the running requests that each got a token.
	Batch int
	// ContextTokens is, for Decode, the mean context (prompt plus generated
	// tokens) per running request.
	ContextTokens int
	// Duration is the iteration's wall time.
	Duration time.Duration
	// KVCapacityTokens is the replica's KV-cache size in tokens; 0 leaves
	// the Profile's value as it was.
	KVCapacityTokens int
}

// Profile is the measured performance of one (model, accelerator type)
// replica: prefill time by prompt tokens, decode step time by batch and
// context, and KV-cache capacity. It is fitted online from Reports: points
// are kept per power-of-two bucket (of prompt tokens, or of batch size) as
// running means, and read by linear interpolation between buckets (the way
// Dynamo's planner interpolates its pre-deployment profile); within a
// decode bucket a least-squares line gives the effect of context length.
//
// A Profile is not safe for concurrent use; a host that observes from
// several goroutines guards it with a mutex.
type Profile struct {
	prefill [40]prefillPoint
	decode  [40]decodePoint
	kv      int
	// npre and ndec count the non-empty buckets.
	npre, ndec int
}

type prefillPoint struct{ n, sumTokens, sumSeconds float64 }

type decodePoint struct {
	n, sumBatch, sumCtx, sumSeconds, sumCtxSeconds, sumCtxCtx float64
}

// NewProfile returns an empty Profile.
func NewProfile() *Profile { return &Profile{} }

// Observe adds one Report. A Report with a phase other than Prefill or
// Decode, a non-positive size or a negative duration is an ErrInvalidReport
// error and changes nothing.
func (p *Profile) Observe(r Report) error {
	if r.Duration < 0 || r.KVCapacityTokens < 0 {
		return fmt.Errorf("%w: duration %v, kv capacity %d", ErrInvalidReport, r.Duration, r.KVCapacityTokens)
	}
	y := r.Duration.Seconds()
	switch r.Phase {
	case Prefill:
		if r.Tokens < 1 {
			return fmt.Errorf("%w: prefill of %d tokens", ErrInvalidReport, r.Tokens)
		}
		b := &p.prefill[bucket(r.Tokens)]
		if b.n == 0 {
			p.npre++
		}
		b.n++
		b.sumTokens += float64(r.Tokens)
		b.sumSeconds += y
	case Decode:
		if r.Batch < 1 || r.ContextTokens < 0 {
			return fmt.Errorf("%w: decode of batch %d, context %d", ErrInvalidReport, r.Batch, r.ContextTokens)
		}
		b := &p.decode[bucket(r.Batch)]
		if b.n == 0 {
			p.ndec++
		}
		c := float64(r.ContextTokens)
		b.n++
		b.sumBatch += float64(r.Batch)
		b.sumCtx += c
		b.sumSeconds += y
		b.sumCtxSeconds += c * y
		b.sumCtxCtx += c * c
	default:
		return fmt.Errorf("%w: phase %v", ErrInvalidReport, r.Phase)
	}
	if r.KVCapacityTokens > 0 {
		p.kv = r.KVCapacityTokens
	}
	return nil
}

// bucket is ⌊log2 v⌋ for v ≥ 1.
func bucket(v int) int { return bits.Len(uint(v)) - 1 }

// Ready reports whether both phases have at least one point.
func (p *Profile) Ready() bool { return p.npre > 0 && p.ndec > 0 }

// KVCapacityTokens is the last reported KV-cache size, 0 if none.
func (p *Profile) KVCapacityTokens() int { return p.kv }

// Prefill is the predicted time of a prefill iteration of tokens prompt
// tokens: linear between measured buckets, flat below the smallest (a
// prefill has a floor cost), along the last segment's slope above the
// largest (through the origin with one point). ErrNoProfile if no prefill
// was reported.
func (p *Profile) Prefill(tokens int) (time.Duration, error) {
	if p.npre == 0 {
		return 0, fmt.Errorf("%w: no prefill point", ErrNoProfile)
	}
	x := float64(max(tokens, 1))
	var px, py, qx, qy float64
	havePrev := false
	for i := range p.prefill {
		b := &p.prefill[i]
		if b.n == 0 {
			continue
		}
		bx, by := b.sumTokens/b.n, b.sumSeconds/b.n
		if x <= bx {
			if !havePrev {
				return seconds(by), nil
			}
			return seconds(py + (by-py)*(x-px)/(bx-px)), nil
		}
		qx, qy = px, py
		px, py = bx, by
		if !havePrev {
			qx, qy = 0, 0
		}
		havePrev = true
	}
	slope := (py - qy) / (px - qx)
	if p.npre == 1 {
		slope = py / px
	}
	return seconds(py + math.Max(slope, 0)*(x-px)), nil
}

// Decode is the predicted time of one decode iteration of batch running
// requests with a mean context of context tokens: each batch bucket's line
// in context, linear in batch between buckets, flat below the smallest,
// along the last segment's slope above the largest. ErrNoProfile if no
// decode was reported.
func (p *Profile) Decode(batch, context int) (time.Duration, error) {
	if p.ndec == 0 {
		return 0, fmt.Errorf("%w: no decode point", ErrNoProfile)
	}
	x, c := float64(max(batch, 1)), float64(max(context, 0))
	var px, py, qx, qy float64
	havePrev, haveTwo := false, false
	for i := range p.decode {
		b := &p.decode[i]
		if b.n == 0 {
			continue
		}
		bx, by := b.sumBatch/b.n, b.at(c)
		if x <= bx {
			if !havePrev {
				return seconds(by), nil
			}
			return seconds(py + (by-py)*(x-px)/(bx-px)), nil
		}
		haveTwo = havePrev
		qx, qy = px, py
		px, py = bx, by
		havePrev = true
	}
	if !haveTwo {
		return seconds(py), nil
	}
	return seconds(py + math.Max((py-qy)/(px-qx), 0)*(x-px)), nil
}

// at is the bucket's least-squares time at context c, the slope clamped at
// 0 (a longer context never makes a step faster).
func (b *decodePoint) at(c float64) float64 {
	mc, my := b.sumCtx/b.n, b.sumSeconds/b.n
	varc := b.sumCtxCtx/b.n - mc*mc
	if varc <= 1 {
		return my
	}
	slope := math.Max((b.sumCtxSeconds/b.n-mc*my)/varc, 0)
	return my + slope*(c-mc)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// ProfileKey names a Profile: one model on one accelerator type.
type ProfileKey struct {
	Model string
	Type  accel.TypeKey
}

// Profiles holds one Profile per (model, type); a host builds it as a
// value and passes the Profile a service needs to its Autoscaler.
type Profiles map[ProfileKey]*Profile

// Lookup returns the Profile of (model, type) once it has points for both
// phases; ErrNoProfile naming both otherwise.
func (ps Profiles) Lookup(model string, t accel.TypeKey) (*Profile, error) {
	p := ps[ProfileKey{Model: model, Type: t}]
	if p == nil || !p.Ready() {
		return nil, fmt.Errorf("%w: model %q on type %q", ErrNoProfile, model, t)
	}
	return p, nil
}
