package scheduler_test

import (
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/genetic"
)

// The internal tests run every policy, the baselines and the genetic
// reference included.
func init() {
	scheduler.SetGenetic(func(population, generations int, seed uint64) scheduler.Policy {
		return genetic.Policy{Population: population, Generations: generations, Seed: seed}
	}, genetic.MaxPopulation)
	scheduler.SetBaselines(baselines.FIFO{}, baselines.Optimus{}, func(th time.Duration) scheduler.Policy {
		return baselines.Tiresias{Threshold: th}
	})
}
