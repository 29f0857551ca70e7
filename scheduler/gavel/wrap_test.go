package gavel

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// forward is a user policy that only forwards to another.
type forward struct{ p scheduler.Policy }

func (f forward) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	return f.p.Allocate(ctx, r)
}

// TestWrapForwardsGavel checks that a forwarding wrapper around Gavel's
// policy gives byte-identical plans round after round (two policies in
// lockstep: the policy keeps credits between rounds), for every objective,
// with the default placer and with Packer.
func TestWrapForwardsGavel(t *testing.T) {
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	c := mustCluster(t, "2x4:v100,2x4:p100,2x4:k80")
	for _, obj := range []Objective{MaxMinFairness{}, MaxMinFairness{HeterogeneityBlind: true}, MaxMinFairness{WaterFilling: true}, FinishTimeFairness{}, MinMakespan{}} {
		for _, placer := range []placement.Placer{nil, placement.Packer{}} {
			for seed := range uint64(2) {
				trace := gavelTrace(t, tab, 30, time.Minute, seed)
				jobs, throughput := traceJobs(tab, trace)
				for i := range jobs {
					jobs[i].Submitted = t0
				}
				cfg := Config{Objective: obj, Throughput: throughput}
				plainPol, err := NewPolicy(cfg)
				if err != nil {
					t.Fatal(err)
				}
				wrappedPol, _ := NewPolicy(cfg)
				plain, _ := scheduler.New(scheduler.Config{Policy: plainPol, Placer: placer})
				wrapped, _ := scheduler.New(scheduler.Config{Policy: forward{wrappedPol}, Placer: placer})
				var cur []placement.Assignment
				for r := range 6 {
					in := scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * 6 * time.Minute)}
					a, errA := plain.Schedule(context.Background(), in)
					b, errB := wrapped.Schedule(context.Background(), in)
					if errA != nil || errB != nil {
						t.Fatalf("%T round %d: %v, %v", obj, r, errA, errB)
					}
					ja, _ := json.Marshal(a)
					jb, _ := json.Marshal(b)
					if !bytes.Equal(ja, jb) {
						t.Fatalf("%T, placer %T, seed %d, round %d: wrapped plan differs:\n%s\nvs\n%s", obj, placer, seed, r, ja, jb)
					}
					cur = a.Assignments()
				}
			}
		}
	}
}
