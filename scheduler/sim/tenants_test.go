package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// TestReadPhillyTenants reads the virtual-cluster column of a synthetic
// trace in the Philly layout into JobSpec.Queue, and the recorded
// duration into TraceDuration.
func TestReadPhillyTenants(t *testing.T) {
	apps := polluxApps(t)
	f, err := os.Open("testdata/philly-tenants.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := ReadPhilly(f, apps, PhillyOptions{Jobs: 10})
	if err != nil {
		t.Fatal(err)
	}
	// The 30 s job is dropped (under 60 s).
	want := []struct {
		queue string
		dur   time.Duration
		gpus  int
	}{{"vc-a", 600 * time.Second, 2}, {"vc-b", 120 * time.Second, 1}, {"vc-c", time.Hour, 4}, {"", 90 * time.Second, 1}}
	if len(jobs) != len(want) {
		t.Fatalf("%d jobs: %+v", len(jobs), jobs)
	}
	for i, w := range want {
		if j := jobs[i]; j.Queue != w.queue || j.TraceDuration != w.dur || j.Replicas != w.gpus {
			t.Errorf("job %d: queue %q, trace duration %v, %d GPUs; want %q, %v, %d", i, j.Queue, j.TraceDuration, j.Replicas, w.queue, w.dur, w.gpus)
		}
	}
	// A trace without the column still reads; no job has a queue.
	jobs, err = ReadPhilly(strings.NewReader("timestamp,duration,num_gpus,gpu_time\n2017-10-09 06:00:00,600.0,2,1200.0\n"), apps, PhillyOptions{})
	if err != nil || len(jobs) != 1 || jobs[0].Queue != "" || jobs[0].TraceDuration != 600*time.Second {
		t.Fatalf("no cluster column: %v %+v", err, jobs)
	}
}

func TestReadWorkloadQueueColumn(t *testing.T) {
	jobs, err := ReadWorkload(strings.NewReader("name,time,application,num_replicas,batch_size,queue\na,0,m,1,1, vision \nb,1,m,1,1,\n"))
	if err != nil || len(jobs) != 2 || jobs[0].Queue != "vision" || jobs[1].Queue != "" {
		t.Fatalf("%v %+v", err, jobs)
	}
}

func quotas(typ string, nominal int) []quota.Quota {
	return []quota.Quota{{Type: accel.TypeKey(typ), Nominal: nominal}}
}

// TestTenantsHandComputed checks the per-tenant accounting on a shared
// pool (IgnoreQueues) where it can be done by hand: on 2 T4 under FIFO,
// tenant A's rigid 2-device job runs from 0 s to 230 s; tenant B's
// 1-device job arrives at 60 s and waits for it. Each is guaranteed 1
// device. Rounds every 60 s: at 0 s A holds 2 (entitled to 1); at 60,
// 120 and 180 s B holds 0 of its 1 (short); the devices were all held
// at 0 s, so a reclaim starts at the 60 s round (round 1) and completes
// at 240 s (round 4), when B's job starts: 3 rounds. The 60 s round is
// the reclaim round, so 2 rounds below guarantee. B's job: queueing
// delay 180 s, JCT 180 + 230 = 410 s.
func TestTenantsHandComputed(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	cfg := Config{
		Cluster: cluster(t, "1x2:t4"), Apps: apps, Policy: baselines.FIFO{}, Placer: placement.Packer{},
		Jobs: []JobSpec{
			{Name: "a0", Application: "toy", Replicas: 2, BatchSize: 10, Queue: "A"},
			{Name: "b0", Submit: 60 * time.Second, Application: "toy", Replicas: 1, BatchSize: 10, Queue: "B"},
		},
		Queues:       []quota.Queue{{Name: "B", Quotas: quotas("t4", 1)}, {Name: "A", Quotas: quotas("t4", 1)}},
		IgnoreQueues: true,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []TenantResult{
		{Name: "A", Jobs: 1, Completed: 1, AvgJCT: 230 * time.Second, GPUHours: 460.0 / 3600, Guaranteed: 1},
		{Name: "B", Jobs: 1, Completed: 1, AvgJCT: 410 * time.Second, AvgQueueDelay: 180 * time.Second, GPUHours: 230.0 / 3600, Guaranteed: 1,
			RoundsShort: 3, RoundsBelowGuarantee: 2, Reclaims: 1, ReclaimRounds: 3, MaxReclaimRounds: 3},
	}
	if len(res.Tenants) != len(want) {
		t.Fatalf("tenants %+v", res.Tenants)
	}
	for i, w := range want {
		g := res.Tenants[i]
		if d := g.GPUHours - w.GPUHours; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: GPU-hours %v, want %v", w.Name, g.GPUHours, w.GPUHours)
		}
		g.GPUHours = w.GPUHours
		if g != w {
			t.Errorf("tenant %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	// Without queues the result has no tenants, and queues do not change
	// what a shared pool does.
	plain := cfg
	plain.Queues, plain.IgnoreQueues = nil, false
	for i := range plain.Jobs {
		plain.Jobs[i].Queue = ""
	}
	pres, err := Run(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if pres.Tenants != nil || pres.AvgJCT != res.AvgJCT || pres.GPUHours != res.GPUHours {
		t.Errorf("plain run: tenants %v, avg JCT %v vs %v", pres.Tenants, pres.AvgJCT, res.AvgJCT)
	}
}

// TestTenantsQueuesReachScheduler runs with the queues enforced: every
// job names its leaf queue in the scheduler's Input (the scheduler
// refuses a job without one), and every tenant is reported.
func TestTenantsQueuesReachScheduler(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	var jobs []JobSpec
	for i := range 6 {
		jobs = append(jobs, JobSpec{Name: string(rune('a' + i)), Submit: time.Duration(i) * 40 * time.Second, Application: "toy", Replicas: 1, BatchSize: 10, Queue: []string{"x", "y"}[i%2]})
	}
	for _, kind := range []scheduler.Kind{scheduler.Rigid, scheduler.Adaptive} {
		res, err := Run(context.Background(), Config{
			Cluster: cluster(t, "2x2:t4"), Apps: apps, Policy: scheduler.Pollux{}, Kind: kind, Jobs: jobs,
			Queues: []quota.Queue{{Name: "org"}, {Name: "x", Parent: "org", Quotas: quotas("t4", 2)}, {Name: "y", Parent: "org", Quotas: quotas("t4", 2)}},
		})
		if err != nil {
			t.Fatalf("kind %v: %v", kind, err)
		}
		if len(res.Tenants) != 2 || res.Tenants[0].Name != "x" || res.Tenants[1].Jobs != 3 || res.Tenants[0].Guaranteed != 2 {
			t.Fatalf("kind %v: tenants %+v", kind, res.Tenants)
		}
		if res.Completed != len(jobs) {
			t.Errorf("kind %v: %d of %d completed", kind, res.Completed, len(jobs))
		}
	}
}

func TestTenantsValidation(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	good := Config{Cluster: cluster(t, "1x2:t4"), Apps: apps, Policy: baselines.FIFO{},
		Jobs:   []JobSpec{{Name: "a", Application: "toy", Replicas: 1, BatchSize: 10, Queue: "leaf"}},
		Queues: []quota.Queue{{Name: "root"}, {Name: "leaf", Parent: "root"}}}
	if _, err := Run(context.Background(), good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, edit := range map[string]func(c *Config){
		"job without queue":       func(c *Config) { c.Jobs[0].Queue = "" },
		"job in a cohort":         func(c *Config) { c.Jobs[0].Queue = "root" },
		"unknown queue":           func(c *Config) { c.Jobs[0].Queue = "nope" },
		"duplicate queue":         func(c *Config) { c.Queues = append(c.Queues, quota.Queue{Name: "leaf"}) },
		"unnamed queue":           func(c *Config) { c.Queues = append(c.Queues, quota.Queue{}) },
		"IgnoreQueues, no Queues": func(c *Config) { c.Queues, c.IgnoreQueues, c.Jobs[0].Queue = nil, true, "" },
	} {
		c := good
		c.Jobs = append([]JobSpec(nil), good.Jobs...)
		c.Queues = append([]quota.Queue(nil), good.Queues...)
		edit(&c)
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// TestDemandMatchesDescribe pins maxReplicas, the accounting's view of a
// job's demand, to what describe shows the policy as MaxReplicas, for
// every kind.
func TestDemandMatchesDescribe(t *testing.T) {
	apps := toyApps(t, ProfileOptions{})
	jobs := []JobSpec{{Name: "a", Application: "toy", Replicas: 2, BatchSize: 20}, {Name: "b", Application: "toy", Replicas: 1, BatchSize: 40}}
	for _, kind := range []scheduler.Kind{scheduler.Rigid, scheduler.Elastic, scheduler.Adaptive} {
		cfg := Config{Cluster: cluster(t, "2x2:t4"), Apps: apps, Policy: baselines.FIFO{}, Kind: kind, Jobs: jobs}
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range e.jobs {
			want := e.describe(j).MaxReplicas // first, as in a round: it sets up the Estimator
			if got := e.maxReplicas(j); got != want {
				t.Errorf("kind %v, job %s: maxReplicas %d, describe's MaxReplicas %d", kind, j.spec.Name, got, want)
			}
		}
	}
}

// TestTenantsBorrowKeepsGuarantees runs two tenants of 4 T4 each under
// the goodput policy with borrowing: tenant x's jobs arrive first and
// borrow y's devices; when y's arrive, every round after the reclaim
// round finds both within their guarantees (the target of zero
// rounds below guarantee after the reclaim round).
func TestTenantsBorrowKeepsGuarantees(t *testing.T) {
	apps := polluxApps(t)
	var jobs []JobSpec
	for i := range 8 {
		q, at := "x", time.Duration(i)*time.Minute
		if i >= 4 {
			q, at = "y", 3*time.Minute+time.Duration(i)*time.Minute
		}
		jobs = append(jobs, JobSpec{Name: fmt.Sprintf("j%d", i), Submit: at, Application: []string{"cifar10", "ncf"}[i%2], Replicas: 1, BatchSize: 128, Queue: q})
	}
	res, err := Run(context.Background(), Config{
		Cluster: cluster(t, "2x4:t4"), Apps: apps, Policy: scheduler.Pollux{}, Kind: scheduler.Adaptive, Jobs: jobs,
		Queues: []quota.Queue{{Name: "x", Quotas: quotas("t4", 4)}, {Name: "y", Quotas: quotas("t4", 4)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != len(jobs) {
		t.Fatalf("%d of %d completed", res.Completed, len(jobs))
	}
	for _, tr := range res.Tenants {
		if tr.RoundsBelowGuarantee != 0 || tr.OpenReclaims != 0 {
			t.Errorf("tenant %s: %d rounds below guarantee, %d open reclaims (%+v)", tr.Name, tr.RoundsBelowGuarantee, tr.OpenReclaims, tr)
		}
	}
	if y := res.Tenants[1]; y.Reclaims == 0 {
		t.Errorf("no reclaim exercised: %+v", res.Tenants)
	}
}
