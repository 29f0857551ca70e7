package carbonaware

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// group is n nodes of per devices of type typ.
type group struct {
	n, per int
	typ    accel.TypeKey
}

// testCluster builds nodes "<type>-<group>-<nnn>" with devices
// "<node>/<index>".
func testCluster(groups ...group) accel.Cluster {
	var c accel.Cluster
	for gi, g := range groups {
		for i := 0; i < g.n; i++ {
			name := fmt.Sprintf("%s-%d-%03d", g.typ, gi, i)
			n := accel.Node{Name: name}
			for d := 0; d < g.per; d++ {
				n.Devices = append(n.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, d), Node: name, Index: d, Type: g.typ, Healthy: true, NUMANode: -1})
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	return c
}

// fakeSpeedup is a concave speedup c/(1+alpha·(c−1)) · node^(nodes−1).
type fakeSpeedup struct{ alpha, node float64 }

func (f fakeSpeedup) Speedup(typ string, nodes, replicas int) float64 {
	if replicas <= 0 {
		return 0
	}
	c := float64(replicas)
	return c / (1 + f.alpha*(c-1)) * math.Pow(f.node, float64(max(nodes-1, 0)))
}

// genInput is a random round of 160 jobs on 16 nodes of 4 t4, half of
// them running (placed by a first Pollux round).
func genInput(seed uint64) scheduler.Input {
	rng := rand.New(rand.NewPCG(seed, 7))
	in := scheduler.Input{Cluster: testCluster(group{16, 4, "t4"}), Now: t0.Add(48 * time.Hour)}
	for i := range 160 {
		j := scheduler.Job{ID: fmt.Sprintf("j%03d", i), Submitted: t0.Add(time.Duration(rng.IntN(40)) * time.Hour), Kind: scheduler.Elastic,
			Speedup: fakeSpeedup{alpha: 0.01 + rng.Float64()*0.3, node: 0.6 + rng.Float64()*0.35}, Weight: 1,
			Attained: time.Duration(rng.IntN(40)) * time.Hour, Restarts: rng.IntN(3)}
		j.MinReplicas = 1 + rng.IntN(2)
		j.MaxReplicas = j.MinReplicas + rng.IntN(16)
		if rng.Float64() < 0.2 {
			j.Kind, j.Requested = scheduler.Rigid, j.MinReplicas
		}
		in.Jobs = append(in.Jobs, j)
	}
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		panic(err)
	}
	p, err := s.Schedule(context.Background(), in)
	if err != nil {
		panic(err)
	}
	in.Current = p.Assignments()
	return in
}

func scheduleOnce(t *testing.T, pol scheduler.Policy, in scheduler.Input) scheduler.Plan {
	t.Helper()
	s, err := scheduler.New(scheduler.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ip(v int) *int { return &v }

// forward is a user policy that only forwards to another.
type forward struct{ p scheduler.Policy }

func (f forward) Allocate(ctx context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	return f.p.Allocate(ctx, r)
}

// TestWrapForwards checks that a forwarding wrapper around the
// carbon-aware policy, and the carbon-aware policy around a forwarding
// wrapper of Pollux, give byte-identical plans to the policy itself, on
// random rounds with deadlines, a forecast and an envelope, with the
// default placer and with Packer.
func TestWrapForwards(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		in := genInput(seed)
		in.Carbon = hourly(300, 250, 100, 100, 300, 300, 300, 300)
		in.Carbon.Start = in.Now.Truncate(time.Hour)
		for i := range in.Jobs {
			if i%3 == 0 {
				in.Jobs[i].Deadline, in.Jobs[i].DelayTolerant = in.Now.Add(time.Duration(3+i%5)*time.Hour), true
				in.Jobs[i].RemainingWork = float64(1+i%4) * 3600
			}
		}
		if seed == 3 {
			in.Envelope = map[accel.TypeKey]int{"t4": 20}
		}
		pol := Policy{CarbonWeight: 1}
		for _, placer := range []placement.Placer{nil, placement.Packer{}} {
			plain := planJSON(t, scheduler.Config{Policy: pol, Placer: placer}, in)
			for name, w := range map[string]scheduler.Policy{"forward(carbon)": forward{pol}, "carbon(forward(pollux))": Policy{CarbonWeight: 1, Inner: forward{scheduler.Pollux{}}}} {
				if got := planJSON(t, scheduler.Config{Policy: w, Placer: placer}, in); !bytes.Equal(plain, got) {
					t.Fatalf("seed %d, %s, placer %T: plan differs:\n%s\nvs\n%s", seed, name, placer, plain, got)
				}
			}
		}
	}
}

// TestWrapsAnyPolicy: carbon-aware FIFO defers the delay-tolerant job to
// the clean hours exactly as carbon-aware Pollux does, and leaves the
// other job to FIFO.
func TestWrapsAnyPolicy(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"})
	plain := scheduler.Job{ID: "b", Submitted: t0, Kind: scheduler.Rigid, Requested: 2}
	in := scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{flexJob("a", 2, 5*time.Hour), plain}, Now: t0,
		Carbon: hourly(300, 250, 100, 100, 300, 300, 300, 300)}
	p := scheduleOnce(t, Policy{CarbonWeight: 1, Inner: baselines.FIFO{}}, in)
	da, _ := p.Decision("a")
	db, _ := p.Decision("b")
	if da.To != 0 || da.Reason != scheduler.ReasonCarbon || db.To != 2 {
		t.Fatalf("a %d (%v), b %d; want a 0 (carbon), b 2", da.To, da.Reason, db.To)
	}
	in.Now = t0.Add(2 * time.Hour)
	if d := scheduleOnce(t, Policy{CarbonWeight: 1, Inner: baselines.FIFO{}}, in).Decisions[0]; d.To == 0 {
		t.Fatalf("clean hour: a gets nothing (%s)", d.Message)
	}
}

func planJSON(t *testing.T, cfg scheduler.Config, in scheduler.Input) []byte {
	t.Helper()
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
