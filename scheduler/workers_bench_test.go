package scheduler

import (
	"math/rand/v2"
	"testing"

	"github.com/goodsched/goodsched/goodput"
)

// workerInput is shape2000x8 with half of the elastic jobs that are not
// pinned made W-jobs: W = their largest count (at least what they hold),
// a goodput.WorkerModel over the four types (each type's speed the job's
// random scale there) as their Speedup, so that they may mix types.
func workerInput(seed uint64) Input {
	in := genInput(seed, shape2000x8)
	rng := rand.New(rand.NewPCG(seed, 11))
	held := map[string]int{}
	for _, a := range in.Current {
		held[a.Job] = len(a.Devices)
	}
	types := in.Cluster.Types()
	for i := range in.Jobs {
		j := &in.Jobs[i]
		if j.Kind == Rigid || j.NonPreemptible || rng.IntN(2) == 0 {
			continue
		}
		w := max(j.MaxReplicas, held[j.ID], 1)
		fs := j.Speedup.(fakeSpeedup)
		models := make(map[string]goodput.Model, len(types))
		for _, t := range types {
			f := 1 / fs.scale[string(t)]
			models[string(t)] = goodput.Model{Params: goodput.Params{AlphaC: 0.01 * f, BetaC: 0.002 * f, AlphaR: 0.01, BetaR: 0.001, AlphaN: 0.05, BetaN: 0.004, Gamma: 2}}
		}
		m, err := goodput.NewWorkerModel(goodput.WorkerConfig{Workers: w, Local: 32, Models: models})
		if err != nil {
			panic(err)
		}
		j.Kind, j.Workers, j.MinReplicas, j.MaxReplicas, j.Speedup = Elastic, w, 1, w, m
	}
	return in
}

// BenchmarkGoodputWorkers2000x8192 is BenchmarkGoodput2000x8192 with half
// of the elastic jobs W-jobs (workerInput): target within 1.5× of it.
func BenchmarkGoodputWorkers2000x8192(b *testing.B) {
	benchSchedule(b, Pollux{}, workerInput(1))
}
