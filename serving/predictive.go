package serving

import (
	"math"
	"time"
)

// Predictive is goodsched's autoscaler. It forecasts the arrival rate and
// the tokens per request, turns the forecast into replicas with the
// service's Profile, and provisions for the whole start-up horizon:
//
//   - Forecast: per Bucket, Holt's linear smoothing (level, damped trend)
//     of three series, requests/s, prompt tokens/s and output tokens/s, each
//     with its one-step residual spread σ and, once the history covers two
//     Season periods, a multiplicative seasonal factor from the same phase
//     of earlier periods. Tokens per request ahead are the token forecasts
//     over the request forecast. A burst term, the arrival rate of the last
//     BurstWindow, answers a surge before the bucket ends.
//   - Capacity: the largest per-replica rate λ whose modelled TPOT and TTFT
//     stay within Headroom of the SLO, where a replica spends λ·prefill(ISL)
//     of its time in prefill (decode stalls meanwhile) and decodes a batch
//     B = λ·OSL·TPOT at step time decode(B, ISL+OSL/2); the model is
//     multiplied by correction factors, observed p90 over modelled value at
//     the observed load (learned like Dynamo's, but against the p90 the SLO
//     names rather than the mean).
//   - Decision: the most replicas any step from now to now + Startup +
//     Bucket needs, at the upper bound of the request rate or of the
//     prompt-token rate (forecast + Z·σ, σ growing with the steps ahead),
//     held for DownDelay (the start-up lag) before a scale-down, because a
//     replica released now cannot be back sooner.
//
// Before the profile has points it keeps the current count. A Predictive is
// not safe for concurrent use.
type Predictive struct {
	// Service gives the SLO, start-up lag and bounds.
	Service Service
	// Profile is the (model, type) profile, fed by the host.
	Profile *Profile
	// Bucket is the forecast resolution; 0 means 30 s.
	Bucket time.Duration
	// Season is the seasonal period; 0 means 24 h. Seasonality is used once
	// the history holds two periods.
	Season time.Duration
	// Headroom is the fraction of each SLO target the model aims at; 0
	// means 0.92.
	Headroom float64
	// Z is the forecast's upper bound in residual standard deviations; 0
	// means 1.28 (a one-sided 90% bound).
	Z float64
	// BurstWindow is the span of the burst rate; 0 means 10 s.
	BurstWindow time.Duration
	// DownDelay is how long a lower count must hold before a scale-down;
	// 0 means the service's Startup, at least 60 s: capacity released now
	// cannot be back sooner than that.
	DownDelay time.Duration

	started     bool
	bucketStart time.Time
	cur         Metrics
	// series forecast requests/s, prompt tokens/s and output tokens/s.
	series   [3]holt
	isl, osl float64
	burst    []rateSample
	needs    []needSample
	corrTPOT float64
	corrTTFT float64
	// capacities caches capacity by quantised (ISL, OSL); cleared when a
	// correction factor moves by more than 1%.
	capacities map[[2]int]float64
	capCorr    [2]float64
}

// holt is one damped-trend exponentially smoothed series with its residual
// spread and history (for seasonality).
type holt struct {
	level, trend, sigma2 float64
	n                    int
	history, levels      []float64
}

func (h *holt) observe(v float64, keep int) {
	if h.n == 0 {
		h.level, h.trend = v, 0
	} else {
		predicted := h.level + holtPhi*h.trend
		e := v - predicted
		if h.n == 1 {
			h.sigma2 = e * e
		} else {
			h.sigma2 += 0.2 * (e*e - h.sigma2)
		}
		level := holtAlpha*v + (1-holtAlpha)*predicted
		h.trend = holtBeta*(level-h.level) + (1-holtBeta)*holtPhi*h.trend
		h.level = level
	}
	h.n++
	h.history = append(h.history, v)
	h.levels = append(h.levels, h.level)
	if keep > 0 && len(h.history) > 2*keep {
		h.history = append(h.history[:0], h.history[len(h.history)-keep:]...)
		h.levels = append(h.levels[:0], h.levels[len(h.levels)-keep:]...)
	}
}

// forecast is the damped-trend value steps buckets ahead, times the seasonal
// factor when two seasons of history exist.
func (h *holt) forecast(steps, seasonBuckets int) float64 {
	trend, damp := 0.0, 1.0
	for range steps {
		damp *= holtPhi
		trend += damp
	}
	f := math.Max(h.level+trend*h.trend, 0)
	if seasonBuckets > 0 && len(h.history) >= 2*seasonBuckets {
		var ratio float64
		var k int
		now := len(h.history) - 1
		for back := seasonBuckets; now-back >= 0; back += seasonBuckets {
			if lv := h.levels[now-back]; lv > 0 && now-back+steps < len(h.history) {
				ratio += h.history[now-back+steps] / lv
				k++
			}
		}
		if k > 0 {
			f *= math.Min(math.Max(ratio/float64(k), 0.5), 2)
		}
	}
	return f
}

