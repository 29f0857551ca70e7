package scheduler_test

import (
	"math"
	"testing"

	"github.com/goodsched/goodsched/scheduler"
)

type fixedSpeeds map[string]float64

func (f fixedSpeeds) Slowdown(_, device string) float64 {
	if v, ok := f[device]; ok {
		return v
	}
	return 1
}

func (fixedSpeeds) LocalityPenalty(string) float64 { return 1.5 }

func TestGangSlowdown(t *testing.T) {
	sp := fixedSpeeds{"a": 1.1, "b": 1.3}
	for _, c := range []struct {
		name  string
		sp    scheduler.Speeds
		devs  []string
		nodes int
		want  float64
	}{
		{"no speeds", nil, []string{"a", "b"}, 2, 1},
		{"no devices", sp, nil, 0, 1},
		{"slowest device", sp, []string{"a", "b", "c"}, 1, 1.3},
		{"unknown device is nominal", sp, []string{"c"}, 1, 1},
		{"spanning nodes pays the penalty", sp, []string{"a", "c"}, 2, 1.1 * 1.5},
	} {
		if got := scheduler.GangSlowdown(c.sp, "j", c.devs, c.nodes); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: GangSlowdown = %v, want %v", c.name, got, c.want)
		}
	}
}
