package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

func policies() map[string]Policy {
	return map[string]Policy{
		"goodput":   Pollux{},
		"geometric": Pollux{Geometric: true},
		"p=-10":     Pollux{Exponent: -10},
		"fifo":      fifo,
		"tiresias":  tiresiasAt(0),
		"optimus":   optimus,
		"genetic":   geneticAt(20, 10, 1),
	}
}

func TestPackerProperties(t *testing.T) {
	for _, pol := range []Policy{Pollux{}, fifo} {
		s, _ := New(Config{Policy: pol, Placer: placement.Packer{}})
		for si, sh := range shapes {
			in := genInput(uint64(si), sh)
			plan, err := s.Schedule(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, in, plan)
		}
	}
}

// A waiting job too young for its restarts still takes idle devices.
func TestYoungPreemptedJobStarts(t *testing.T) {
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0.Add(10 * time.Second), Jobs: []Job{
		{ID: "a", Kind: Elastic, MinReplicas: 1, MaxReplicas: 4, Submitted: t0, Restarts: 3},
	}}
	s, _ := New(Config{})
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Decisions[0]; d.Action != placement.Start || d.To != 4 {
		t.Fatalf("%+v", d)
	}
}

var shapes = []genOpts{
	{groups: []group{{4, 4, "t4"}}, jobs: 12, maxReplicas: 8, rounds: 2, pinnedFrac: 0.3, rigidFrac: 0.2},
	{groups: []group{{16, 4, "t4"}}, jobs: 40, maxReplicas: 16, rounds: 2, pinnedFrac: 0.2, rigidFrac: 0.2},
	{groups: []group{{3, 8, "a100"}, {4, 4, "t4"}, {2, 8, "v100"}}, jobs: 30, maxReplicas: 24, rounds: 3, pinnedFrac: 0.2, rigidFrac: 0.3},
	{groups: []group{{2, 8, "a100"}, {2, 4, "t4"}}, jobs: 3, maxReplicas: 40, rounds: 1},
}

// checkPlan verifies the plan invariants against the input.
func checkPlan(t *testing.T, in Input, plan Plan) {
	t.Helper()
	if len(plan.Decisions) != len(in.Jobs) {
		t.Fatalf("%d decisions for %d jobs", len(plan.Decisions), len(in.Jobs))
	}
	devs := make(map[string]accel.Device)
	capacity := in.Cluster.Counts()
	for _, n := range in.Cluster.Nodes {
		for _, d := range n.Devices {
			devs[d.ID] = d
		}
	}
	cur := make(map[string][]string)
	for _, a := range in.Current {
		cur[a.Job] = a.Devices
	}
	jobs := make(map[string]Job)
	for _, j := range in.Jobs {
		jobs[j.ID] = j
	}
	used := make(map[string]string)
	perType := make(map[accel.TypeKey]int)
	for k, d := range plan.Decisions {
		if k > 0 && plan.Decisions[k-1].Job >= d.Job {
			t.Fatalf("decisions not sorted by job: %q then %q", plan.Decisions[k-1].Job, d.Job)
		}
		j, ok := jobs[d.Job]
		if !ok {
			t.Fatalf("decision for unknown job %q", d.Job)
		}
		if d.To != len(d.Assignment.Devices) {
			t.Fatalf("job %q: To %d but %d devices", d.Job, d.To, len(d.Assignment.Devices))
		}
		if d.Message == "" {
			t.Fatalf("job %q: no message", d.Job)
		}
		for _, id := range d.Assignment.Devices {
			dv, ok := devs[id]
			if !ok || !dv.Healthy || dv.Type != d.Type {
				t.Fatalf("job %q: device %q unknown, unhealthy or not %s", d.Job, id, d.Type)
			}
			if o, dup := used[id]; dup {
				t.Fatalf("device %q given to %q and %q", id, o, d.Job)
			}
			used[id] = d.Job
		}
		perType[d.Type] += d.To
		if d.To > 0 {
			if len(j.Types) > 0 && !slices.Contains(j.Types, d.Type) {
				t.Fatalf("job %q: type %s not allowed", d.Job, d.Type)
			}
			lo, hi := max(j.MinReplicas, 1), j.MaxReplicas
			if j.Kind == Rigid {
				lo, hi = j.requested(), j.requested()
			}
			if j.NonPreemptible && len(cur[j.ID]) > 0 {
				lo, hi = len(cur[j.ID]), len(cur[j.ID])
			}
			if d.To < lo || (hi > 0 && d.To > hi) {
				t.Fatalf("job %q (%v): %d devices outside [%d, %d]", d.Job, j.Kind, d.To, lo, hi)
			}
		}
		if j.NonPreemptible && len(cur[j.ID]) > 0 {
			if d.Action != placement.Keep || !placement.SameDevices(d.Assignment.Devices, cur[j.ID]) {
				t.Fatalf("pinned job %q moved: %v %v→%v", d.Job, d.Action, cur[j.ID], d.Assignment.Devices)
			}
		}
		switch d.Action {
		case placement.Queue:
			if d.From != 0 || d.To != 0 {
				t.Fatalf("job %q: queue with %d→%d", d.Job, d.From, d.To)
			}
		case placement.Stop:
			if d.From == 0 || d.To != 0 {
				t.Fatalf("job %q: stop with %d→%d", d.Job, d.From, d.To)
			}
		case placement.Keep:
			if !placement.SameDevices(d.Assignment.Devices, cur[j.ID]) {
				t.Fatalf("job %q: keep but devices changed", d.Job)
			}
		case placement.Grow:
			if d.To <= d.From || !subset(cur[j.ID], d.Assignment.Devices) {
				t.Fatalf("job %q: grow %d→%d without keeping its devices", d.Job, d.From, d.To)
			}
		case placement.Shrink:
			if d.To >= d.From || !subset(d.Assignment.Devices, cur[j.ID]) {
				t.Fatalf("job %q: shrink %d→%d onto other devices", d.Job, d.From, d.To)
			}
		case placement.Move:
			if d.From == 0 || d.To == 0 || subset(cur[j.ID], d.Assignment.Devices) || subset(d.Assignment.Devices, cur[j.ID]) {
				t.Fatalf("job %q: move %d→%d that keeps or extends its devices", d.Job, d.From, d.To)
			}
		}
	}
	for typ, n := range perType {
		if typ != "" && n > capacity[typ] {
			t.Fatalf("type %s over capacity: %d > %d", typ, n, capacity[typ])
		}
	}
}