type rateSample struct {
	end      time.Time
	interval time.Duration
	arrivals int
}

type needSample struct {
	at   time.Time
	need int
}

// Name returns "goodsched".
func (p *Predictive) Name() string { return "goodsched" }

func (p *Predictive) defaults() (bucket, season, burst, down time.Duration, headroom, z float64) {
	bucket, season, burst, down = p.Bucket, p.Season, p.BurstWindow, p.DownDelay
	if bucket <= 0 {
		bucket = 30 * time.Second
	}
	if season <= 0 {
		season = 24 * time.Hour
	}
	if burst <= 0 {
		burst = 10 * time.Second
	}
	if down <= 0 {
		down = max(60*time.Second, p.Service.Startup)
	}
	return bucket, season, burst, down, orDefault(p.Headroom, 0.92), orDefault(p.Z, 1.28)
}

// Desired implements Autoscaler.
func (p *Predictive) Desired(m Metrics) (int, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	bucket, season, burstWindow, downDelay, headroom, z := p.defaults()
	if !p.started {
		p.started = true
		p.bucketStart = m.Now.Add(-m.Interval)
		p.corrTPOT, p.corrTTFT = 1, 1
	}
	accumulate(&p.cur, &m)
	if m.Arrivals > 0 {
		p.observeTokens(float64(m.PromptTokens)/float64(m.Arrivals), float64(m.OutputTokens)/float64(m.Arrivals), float64(m.Arrivals))
	}
	seasonBuckets := int(season / bucket)
	if span := m.Now.Sub(p.bucketStart); span >= bucket {
		sec := span.Seconds()
		p.series[0].observe(float64(p.cur.Arrivals)/sec, 3*seasonBuckets)
		p.series[1].observe(float64(p.cur.PromptTokens)/sec, 3*seasonBuckets)
		p.series[2].observe(float64(p.cur.OutputTokens)/sec, 3*seasonBuckets)
		p.cur, p.bucketStart = Metrics{}, m.Now
	}
	// Burst rate: arrivals of the last burstWindow.
	p.burst = append(p.burst, rateSample{end: m.Now, interval: m.Interval, arrivals: m.Arrivals})
	for len(p.burst) > 1 && !p.burst[0].end.After(m.Now.Add(-burstWindow)) {
		p.burst = p.burst[1:]
	}
	var n int
	var span time.Duration
	for _, s := range p.burst {
		n += s.arrivals
		span += s.interval
	}
	burstRate := float64(n) / span.Seconds()

	current := m.Ready + m.Starting
	if p.Profile == nil || !p.Profile.Ready() || p.isl == 0 {
		return p.Service.Clamp(current), nil
	}
	p.learn(&m)
	if p.capacities == nil || math.Abs(p.corrTPOT-p.capCorr[0]) > 0.01*p.capCorr[0] || math.Abs(p.corrTTFT-p.capCorr[1]) > 0.01*p.capCorr[1] {
		p.capacities = map[[2]int]float64{}
		p.capCorr = [2]float64{p.corrTPOT, p.corrTTFT}
	}

	// The most any forecast in [now, now + start-up + bucket] needs: the
	// rate's upper bound (spread growing with the horizon) at that step's
	// tokens per request.
	need := 0
	if c := p.capacity(p.isl, p.osl, headroom); c > 0 {
		need = int(math.Ceil(burstRate / c))
	}
	if p.series[0].n > 0 {
		steps := int(math.Ceil(float64(p.Service.Startup+bucket) / float64(bucket)))
		for h := 0; h <= steps; h++ {
			rate := p.series[0].forecast(h, seasonBuckets)
			prompt := p.series[1].forecast(h, seasonBuckets)
			isl, osl := p.isl, p.osl
			if rate > 0 {
				isl = prompt / rate
				osl = p.series[2].forecast(h, seasonBuckets) / rate
			}
			isl, osl = math.Max(isl, p.isl), math.Max(osl, p.osl)
			c := p.capacity(isl, osl, headroom)
			if c <= 0 {
				continue
			}
			// Upper bounds of the request rate and of the prompt-token rate
			// (in requests of the forecast ISL): either may surge.
			spread := z * math.Sqrt(1+float64(h)*horizonGrowth)
			upper := math.Max(rate+spread*math.Sqrt(p.series[0].sigma2), (prompt+spread*math.Sqrt(p.series[1].sigma2))/isl)
			need = max(need, int(math.Ceil(upper/c)))
		}
	}
	if need == 0 {
		return p.Service.Clamp(current), nil
	}

	p.needs = append(p.needs, needSample{at: m.Now, need: need})
	for len(p.needs) > 1 && p.needs[0].at.Before(m.Now.Add(-downDelay)) {
		p.needs = p.needs[1:]
	}
	desired := need
	for _, s := range p.needs {
		desired = max(desired, s.need)
	}
	if desired < current && need >= current {
		desired = current
	}
	return p.Service.Clamp(desired), nil
}

