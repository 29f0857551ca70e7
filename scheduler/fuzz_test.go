package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
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
		for _, pol := range []Policy{Pollux{}, fifo, tiresiasAt(0), optimus} {
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

// FuzzQueues builds quota trees and job queues from fuzzed bytes: the
// round must either fail with ErrInvalid or schedule within every
// queue's entitlement, never over capacity.
func FuzzQueues(f *testing.F) {
	f.Add([]byte{0, 0, 4, 1, 1, 0, 4, 0, 2, 1, 2, 3})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{0, 1, 0, 1, 0, 1})
	f.Add([]byte{2, 255, 128, 7, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		cl := testCluster(group{2, 4, "t4"}, group{1, 8, "a100"})
		in := Input{Cluster: cl, Now: t0.Add(time.Hour)}
		types := []accel.TypeKey{"t4", "a100", "h100", ""}
		names := []string{"", "a", "b", "c", "d", "e"}
		limit := func(b byte) *int {
			if b%3 == 0 {
				return nil
			}
			v := int(int8(b)) / 3
			return &v
		}
		k := 0
		for ; k+5 < len(data) && len(in.Queues) < 6; k += 6 {
			q := quota.Queue{Name: names[data[k]%6], Parent: names[data[k+1]%6], Weight: float64(int8(data[k+2])) / 8}
			if data[k+2] == 255 {
				q.Weight = math.NaN()
			}
			for n := range int(data[k+3] % 3) {
				q.Quotas = append(q.Quotas, quota.Quota{Type: types[(int(data[k+4])+n)%4], Nominal: int(int8(data[k+5])) / 8,
					BorrowingLimit: limit(data[k+4]), LendingLimit: limit(data[k+5])})
			}
			in.Queues = append(in.Queues, q)
		}
		for j := 0; k < len(data) && j < 8; k, j = k+1, j+1 {
			in.Jobs = append(in.Jobs, Job{ID: fmt.Sprintf("j%d", j), Queue: names[data[k]%6], Kind: Kind(data[k] % 3),
				MinReplicas: 1, MaxReplicas: int(data[k] % 9), Submitted: t0})
		}
		plan, err := (&Scheduler{}).Schedule(context.Background(), in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		used := make(map[accel.TypeKey]int)
		for _, d := range plan.Decisions {
			used[d.Type] += d.To
		}
		if used["t4"] > 8 || used["a100"] > 8 {
			t.Fatalf("over capacity: %v", used)
		}
		for _, u := range plan.Queues {
			if u.Used > u.Entitled && !slices.ContainsFunc(in.Queues, func(q quota.Queue) bool { return q.Parent == u.Queue }) {
				t.Fatalf("queue %s uses %d %s, entitled to %d", u.Queue, u.Used, u.Type, u.Entitled)
			}
			if u.Used < 0 || u.Pending < 0 || u.Lent < 0 || u.Borrowed < 0 || u.Entitled < 0 {
				t.Fatalf("negative figure: %+v", u)
			}
		}
	})
}