func TestPlanProperties(t *testing.T) {
	ctx := context.Background()
	for name, pol := range policies() {
		t.Run(name, func(t *testing.T) {
			s, err := New(Config{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			for si, sh := range shapes {
				for seed := uint64(0); seed < 3; seed++ {
					in := genInput(seed+uint64(si)*10, sh)
					plan, err := s.Schedule(ctx, in)
					if err != nil {
						t.Fatalf("shape %d seed %d: %v", si, seed, err)
					}
					checkPlan(t, in, plan)
					// Deterministic, and independent of the order of jobs and assignments.
					shuffled := in
					shuffled.Jobs = slices.Clone(in.Jobs)
					shuffled.Current = slices.Clone(in.Current)
					rng := rand.New(rand.NewPCG(seed, 99))
					rng.Shuffle(len(shuffled.Jobs), func(a, b int) { shuffled.Jobs[a], shuffled.Jobs[b] = shuffled.Jobs[b], shuffled.Jobs[a] })
					rng.Shuffle(len(shuffled.Current), func(a, b int) {
						shuffled.Current[a], shuffled.Current[b] = shuffled.Current[b], shuffled.Current[a]
					})
					again, err := s.Schedule(ctx, shuffled)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(plan, again) {
						t.Fatalf("shape %d seed %d: plan depends on input order", si, seed)
					}
					// Applying the plan and rescheduling keeps the invariants.
					next := in
					next.Current = plan.Assignments()
					next.Now = in.Now.Add(time.Minute)
					p2, err := s.Schedule(ctx, next)
					if err != nil {
						t.Fatal(err)
					}
					checkPlan(t, next, p2)
				}
			}
		})
	}
}

func TestValidation(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"})
	ok := Job{ID: "a", Kind: Elastic, MinReplicas: 1, MaxReplicas: 4}
	cases := []struct {
		name string
		in   Input
		want error
		job  string
	}{
		{"duplicate", Input{Cluster: cl, Jobs: []Job{ok, ok}}, ErrInvalid, `"a"`},
		{"empty id", Input{Cluster: cl, Jobs: []Job{{}}}, ErrInvalid, "jobs[0]"},
		{"min>max", Input{Cluster: cl, Jobs: []Job{{ID: "b", MinReplicas: 4, MaxReplicas: 2}}}, ErrInvalid, `"b"`},
		{"negative", Input{Cluster: cl, Jobs: []Job{{ID: "b", Requested: -1}}}, ErrInvalid, `"b"`},
		{"weight", Input{Cluster: cl, Jobs: []Job{{ID: "w", Weight: -1}}}, ErrInvalid, `"w"`},
		{"unknown type", Input{Cluster: cl, Jobs: []Job{{ID: "c", Types: []accel.TypeKey{"h100"}}}}, ErrUnknownType, `"c"`},
		{"nan speedup", Input{Cluster: cl, Jobs: []Job{{ID: "d", Speedup: nanSpeedup{}}}}, ErrBadSpeedup, `"d"`},
		{"unknown device", Input{Cluster: cl, Jobs: []Job{ok}, Current: []placement.Assignment{{Job: "a", Devices: []string{"nope"}}}}, ErrInvalid, `"a"`},
		{"device twice", Input{Cluster: cl, Jobs: []Job{ok, {ID: "e"}}, Current: []placement.Assignment{
			{Job: "a", Devices: []string{"t4-0-000/0"}}, {Job: "e", Devices: []string{"t4-0-000/0"}}}}, ErrInvalid, `"e"`},
		{"bad cluster", Input{Cluster: accel.Cluster{Nodes: []accel.Node{{}}}}, ErrInvalid, "cluster"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for name, pol := range policies() {
				s, _ := New(Config{Policy: pol})
				_, err := s.Schedule(context.Background(), c.in)
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.job) {
					t.Fatalf("%s: err = %v, want %v naming %s", name, err, c.want, c.job)
				}
			}
		})
	}
	if _, err := (Pollux{Exponent: 2}).Allocate(context.Background(), mustRound(t, Input{Cluster: cl})); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Exponent 2: err = %v", err)
	}
}

