package easyscale_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/easyscale"
)

// Without W-jobs, Mix plans exactly what the wrapped policy plans.
func TestMixForwards(t *testing.T) {
	c := cluster(t, "2x4:t4,1x8:a100-40gb")
	t0 := time.Unix(0, 0)
	var jobs []scheduler.Job
	for i := range 12 {
		jobs = append(jobs, scheduler.Job{ID: fmt.Sprintf("j%d", i), Submitted: t0.Add(time.Duration(i) * time.Minute), Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 1 + i%5})
	}
	in := scheduler.Input{Cluster: c, Jobs: jobs, Now: t0.Add(time.Hour)}
	for _, pol := range []scheduler.Policy{scheduler.Pollux{}, baselines.FIFO{}} {
		a, _ := scheduler.New(scheduler.Config{Policy: pol})
		b, _ := scheduler.New(scheduler.Config{Policy: easyscale.Mix{Policy: pol}})
		pa, err := a.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(pa, pb) {
			t.Fatalf("%T: Mix changed a plan without W-jobs", pol)
		}
	}
}

// A W-job that Pollux starts on one type also takes the idle devices of
// the other when they speed it up, and keeps W.
func TestMixUsesIdleTypes(t *testing.T) {
	c := cluster(t, "1x2:a100-40gb,1x4:t4")
	t0 := time.Unix(0, 0)
	// Cheap synchronisation: spreading over two nodes costs little.
	slow := goodput.Params{AlphaC: 0.01, BetaC: 0.003, AlphaR: 0.001, BetaR: 0.0002, AlphaN: 0.002, BetaN: 0.0005, Gamma: 2}
	fast := slow
	fast.AlphaC, fast.BetaC = slow.AlphaC/2, slow.BetaC/2
	m, err := goodput.NewWorkerModel(goodput.WorkerConfig{Workers: 8, Local: 32,
		Models: map[string]goodput.Model{"t4": {Params: slow}, "a100-40gb": {Params: fast}}})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []scheduler.Job{{ID: "w", Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, Workers: 8, Speedup: m}}
	s, err := scheduler.New(scheduler.Config{Policy: easyscale.Mix{Policy: scheduler.Pollux{}}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Schedule(context.Background(), scheduler.Input{Cluster: c, Jobs: jobs, Now: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	checkW(t, c, jobs, plan)
	d, _ := plan.Decision("w")
	if len(d.Shares) != 2 {
		t.Fatalf("expected a gang of both types: %s", d.Message)
	}
	if _, err := scheduler.New(scheduler.Config{Policy: easyscale.Mix{}}); err == nil {
		t.Fatal("Mix without a policy accepted")
	}
}
