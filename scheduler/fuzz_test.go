package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

type constSpeedup float64

func (c constSpeedup) Speedup(_ string, _, replicas int) float64 {
	return float64(c) * float64(replicas)
}

// FuzzSchedule builds jobs from fuzzed fields: the Scheduler must either
// return one of its errors or a plan that keeps every invariant.
func FuzzSchedule(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, int64(3))
	f.Add([]byte{0, 0, 0, 0}, int64(0))
	f.Add([]byte{255, 9, 200, 3, 7, 7, 7, 7, 1, 2}, int64(-1))
	f.Add([]byte{4, 1, 3, 0, 2, 2, 9, 1, 6, 5, 8, 3, 2, 1, 0, 4}, int64(99))
	f.Fuzz(func(t *testing.T, data []byte, sp int64) {
		cl := testCluster(group{2, 4, "t4"}, group{1, 8, "a100"})
		in := Input{Cluster: cl, Now: t0.Add(time.Hour)}
		for k := 0; k+3 < len(data) && len(in.Jobs) < 12; k += 4 {
			j := Job{
				ID:          fmt.Sprintf("j%d", data[k]%16),
				Kind:        Kind(int(data[k+1]%4) - 0),
				MinReplicas: int(data[k+2] % 10),
				MaxReplicas: int(data[k+3] % 12),
				Requested:   int(data[k+1] % 9),
				Submitted:   t0.Add(time.Duration(data[k]) * time.Minute),
			}
			switch data[k+2] % 5 {
			case 0:
				j.Types = []accel.TypeKey{"t4"}
			case 1:
				j.Types = []accel.TypeKey{"h100"}
			}
			switch data[k+3] % 4 {
			case 0:
				j.Speedup = constSpeedup(float64(sp) / 4)
			case 1:
				j.Speedup = constSpeedup(math.NaN())
			case 2:
				j.Speedup = fakeSpeedup{alpha: 0.1, node: 0.8}
			}
			j.NonPreemptible = data[k]%7 == 0
			in.Jobs = append(in.Jobs, j)
		}
		if len(data) > 0 && data[0]%3 == 0 && len(in.Jobs) > 0 {
			in.Current = []placement.Assignment{{Job: in.Jobs[0].ID, Devices: []string{"t4-0-000/0", "t4-0-000/1"}}}
		}
		for _, pol := range []Policy{Pollux{}, FIFO{}, Tiresias{}, Optimus{}} {
			s, _ := New(Config{Policy: pol})
			plan, err := s.Schedule(context.Background(), in)
			if err != nil {
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrBadSpeedup) {
					t.Fatalf("%T: unexpected error %v", pol, err)
				}
				continue
			}
			checkPlan(t, in, plan)
		}
	})
}