// observeTokens keeps exponentially weighted means of ISL and OSL with a
// weight that grows with the arrivals seen (about the last 500 requests).
func (p *Predictive) observeTokens(isl, osl, arrivals float64) {
	if p.isl == 0 {
		p.isl, p.osl = isl, osl
		return
	}
	a := math.Min(1, arrivals/500)
	p.isl += a * (isl - p.isl)
	p.osl += a * (osl - p.osl)
}

const (
	holtAlpha = 0.5
	holtBeta  = 0.2
	holtPhi   = 0.9 // trend damping per bucket
	// horizonGrowth is how fast the forecast's variance grows with the
	// steps ahead, relative to the one-step residual variance.
	horizonGrowth = 0.5
)

// learn updates the correction factors: observed p90 over the model's value
// at the observed per-replica rate, smoothed over about a minute of ticks.
func (p *Predictive) learn(m *Metrics) {
	if m.Ready == 0 || m.Arrivals == 0 {
		return
	}
	rate := float64(m.Arrivals) / m.Interval.Seconds() / float64(m.Ready)
	tpot, ttft, ok := p.model(rate, p.isl, p.osl)
	if !ok {
		return
	}
	w := math.Min(1, m.Interval.Seconds()/60)
	if m.Finished >= 5 && m.TPOTP90 > 0 {
		r := clamp(m.TPOTP90.Seconds()/tpot, 0.5, 4)
		p.corrTPOT += w * (r - p.corrTPOT)
	}
	if m.FirstTokens >= 5 && m.TTFTP90 > 0 {
		r := clamp(m.TTFTP90.Seconds()/ttft, 0.5, 8)
		p.corrTTFT += w * (r - p.corrTTFT)
	}
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

// model returns the modelled mean TPOT and TTFT (seconds) of one replica
// receiving rate requests/s of the current ISL and OSL, and false when the
// replica cannot keep up.
func (p *Predictive) model(rate, isl, osl float64) (tpot, ttft float64, ok bool) {
	pre, err := p.Profile.Prefill(int(isl))
	if err != nil {
		return 0, 0, false
	}
	prefill := pre.Seconds()
	busy := rate * prefill
	if busy >= 0.95 {
		return 0, 0, false
	}
	ctx := int(isl + osl/2)
	step := func(b float64) float64 {
		t, err := p.Profile.Decode(max(1, int(math.Round(b))), ctx)
		if err != nil {
			return math.Inf(1)
		}
		return t.Seconds()
	}
	tpot = step(1) / (1 - busy)
	for range 30 {
		b := rate * osl * tpot
		next := step(b) / (1 - busy)
		if math.Abs(next-tpot) < 1e-5 {
			tpot = next
			break
		}
		tpot = 0.5*tpot + 0.5*next
	}
	if kv := p.Profile.KVCapacityTokens(); kv > 0 && rate*osl*tpot*(isl+osl) > float64(kv) {
		return 0, 0, false
	}
	ttft = (prefill + step(rate*osl*tpot)) / (1 - busy)
	return tpot, ttft, true
}

// capacity is the largest per-replica rate whose corrected model meets the
// SLO scaled by headroom at (isl, osl), cached by ISL and OSL rounded to 2%.
func (p *Predictive) capacity(isl, osl, headroom float64) float64 {
	key := [2]int{int(math.Round(math.Log(math.Max(isl, 1)) * 50)), int(math.Round(math.Log(math.Max(osl, 1)) * 50))}
	if c, ok := p.capacities[key]; ok {
		return c
	}
	tpotTarget := headroom * p.Service.SLO.TPOTP90.Seconds()
	ttftTarget := headroom * p.Service.SLO.TTFTP90.Seconds()
	meets := func(rate float64) bool {
		tpot, ttft, ok := p.model(rate, isl, osl)
		return ok && p.corrTPOT*tpot <= tpotTarget && p.corrTTFT*ttft <= ttftTarget
	}
	c := 0.0
	if pre, err := p.Profile.Prefill(int(isl)); err == nil && meets(1e-6) {
		lo, hi := 1e-6, 0.95/pre.Seconds()
		for range 30 {
			mid := (lo + hi) / 2
			if meets(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		c = lo
	}
	p.capacities[key] = c
	return c
}
