package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// between is a Service replica count: n in [from, to), 0 elsewhere.
func between(n int, from, to time.Duration) func(time.Duration) int {
	return func(now time.Duration) int {
		if now >= from && now < to {
			return n
		}
		return 0
	}
}

// serviceSeer records whether the policy saw the service job pinned.
type serviceSeer struct{ pinned, rounds int }

func (s *serviceSeer) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	for _, j := range r.Input().Jobs {
		if j.ID == ServiceJobID("chat") && j.NonPreemptible && j.Kind == scheduler.Rigid {
			s.pinned++
		}
	}
	s.rounds++
	return baselines.FIFO{}.Allocate(ctx, r)
}

// TestServicesTakeDevicesFirst: on one device, a service holding it for
// the first two rounds delays the job to the round at 120 s (JCT 120 +
// 230 s); a service arriving at 120 s preempts the running job, which
// resumes from its checkpoint (90 of 200 iterations done) at 240 s: 240 +
// 30 s stall + 110 s.
func TestServicesTakeDevicesFirst(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	jobs := []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}
	for _, c := range []struct {
		name     string
		replicas func(time.Duration) int
		jct      float64
		restarts int
	}{
		{"held at first", between(1, 0, 120*time.Second), 120 + 230, 0},
		{"arrives later", between(1, 120*time.Second, 240*time.Second), 240 + 30 + 110, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			seer := &serviceSeer{}
			res, err := Run(context.Background(), Config{Cluster: cluster(t, "1x1:t4"), Jobs: jobs, Apps: apps, Policy: seer,
				Services: []Service{{Name: "chat", Type: "t4", Replicas: c.replicas}}})
			if err != nil {
				t.Fatal(err)
			}
			j := res.Jobs[0]
			if !j.Completed || math.Abs(secs(j.JCT)-c.jct) > 1e-3 || j.Restarts != c.restarts {
				t.Errorf("JCT %v s, %d restarts; want %v s, %d", secs(j.JCT), j.Restarts, c.jct, c.restarts)
			}
			if seer.pinned != 2 || res.ServiceShortfall != 0 {
				t.Errorf("policy saw the pinned service in %d of %d rounds (want 2); shortfall %d", seer.pinned, seer.rounds, res.ServiceShortfall)
			}
		})
	}
}

// TestServicesPreemptLeast: a two-device replica goes to the node whose
// jobs hold the fewest devices: b's (one device, beside a free one), not
// a's (two).
func TestServicesPreemptLeast(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	jobs := []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 10}, {Name: "b", Application: "toy", Replicas: 1, BatchSize: 10}}
	res, err := Run(context.Background(), Config{Cluster: cluster(t, "2x2:t4"), Jobs: jobs, Apps: apps, Policy: baselines.FIFO{},
		Services: []Service{{Name: "chat", Type: "t4", GPUsPerReplica: 2, Replicas: between(1, 120*time.Second, time.Hour)}}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.Jobs[0], res.Jobs[1]
	if a.Restarts != 0 || b.Restarts != 1 || !a.Completed || !b.Completed {
		t.Errorf("a: %d restarts, b: %d; want 0 and 1 (both completed: %v %v)", a.Restarts, b.Restarts, a.Completed, b.Completed)
	}
	if math.Abs(secs(a.JCT)-230) > 1e-3 {
		t.Errorf("a's JCT %v s, want 230", secs(a.JCT))
	}
	// No room for two replicas of two devices beside a: the shortfall is counted.
	res, err = Run(context.Background(), Config{Cluster: cluster(t, "1x2:t4"), Jobs: jobs[1:], Apps: apps, Policy: baselines.FIFO{},
		Services: []Service{{Name: "chat", Type: "t4", GPUsPerReplica: 2, Replicas: between(2, 0, 60*time.Second)}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ServiceShortfall != 1 || !res.Jobs[0].Completed || res.Jobs[0].JCT != 60*time.Second+230*time.Second {
		t.Errorf("shortfall %d, job %+v", res.ServiceShortfall, res.Jobs[0])
	}
}

func TestServicesValidation(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	good := Config{Cluster: cluster(t, "1x2:t4"), Jobs: []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10}}, Apps: apps, Policy: baselines.FIFO{}}
	svc := Service{Name: "chat", Type: "t4", Replicas: between(1, 0, time.Hour)}
	for _, c := range []struct {
		name string
		mod  func(*Config, *Service)
	}{
		{"no name", func(_ *Config, s *Service) { s.Name = "" }},
		{"taken name", func(c *Config, _ *Service) { c.Jobs[0].Name = ServiceJobID("chat") }},
		{"nil replicas", func(_ *Config, s *Service) { s.Replicas = nil }},
		{"negative gpus", func(_ *Config, s *Service) { s.GPUsPerReplica = -1 }},
		{"type not in cluster", func(_ *Config, s *Service) { s.Type = "a100-40gb" }},
		{"with faults", func(c *Config, _ *Service) { c.Faults.MTBF = time.Hour }},
		{"with queues", func(c *Config, _ *Service) { c.Queues = []quota.Queue{{Name: "q"}}; c.Jobs[0].Queue = "q" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, s := good, svc
			cfg.Jobs = append([]JobSpec(nil), good.Jobs...)
			c.mod(&cfg, &s)
			cfg.Services = []Service{s}
			if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}