// A job too big for the cluster is queued with a reason, not dropped.
func TestUnservableQueued(t *testing.T) {
	in := Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0, Jobs: []Job{
		{ID: "big", Kind: Rigid, Requested: 8},
		{ID: "small", Kind: Elastic, MinReplicas: 1, MaxReplicas: 2},
	}}
	for name, pol := range policies() {
		s, _ := New(Config{Policy: pol})
		plan, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := plan.Decision("big")
		if d.Action != placement.Queue || d.Reason != ReasonNoCapacity || !strings.Contains(d.Message, "8") {
			t.Fatalf("%s: big: %+v", name, d)
		}
		if d, _ := plan.Decision("small"); d.Action != placement.Start {
			t.Fatalf("%s: small: %+v", name, d)
		}
	}
}

// Growing a running job reads like "grew 4→8: speedup …, restart factor …".
func TestReasonMessage(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"})
	cur := placement.Assignment{Job: "a", Devices: []string{"t4-0-000/0", "t4-0-000/1", "t4-0-000/2", "t4-0-000/3"}}
	in := Input{Cluster: cl, Now: t0.Add(time.Hour), Current: []placement.Assignment{cur}, Jobs: []Job{
		{ID: "a", Kind: Adaptive, MinReplicas: 1, MaxReplicas: 8, Submitted: t0, Speedup: fakeSpeedup{alpha: 0.05, node: 0.95}},
	}}
	s, _ := New(Config{})
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	d := plan.Decisions[0]
	if d.Action != placement.Grow || d.From != 4 || d.To != 8 {
		t.Fatalf("decision %+v", d)
	}
	if !strings.HasPrefix(d.Message, "grew 4→8: speedup ") || !strings.Contains(d.Message, "restart factor 0.99") {
		t.Fatalf("message %q", d.Message)
	}
}

func TestConcurrentSchedule(t *testing.T) {
	in := genInput(3, shapes[2])
	s, _ := New(Config{})
	want, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	schedulesConcurrently(t, s, []Input{in, in, in, in}, []Plan{want, want, want, want})
}

