package scheduler_test

import (
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// The internal tests run every built-in policy, the baselines included.
func init() {
	scheduler.SetBaselines(baselines.FIFO{}, baselines.Optimus{}, func(th time.Duration) scheduler.Policy {
		return baselines.Tiresias{Threshold: th}
	})
}
