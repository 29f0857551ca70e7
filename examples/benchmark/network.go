package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/goodsched/goodsched/netpredict"
)

// netCluster is the simulated asymmetric cluster of network_top1_gain_points:
// 8 racks × 8 nodes whose NICs differ (25 to 200 Gbit/s), whose racks'
// uplinks are congested on cycles of their own (time-varying bandwidth,
// RTT and retransmissions per rack), and whose hosts' CPU load drifts.
type netCluster struct {
	nic        []float64 // per node, Gbit/s
	rackOf     []int
	period     []float64 // per rack, seconds
	phase      []float64 // per rack
	load       []float64 // per node, drifting
	freeGPUs   []int     // per node, what a resource-only score sees
	rng        *rand.Rand
	noiseFrac  float64
	overlapped float64 // fraction of compute the all-reduce can hide behind (DeAR)
}

func newNetCluster(rng *rand.Rand) *netCluster {
	c := &netCluster{rng: rng, noiseFrac: 0.03, overlapped: 0.4}
	nics := []float64{25, 50, 100, 200}
	for r := 0; r < 8; r++ {
		c.period = append(c.period, 600+3000*rng.Float64())
		c.phase = append(c.phase, 2*math.Pi*rng.Float64())
		for n := 0; n < 8; n++ {
			c.nic = append(c.nic, nics[rng.IntN(len(nics))])
			c.rackOf = append(c.rackOf, r)
			c.load = append(c.load, 0.6*rng.Float64())
			c.freeGPUs = append(c.freeGPUs, 1+rng.IntN(8))
		}
	}
	return c
}

// step moves the drifting state on: CPU loads random-walk, free GPUs change.
func (c *netCluster) step() {
	for n := range c.load {
		c.load[n] = min(0.85, max(0, c.load[n]+0.08*(c.rng.Float64()-0.5)))
		if c.rng.IntN(4) == 0 {
			c.freeGPUs[n] = 1 + c.rng.IntN(8)
		}
	}
}

// congestion is rack r's uplink congestion at time t, in [0.05, 0.85].
func (c *netCluster) congestion(r int, t float64) float64 {
	return 0.45 + 0.4*math.Sin(2*math.Pi*t/c.period[r]+c.phase[r])
}

// telemetry is what the host measures of node n at time t (5% noise on
// the bandwidth).
func (c *netCluster) telemetry(n int, t float64) netpredict.Telemetry {
	g := c.congestion(c.rackOf[n], t)
	return netpredict.Telemetry{
		BandwidthGbps: c.nic[n] * (1 - g) * (1 + 0.05*(c.rng.Float64()-0.5)),
		RTT:           time.Duration(float64(20*time.Microsecond) * (1 + 15*g*g)),
		Retransmits:   0.05 * g * g,
		CPULoad:       c.load[n],
	}
}

// truth is job j's step time on node n at time t, noiseless: compute
// slowed by contention, the all-reduce (at 80% of the link, inflated by
// retransmissions, plus latency rounds) partly hidden behind compute.
func (c *netCluster) truth(j netpredict.Job, n int, t float64) float64 {
	g := c.congestion(c.rackOf[n], t)
	bw := c.nic[n] * (1 - g)
	compute := j.ComputeSeconds * (1 + 1.5*c.load[n])
	comm := j.CommBytes*8/(0.8*bw*1e9)*(1+3*0.05*g*g) + float64(j.Rounds)*2*20e-6*(1+15*g*g)
	return compute + max(0, comm-c.overlapped*compute)
}

// networkFigure is network_top1_gain_points: on the asymmetric cluster,
// jobs arrive every 30 s with 8 candidate nodes each; the first 300 run on
// a random candidate and report 5 step times with their node's telemetry,
// training the model; of the next 1,000 (which keep reporting from the
// node the model picks), how often the model's predicted-best candidate
// is the truly fastest, minus how often a resource-only score's is (the
// candidate with the most free GPUs, as a least-allocated score picks), in
// points. It also returns both accuracies. With perfect, the ground truth
// itself is the predictor (a check of the harness: it is always right).
func networkFigure(rng *rand.Rand, quick, perfect bool) (gain, model, resource float64, err error) {
	train, eval := 300, 1000
	if quick {
		train, eval = 100, 200
	}
	c := newNetCluster(rng)
	var m netpredict.Model
	hitM, hitR := 0, 0
	now := 0.0
	for k := 0; k < train+eval; k++ {
		now += 30
		c.step()
		j := netpredict.Job{
			ComputeSeconds: 0.05 + 0.45*rng.Float64(),
			CommBytes:      math.Exp(math.Log(1e7) + (math.Log(2e9)-math.Log(1e7))*rng.Float64()),
			Rounds:         10 + rng.IntN(190),
		}
		cands := rng.Perm(len(c.nic))[:8]
		tele := make([]netpredict.Telemetry, len(cands))
		trueBest, resBest := 0, 0
		for i, n := range cands {
			tele[i] = c.telemetry(n, now)
			if c.truth(j, n, now) < c.truth(j, cands[trueBest], now) {
				trueBest = i
			}
			if c.freeGPUs[n] > c.freeGPUs[cands[resBest]] {
				resBest = i
			}
		}
		run := rng.IntN(len(cands))
		if k >= train {
			if run, err = m.Best(j, tele); err != nil {
				return 0, 0, 0, err
			}
			if perfect { // the ground truth as the predictor
				run = trueBest
			}
			if run == trueBest {
				hitM++
			}
			if resBest == trueBest {
				hitR++
			}
		}
		for s := 0; s < 5; s++ { // the job's reports from where it runs
			t := now + float64(s)
			step := c.truth(j, cands[run], t) * (1 + c.noiseFrac*(2*rng.Float64()-1))
			if err := m.Observe(j, c.telemetry(cands[run], t), time.Duration(step*float64(time.Second))); err != nil {
				return 0, 0, 0, fmt.Errorf("network figure: %w", err)
			}
		}
	}
	model, resource = float64(hitM)/float64(eval), float64(hitR)/float64(eval)
	return 100 * (model - resource), model, resource, nil
}