// schedulesConcurrently runs inputs on s from one goroutine each and
// checks each plan against want.
func schedulesConcurrently(t *testing.T, s *Scheduler, inputs []Input, want []Plan) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(inputs))
	for k := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.Schedule(context.Background(), inputs[k])
			if err == nil && !reflect.DeepEqual(got, want[k]) {
				err = fmt.Errorf("input %d: concurrent plan differs", k)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ := New(Config{})
	if _, err := s.Schedule(ctx, genInput(1, shapes[1])); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// Rounds on changing clusters give the plans of fresh Schedulers, also
// when several goroutines share one Scheduler.
func TestClusterCacheSchedules(t *testing.T) {
	in := genInput(5, shapes[1])
	sick := in
	sick.Cluster = in.Cluster.Clone()
	for i := range sick.Cluster.Nodes[0].Devices {
		sick.Cluster.Nodes[0].Devices[i].Healthy = false
	}
	inputs := []Input{in, sick, in, sick}
	want := make([]Plan, len(inputs))
	for k, x := range inputs {
		s, _ := New(Config{})
		p, err := s.Schedule(context.Background(), x)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = p
	}
	shared, _ := New(Config{})
	schedulesConcurrently(t, shared, inputs, want)
}

// fixed is a user policy that returns the same targets every round.
type fixed []Target

func (f fixed) Allocate(context.Context, *Round) ([]Target, error) { return f, nil }

// The placement package's typed reason reaches Decision.Reason, and
// actions and reasons marshal to text.
func TestPlacementReasonReachesDecision(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"})
	in := Input{Cluster: cl, Now: t0, Jobs: []Job{
		{ID: "pinned", Requested: 4, NonPreemptible: true},
		{ID: "gang", Requested: 4},
	}, Current: []placement.Assignment{{Job: "pinned", Devices: []string{"t4-0-000/0", "t4-0-000/1", "t4-0-001/0", "t4-0-001/1"}}}}
	s, _ := New(Config{Policy: fixed{{Job: "gang", Type: "t4", Count: 4, MaxNodes: 1}}})
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := plan.Decision("gang")
	if d.Action != placement.Queue || d.Reason != ReasonFragmented || !strings.Contains(d.Message, "(fragmented)") {
		t.Fatalf("gang: %+v, want queued, fragmented", d)
	}
	b, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(b), `"action":"queue"`) || !strings.Contains(string(b), `"reason":"fragmented"`) {
		t.Fatalf("JSON %s, %v", b, err)
	}
	var back Decision
	if err := json.Unmarshal(b, &back); err != nil || back.Reason != ReasonFragmented || back.Action != placement.Queue {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// offering is a user policy that places its one target itself.
type offering struct{ devs []string }

func (o offering) Allocate(_ context.Context, r *Round) ([]Target, error) {
	tg := []Target{{Job: "a", Type: "t4", Count: len(o.devs)}}
	if r.TakesOffers() {
		if err := r.Offer(tg, placement.PlaceResult{Assignments: []placement.Assignment{{Job: "a", Devices: o.devs}}}); err != nil {
			return nil, err
		}
	}
	return tg, nil
}

// A policy's offered placement is used when the Scheduler has no Placer
// of the host's, checked like a Placer's, and never taken otherwise.
func TestOfferedPlacement(t *testing.T) {
	in := Input{Cluster: testCluster(group{2, 4, "t4"}), Now: t0, Jobs: []Job{{ID: "a", Requested: 2}}}
	own := []string{"t4-0-001/3", "t4-0-000/2"}
	s, _ := New(Config{Policy: offering{own}})
	plan, err := s.Schedule(context.Background(), in)
	if d, _ := plan.Decision("a"); err != nil || !slices.Equal(d.Assignment.Devices, own) {
		t.Fatalf("offered: %+v, %v", d, err)
	}
	s, _ = New(Config{Policy: offering{own}, Placer: placement.Packer{}})
	plan, err = s.Schedule(context.Background(), in)
	if d, _ := plan.Decision("a"); err != nil || slices.Equal(d.Assignment.Devices, own) || d.To != 2 {
		t.Fatalf("with a host placer: %+v, %v", d, err)
	}
	s, _ = New(Config{Policy: offering{[]string{"t4-0-000/0", "t4-0-000/0"}}})
	if _, err := s.Schedule(context.Background(), in); !errors.Is(err, ErrPolicy) {
		t.Fatalf("a device offered twice: %v, want ErrPolicy", err)
	}
}

// TestPlanDecisionUnsorted: Decision finds every job whether the
// decisions are sorted by ID (a binary search) or not (a host-built or
// edited plan: the scan), and reports a missing one.
func TestPlanDecisionUnsorted(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 2, 0, 3, 1}} {
		var p Plan
		for _, k := range order {
			p.Decisions = append(p.Decisions, Decision{Job: ids[k], To: k + 1})
		}
		for k, id := range ids {
			if d, ok := p.Decision(id); !ok || d.To != k+1 {
				t.Errorf("order %v: Decision(%q) = %+v, %v", order, id, d, ok)
			}
		}
		if _, ok := p.Decision("zz"); ok {
			t.Errorf("order %v: found a job the plan lacks", order)
		}
	}
}

// subset is the naive oracle: every device of a is in b.
func subset(a, b []string) bool {
	in := make(map[string]bool, len(b))
	for _, id := range b {
		in[id] = true
	}
	for _, id := range a {
		if !in[id] {
			return false
		}
	}
	return true
}
