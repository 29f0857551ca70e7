package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/fleet"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/tiers"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustSpec(t testing.TB, spec string) accel.Cluster {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fifoFleet(t testing.TB, cfg fleet.Config) *fleet.Fleet {
	t.Helper()
	cfg.NewScheduler = func(string) (*scheduler.Scheduler, error) {
		return scheduler.New(scheduler.Config{Policy: baselines.FIFO{}})
	}
	f, err := fleet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCheckpointCosts(t *testing.T) {
	now := t0.Add(time.Hour)
	c := fleet.Checkpoint{SizeBytes: 10e9, Interval: 30 * time.Minute, Save: 15 * time.Second, Restore: 45 * time.Second, Last: now.Add(-20 * time.Minute)}
	// 10 GB over 10 Gb/s is 8 s.
	if got := c.Transfer(10); got != 8*time.Second {
		t.Errorf("Transfer = %v, want 8s", got)
	}
	// Running: save 15 + transfer 8 + restore 45 + 20 min lost.
	if got, want := c.MigrationCost(now, true, 10), 15*time.Second+8*time.Second+45*time.Second+20*time.Minute; got != want {
		t.Errorf("running MigrationCost = %v, want %v", got, want)
	}
	// Stopped with state: its checkpoint is saved; transfer + restore.
	if got, want := c.MigrationCost(now, false, 10), 53*time.Second; got != want {
		t.Errorf("stopped MigrationCost = %v, want %v", got, want)
	}
	// Lost work is at most one interval; none when checkpointing on demand.
	c.Last = now.Add(-5 * time.Hour)
	if got := c.Lost(now); got != 30*time.Minute {
		t.Errorf("Lost = %v, want the 30m interval", got)
	}
	c.OnDemand = true
	if got, want := c.MigrationCost(now, true, 10), 68*time.Second; got != want {
		t.Errorf("on-demand MigrationCost = %v, want %v", got, want)
	}
	if got, want := c.PreemptionCost(now), time.Minute; got != want {
		t.Errorf("on-demand PreemptionCost = %v, want %v", got, want)
	}
	// An unknown last checkpoint is charged a whole interval.
	if got := (fleet.Checkpoint{Interval: time.Hour}).Lost(now); got != time.Hour {
		t.Errorf("Lost with unknown Last = %v, want 1h", got)
	}
}

func TestBadInput(t *testing.T) {
	small := mustSpec(t, "1x4:t4")
	cases := []struct {
		name string
		cfg  fleet.Config
		in   fleet.Input
		want error
	}{
		{"negative bandwidth", fleet.Config{BandwidthGbps: -1}, fleet.Input{}, fleet.ErrInvalid},
		{"negative link", fleet.Config{Links: []fleet.Link{{From: "a", To: "b", Gbps: -5}}}, fleet.Input{}, fleet.ErrInvalid},
		{"hysteresis 1", fleet.Config{Hysteresis: 1}, fleet.Input{}, fleet.ErrInvalid},
		{"negative checkpoint", fleet.Config{}, fleet.Input{
			Clusters: []fleet.Cluster{{Name: "a", Cluster: small}},
			Jobs:     []fleet.Job{{Job: scheduler.Job{ID: "j"}, Checkpoint: fleet.Checkpoint{SizeBytes: -1}}},
		}, fleet.ErrInvalid},
		{"negative save", fleet.Config{}, fleet.Input{
			Clusters: []fleet.Cluster{{Name: "a", Cluster: small}},
			Jobs:     []fleet.Job{{Job: scheduler.Job{ID: "j"}, Checkpoint: fleet.Checkpoint{Save: -time.Second}}},
		}, fleet.ErrInvalid},
		{"no cluster has the type", fleet.Config{}, fleet.Input{
			Clusters: []fleet.Cluster{{Name: "a", Cluster: small}},
			Jobs:     []fleet.Job{{Job: scheduler.Job{ID: "j", Types: []accel.TypeKey{"h100-80gb"}}}},
		}, fleet.ErrNoCluster},
		{"duplicate cluster", fleet.Config{}, fleet.Input{
			Clusters: []fleet.Cluster{{Name: "a", Cluster: small}, {Name: "a", Cluster: small}},
		}, fleet.ErrInvalid},
		{"duplicate job", fleet.Config{}, fleet.Input{
			Clusters: []fleet.Cluster{{Name: "a", Cluster: small}},
			Jobs:     []fleet.Job{{Job: scheduler.Job{ID: "j"}}, {Job: scheduler.Job{ID: "j"}}},
		}, fleet.ErrInvalid},
		{"devices without cluster", fleet.Config{}, fleet.Input{
			Clusters: []fleet.Cluster{{Name: "a", Cluster: small}},
			Jobs:     []fleet.Job{{Job: scheduler.Job{ID: "j"}, Assignment: placement.Assignment{Job: "j", Devices: []string{"x"}}}},
		}, fleet.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := fleet.New(tc.cfg)
			if err == nil {
				_, err = f.Schedule(context.Background(), tc.in)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// brokenInventory is a cluster that disappears: its snapshot fails.
type brokenInventory struct{}

func (brokenInventory) Snapshot(context.Context) (accel.Cluster, error) {
	return accel.Cluster{}, errors.New("region unreachable")
}

func TestClusterGoneMidRound(t *testing.T) {
	east := mustSpec(t, "4x4:t4")
	f := fifoFleet(t, fleet.Config{})
	in := fleet.Input{
		Now: t0.Add(time.Hour),
		Clusters: []fleet.Cluster{
			{Name: "east", Cluster: east},
			{Name: "west", Cluster: mustSpec(t, "4x4:t4"), Inventory: brokenInventory{}},
		},
	}
	ckpt := fleet.Checkpoint{SizeBytes: 1e9, Interval: 10 * time.Minute, Restore: 30 * time.Second, Last: t0.Add(50 * time.Minute)}
	for i := range 6 {
		j := fleet.Job{Job: scheduler.Job{ID: fmt.Sprintf("w%d", i), Submitted: t0, Requested: 2}, Cluster: "west", Checkpoint: ckpt}
		if i%2 == 0 { // running on west when it vanished
			j.Attained = time.Hour
			j.Assignment = placement.Assignment{Job: j.ID, Devices: []string{"gone-a", "gone-b"}}
		}
		in.Jobs = append(in.Jobs, j)
	}
	in.Jobs = append(in.Jobs, fleet.Job{Job: scheduler.Job{ID: "lost-cluster", Submitted: t0, Requested: 1}, Cluster: "north"})
	plan, err := f.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"north", "west"}; !slices.Equal(plan.Gone, want) {
		t.Errorf("Gone = %v, want %v", plan.Gone, want)
	}
	if len(plan.Jobs) != len(in.Jobs) {
		t.Fatalf("%d decisions for %d jobs", len(plan.Jobs), len(in.Jobs))
	}
	for _, j := range in.Jobs {
		d, ok := plan.Decision(j.ID)
		if !ok {
			t.Fatalf("job %s lost", j.ID)
		}
		if d.To != "east" {
			t.Errorf("%s: to %q, want east", j.ID, d.To)
		}
		switch {
		case j.Attained > 0 && (d.Move != fleet.Migrate || d.Cost != 800*time.Millisecond+30*time.Second+10*time.Minute):
			// 1 GB over 10 Gb/s, restore, and the work since the last checkpoint.
			t.Errorf("%s: %v cost %v, want a migration costing 10m30.8s", j.ID, d.Move, d.Cost)
		case j.Attained == 0 && d.Move != fleet.Route:
			t.Errorf("%s: %v, want route", j.ID, d.Move)
		}
	}
	// East has 16 devices: all seven jobs (13 devices) start.
	if got := len(plan.Clusters[0].Plan.Assignments()); got != 7 {
		t.Errorf("east runs %d jobs, want 7", got)
	}
	// With no cluster left, every job waits at the fleet.
	in.Clusters = in.Clusters[1:]
	plan, err = f.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Jobs {
		if d.Move != fleet.Requeue || d.To != "" {
			t.Errorf("%s: %v to %q, want requeue", d.Job, d.Move, d.To)
		}
	}
}

// TestMigrationPaysItsCost: a job on slow devices migrates to free fast
// ones only when its predicted gain beats the cost, which grows with the
// checkpoint and shrinks with the bandwidth.
func TestMigrationPaysItsCost(t *testing.T) {
	fast, slow := mustSpec(t, "1x4:v100"), mustSpec(t, "1x4:k80")
	devs := placement.Assignment{Job: "j", Devices: nil}
	for _, d := range slow.Nodes[0].Devices {
		devs.Devices = append(devs.Devices, d.ID)
	}
	cases := []struct {
		name      string
		remaining float64 // seconds on one v100
		size      int64
		gbps      float64
		onDemand  bool
		want      fleet.Move
	}{
		{"long job moves", 8 * 3600, 10e9, 10, false, fleet.Migrate},
		// 4 v100 vs 4 k80 at 4×: predicted 2 h → 0.5 h; 1 h of transfer
		// (450 GB at 1 Gb/s) still pays.
		{"big checkpoint still pays", 8 * 3600, 450e9, 1, true, fleet.Migrate},
		// 2 h of transfer does not.
		{"transfer too slow", 8 * 3600, 900e9, 1, true, fleet.Stay},
		// 10 min left on k80 (2.5 min on v100): the lost half hour is
		// more than the gain.
		{"short job stays", 600 * 4, 1e9, 10, false, fleet.Stay},
		{"short job on demand moves", 600 * 4, 1e9, 10, true, fleet.Migrate},
		{"unknown remaining work stays", 0, 1e9, 10, true, fleet.Stay},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fifoFleet(t, fleet.Config{BandwidthGbps: tc.gbps})
			j := fleet.Job{Job: scheduler.Job{ID: "j", Submitted: t0, Requested: 4, Attained: time.Hour, RemainingWork: tc.remaining,
				Speedup: speeds{"v100-16gb": 4, "k80": 1}}, Cluster: "slow", Assignment: devs,
				Checkpoint: fleet.Checkpoint{SizeBytes: tc.size, Interval: time.Hour, OnDemand: tc.onDemand, Last: t0.Add(30 * time.Minute)}}
			plan, err := f.Schedule(context.Background(), fleet.Input{Now: t0.Add(time.Hour), Jobs: []fleet.Job{j},
				Clusters: []fleet.Cluster{{Name: "fast", Cluster: fast}, {Name: "slow", Cluster: slow}}})
			if err != nil {
				t.Fatal(err)
			}
			d := plan.Jobs[0]
			if d.Move != tc.want {
				t.Fatalf("%v (%s), want %v", d.Move, d.Message, tc.want)
			}
			if d.Move == fleet.Migrate {
				if want := j.Checkpoint.MigrationCost(t0.Add(time.Hour), true, tc.gbps); d.Cost != want {
					t.Errorf("cost %v, want %v", d.Cost, want)
				}
				if d.Cluster.To != 4 || d.To != "fast" {
					t.Errorf("on %s: %+v, want started on 4 fast devices", d.To, d.Cluster)
				}
			} else if d.Cluster.Action != placement.Keep {
				t.Errorf("staying job: %v, want keep", d.Cluster.Action)
			}
		})
	}
}

// randomFleet builds a fleet round of n jobs on four unequal clusters.
func randomFleet(t testing.TB, rng *rand.Rand, n int) fleet.Input {
	in := fleet.Input{Now: t0.Add(time.Hour), Clusters: []fleet.Cluster{
		{Name: "a", Cluster: mustSpec(t, "8x4:v100")},
		{Name: "b", Cluster: mustSpec(t, "4x8:a100-40gb")},
		{Name: "c", Cluster: mustSpec(t, "16x4:k80")},
		{Name: "d", Cluster: mustSpec(t, "4x4:t4,2x4:v100")},
	}}
	names := []string{"", "a", "b", "c", "d"}
	for i := range n {
		j := fleet.Job{Job: scheduler.Job{
			ID: fmt.Sprintf("j%03d", i), Submitted: t0.Add(time.Duration(rng.IntN(3600)) * time.Second),
			Requested: 1 << rng.IntN(4), Speedup: speeds{"v100-16gb": 3, "a100-40gb": 6, "k80": 1, "t4": 1.5},
			RemainingWork: float64(rng.IntN(20000)),
		}, Cluster: names[rng.IntN(len(names))]}
		if rng.IntN(3) == 0 {
			j.Types = []accel.TypeKey{"k80", "t4"}
		}
		in.Jobs = append(in.Jobs, j)
	}
	return in
}

// advance applies a plan to the input of the next round.
func advance(in fleet.Input, plan fleet.Plan) fleet.Input {
	next := in
	next.Now = in.Now.Add(10 * time.Minute)
	next.Jobs = slices.Clone(in.Jobs)
	for i := range next.Jobs {
		j := &next.Jobs[i]
		d, _ := plan.Decision(j.ID)
		j.Cluster, j.Assignment = d.To, d.Cluster.Assignment
		if d.Cluster.To > 0 {
			j.Attained += 10 * time.Minute
		}
	}
	return next
}

// TestConcurrentEqualsSequential: one goroutine per cluster gives the plan
// of running the clusters one by one, round after round.
func TestConcurrentEqualsSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	in := randomFleet(t, rng, 300)
	seq := fifoFleet(t, fleet.Config{Workers: 1})
	con := fifoFleet(t, fleet.Config{})
	inS, inC := in, in
	for round := range 4 {
		ps, err := seq.Schedule(context.Background(), inS)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := con.Schedule(context.Background(), inC)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ps, pc) {
			t.Fatalf("round %d: concurrent plan differs from sequential", round)
		}
		checkPlan(t, inS, ps)
		inS, inC = advance(inS, ps), advance(inC, pc)
	}
}

// TestRoutingIgnoresJobOrder: the order of Input.Jobs changes nothing
// (Route works out speedups in input order and routes in tier, priority,
// submission and ID order), round after round, with running jobs that
// may migrate.
func TestRoutingIgnoresJobOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	in := randomFleet(t, rng, 120)
	for i := range in.Jobs {
		in.Jobs[i].Priority = rng.IntN(3)
		in.Jobs[i].Tier = tiers.Tier(rng.IntN(4))
	}
	a, b := fifoFleet(t, fleet.Config{}), fifoFleet(t, fleet.Config{})
	for round := range 4 {
		pa, err := a.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		shuffled := in
		shuffled.Jobs = slices.Clone(in.Jobs)
		rng.Shuffle(len(shuffled.Jobs), func(i, j int) { shuffled.Jobs[i], shuffled.Jobs[j] = shuffled.Jobs[j], shuffled.Jobs[i] })
		pb, err := b.Schedule(context.Background(), shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(pa.Jobs, pb.Jobs) {
			t.Fatalf("round %d: shuffling the jobs changed the decisions", round)
		}
		checkPlan(t, in, pa)
		in = advance(in, pa)
		// The jobs on the fast clusters finish: room for the others.
		in.Jobs = slices.DeleteFunc(in.Jobs, func(j fleet.Job) bool { return j.Cluster == "a" || j.Cluster == "b" })
	}
}

// checkPlan checks the invariants of a plan: one decision per job, no
// device twice, each job on one cluster that has its types.
func checkPlan(t *testing.T, in fleet.Input, p fleet.Plan) {
	t.Helper()
	if len(p.Jobs) != len(in.Jobs) {
		t.Fatalf("%d decisions for %d jobs", len(p.Jobs), len(in.Jobs))
	}
	held := map[string]string{}
	for _, cp := range p.Clusters {
		for _, a := range cp.Plan.Assignments() {
			for _, d := range a.Devices {
				key := cp.Name + "/" + d
				if held[key] != "" {
					t.Fatalf("device %s held by %s and %s", key, held[key], a.Job)
				}
				held[key] = a.Job
			}
		}
	}
	for _, j := range in.Jobs {
		d, ok := p.Decision(j.ID)
		if !ok {
			t.Fatalf("job %s lost", j.ID)
		}
		if d.To == "" && d.Move != fleet.Requeue {
			t.Errorf("%s: at the fleet after %v", j.ID, d.Move)
		}
		if d.Cluster.To > 0 && len(j.Types) > 0 && !slices.Contains(j.Types, d.Cluster.Type) {
			t.Errorf("%s: runs on %s, allowed %v", j.ID, d.Cluster.Type, j.Types)
		}
	}
}

// TestStayKeepsJobsHome: with Config.Stay no job leaves the cluster it
// names, unless that cluster lacks its types.
func TestStayKeepsJobsHome(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	in := randomFleet(t, rng, 100)
	f := fifoFleet(t, fleet.Config{Stay: true})
	plan, err := f.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range plan.Jobs {
		j := in.Jobs[slices.IndexFunc(in.Jobs, func(j fleet.Job) bool { return j.ID == d.Job })]
		hasTypes := len(j.Types) == 0 || j.Cluster == "c" || j.Cluster == "d" // k80 and t4
		if j.Cluster != "" && hasTypes && (d.To != j.Cluster || d.Move != fleet.Stay) {
			t.Errorf("%d %s: %v %s→%s under Stay", i, d.Job, d.Move, j.Cluster, d.To)
		}
	}
}

// TestRoutingBalancesLoad: jobs all queued at one small cluster spread to
// the others, so that more of them start at once than by staying.
func TestRoutingBalancesLoad(t *testing.T) {
	in := fleet.Input{Now: t0, Clusters: []fleet.Cluster{
		{Name: "big", Cluster: mustSpec(t, "8x4:t4")},
		{Name: "small", Cluster: mustSpec(t, "1x4:t4")},
	}}
	for i := range 20 {
		in.Jobs = append(in.Jobs, fleet.Job{Job: scheduler.Job{ID: fmt.Sprintf("j%02d", i), Submitted: t0, Requested: 2}, Cluster: "small"})
	}
	started := func(cfg fleet.Config) int {
		plan, err := fifoFleet(t, cfg).Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, d := range plan.Jobs {
			if d.Cluster.To > 0 {
				k++
			}
		}
		return k
	}
	if stay, route := started(fleet.Config{Stay: true}), started(fleet.Config{}); stay != 2 || route != 18 {
		t.Errorf("started: %d staying, %d routed; want 2 and 18", stay, route)
	}
}

// TestTiers: an unknown tier is an error; a running premium or standard
// job is never migrated however much it would gain, a basic one is.
func TestTiers(t *testing.T) {
	f := fifoFleet(t, fleet.Config{})
	_, err := f.Schedule(context.Background(), fleet.Input{Clusters: []fleet.Cluster{{Name: "a", Cluster: mustSpec(t, "1x4:t4")}},
		Jobs: []fleet.Job{{Job: scheduler.Job{ID: "j", Tier: tiers.Tier(8)}}}})
	if !errors.Is(err, tiers.ErrUnknown) {
		t.Errorf("tier 8: %v, want ErrUnknownTier", err)
	}
	fast, slow := mustSpec(t, "1x4:v100"), mustSpec(t, "1x4:k80")
	devs := placement.Assignment{Job: "j"}
	for _, d := range slow.Nodes[0].Devices {
		devs.Devices = append(devs.Devices, d.ID)
	}
	for _, tc := range []struct {
		tier tiers.Tier
		want fleet.Move
	}{{tiers.Basic, fleet.Migrate}, {tiers.None, fleet.Migrate}, {tiers.Standard, fleet.Stay}, {tiers.Premium, fleet.Stay}} {
		j := fleet.Job{Job: scheduler.Job{ID: "j", Submitted: t0, Requested: 4, Attained: time.Hour, RemainingWork: 8 * 3600, Tier: tc.tier,
			Speedup: speeds{"v100-16gb": 4, "k80": 1}}, Cluster: "slow", Assignment: devs,
			Checkpoint: fleet.Checkpoint{SizeBytes: 1e9, Interval: time.Hour, OnDemand: true}}
		plan, err := fifoFleet(t, fleet.Config{}).Schedule(context.Background(), fleet.Input{Now: t0.Add(time.Hour), Jobs: []fleet.Job{j},
			Clusters: []fleet.Cluster{{Name: "fast", Cluster: fast}, {Name: "slow", Cluster: slow}}})
		if err != nil {
			t.Fatal(err)
		}
		if d := plan.Jobs[0]; d.Move != tc.want {
			t.Errorf("%v: %v (%s), want %v", tc.tier, d.Move, d.Message, tc.want)
		}
	}
}

// TestRoutingSpreadsOverEqualClusters: waiting jobs that every cluster
// could start at once go to the least asked-for, not all to the first.
func TestRoutingSpreadsOverEqualClusters(t *testing.T) {
	in := fleet.Input{Now: t0}
	for i := range 5 {
		in.Clusters = append(in.Clusters, fleet.Cluster{Name: fmt.Sprintf("c%d", i), Cluster: mustSpec(t, "16x4:t4")})
	}
	for i := range 100 {
		in.Jobs = append(in.Jobs, fleet.Job{Job: scheduler.Job{ID: fmt.Sprintf("j%03d", i), Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 8}})
	}
	rt, err := fifoFleet(t, fleet.Config{}).Route(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rt.Clusters {
		if len(c.Input.Jobs) != 20 {
			t.Errorf("%s: %d jobs, want 20", c.Name, len(c.Input.Jobs))
		}
	}
}

// TestCarbonWeight: between two equal clusters, a job goes to the one on
// the cleaner grid when carbon counts, whatever the unit of its series.
func TestCarbonWeight(t *testing.T) {
	series := func(v float64, u carbon.Unit) carbon.Series {
		return carbon.Series{Start: t0, Step: time.Hour, Values: []float64{v, v}, Unit: u}
	}
	for _, tc := range []struct {
		weight  float64
		a, b    carbon.Series
		wantDir string
	}{
		{0, series(600, carbon.GPerKWh), series(50, carbon.GPerKWh), "a"},    // carbon not counted: the first by name
		{1, series(600, carbon.GPerKWh), series(50, carbon.GPerKWh), "b"},    // b is cleaner
		{1, series(400, carbon.LbsPerMWh), series(150, carbon.GPerKWh), "b"}, // 400 lbs/MWh is 181 g/kWh
		{1, series(100, carbon.LbsPerMWh), series(150, carbon.GPerKWh), "a"}, // 45.4 g/kWh
	} {
		in := fleet.Input{Now: t0.Add(30 * time.Minute), Jobs: []fleet.Job{{Job: scheduler.Job{ID: "j", Submitted: t0}}},
			Clusters: []fleet.Cluster{{Name: "a", Cluster: mustSpec(t, "1x4:t4"), Carbon: tc.a}, {Name: "b", Cluster: mustSpec(t, "1x4:t4"), Carbon: tc.b}}}
		plan, err := fifoFleet(t, fleet.Config{CarbonWeight: tc.weight}).Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Jobs[0].To; got != tc.wantDir {
			t.Errorf("weight %v, %v %s vs %v %s: routed to %s, want %s", tc.weight, tc.a.Values[0], tc.a.Unit, tc.b.Values[0], tc.b.Unit, got, tc.wantDir)
		}
	}
	// A series that does not cover the round is bad input.
	in := fleet.Input{Now: t0.Add(5 * time.Hour), Clusters: []fleet.Cluster{{Name: "a", Cluster: mustSpec(t, "1x4:t4"), Carbon: series(100, carbon.GPerKWh)}}}
	if _, err := fifoFleet(t, fleet.Config{CarbonWeight: 1}).Schedule(context.Background(), in); !errors.Is(err, fleet.ErrInvalid) {
		t.Errorf("uncovered carbon: %v, want ErrInvalid", err)
	}
}
