package carbonaware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// hourly returns an hourly g/kWh series from t0.
func hourly(v ...float64) carbon.Series {
	return carbon.Series{Start: t0, Step: time.Hour, Values: v, Unit: carbon.GPerKWh}
}

// flexJob is an elastic, delay-tolerant job on up to 4 devices with a
// linear speedup, whose planned work (RemainingWork × 1.25, the default
// headroom) is hours × 4 devices × 3600 s.
func flexJob(id string, hours float64, deadline time.Duration) scheduler.Job {
	return scheduler.Job{ID: id, Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 4,
		RemainingWork: hours * 4 * 3600 / 1.25, Deadline: t0.Add(deadline), DelayTolerant: true}
}

// TestCarbonAwareCleanestSlots: two hours of full-width work, hourly
// intensities 300, 250, 100, 100, 300, …; the plan ends one slot before
// the deadline (DeadlineMargin 0 = one step). With the deadline 5 h away
// the work goes to hours 2 and 3 (100 g/kWh) and the job waits now; 4 h
// away only hour 2 is clean and the second hour is hour 1 (250): it still
// waits now; 3 h away the two hours are 0 and 1, so it runs now on all 4.
func TestCarbonAwareCleanestSlots(t *testing.T) {
	ci := hourly(300, 250, 100, 100, 300, 300, 300, 300)
	cl := testCluster(group{1, 4, "t4"})
	pol := Policy{CarbonWeight: 1}
	for _, tc := range []struct {
		deadline time.Duration
		now      time.Duration
		want     int
		reason   scheduler.Reason
	}{
		{5 * time.Hour, 0, 0, scheduler.ReasonCarbon},
		{5 * time.Hour, 2 * time.Hour, 4, scheduler.ReasonObjective},
		{4 * time.Hour, 0, 0, scheduler.ReasonCarbon},
		{3 * time.Hour, 0, 4, scheduler.ReasonObjective},
	} {
		j := flexJob("a", 2, tc.deadline)
		if tc.now > 0 {
			j.RemainingWork = 2 * 4 * 3600 / 1.25 // nothing done yet: the whole work is left
		}
		in := scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{j}, Now: t0.Add(tc.now), Carbon: ci}
		d := scheduleOnce(t, pol, in).Decisions[0]
		if d.To != tc.want || d.Reason != tc.reason {
			t.Errorf("deadline %v, now +%v: got %d devices (%v: %s), want %d (%v)", tc.deadline, tc.now, d.To, d.Reason, d.Message, tc.want, tc.reason)
		}
	}
}

// TestCarbonAwareDeadlineMet replays the plan hour by hour (the job does
// 4 device-hours per hour at full width) and checks the work is done by
// the deadline, in the clean hours.
func TestCarbonAwareDeadlineMet(t *testing.T) {
	ci := hourly(300, 280, 90, 100, 120, 300, 300, 300, 300, 300)
	cl := testCluster(group{1, 4, "t4"})
	pol := Policy{CarbonWeight: 1}
	left := 3 * 4 * 3600.0 // three full-width hours
	var ran []int
	var cur []placement.Assignment
	for h := 0; h < 7 && left > 1e-6; h++ {
		j := scheduler.Job{ID: "a", Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 4,
			RemainingWork: left * 0.8, Deadline: t0.Add(6 * time.Hour), DelayTolerant: true}
		p := scheduleOnce(t, pol, scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{j}, Now: t0.Add(time.Duration(h) * time.Hour), Carbon: ci, Current: cur})
		d := p.Decisions[0]
		if d.To > 0 {
			ran = append(ran, h)
			left -= float64(d.To) * 3600
		}
		cur = p.Assignments()
	}
	if left > 1e-6 {
		t.Fatalf("work left at the deadline: %v device-seconds (ran in hours %v)", left, ran)
	}
	if want := []int{2, 3, 4}; !equalInts(ran, want) {
		t.Errorf("ran in hours %v, want the three cleanest before the deadline %v", ran, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCarbonAwareInfeasible: work that cannot fit before the deadline runs
// at full goodput and the decision says why.
func TestCarbonAwareInfeasible(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"})
	for _, j := range []scheduler.Job{flexJob("late", 10, 3*time.Hour), flexJob("past", 1, 0)} {
		in := scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{j}, Now: t0.Add(time.Minute), Carbon: hourly(300, 100, 100, 100, 100)}
		d := scheduleOnce(t, Policy{CarbonWeight: 1}, in).Decisions[0]
		if d.To != 4 || d.Reason != scheduler.ReasonDeadline || !strings.Contains(d.Message, "deadline") {
			t.Errorf("%s: got %d devices, %v: %s; want 4, deadline", j.ID, d.To, d.Reason, d.Message)
		}
	}
}

// TestCarbonAwareNoDeadlineIsPollux: jobs without a deadline (or not
// delay-tolerant) get Pollux's plan; weight 0 gives Pollux's plans byte
// for byte on random instances with deadlines and a forecast.
func TestCarbonAwareNoDeadlineIsPollux(t *testing.T) {
	ci := hourly(300, 250, 100, 100, 300, 300, 300, 300)
	for seed := uint64(1); seed <= 4; seed++ {
		in := genInput(seed)
		in.Carbon = carbon.Series{Start: in.Now.Truncate(time.Hour), Step: time.Hour, Values: ci.Values, Unit: carbon.GPerKWh}
		want := marshalPlan(t, scheduleOnce(t, scheduler.Pollux{}, in))
		if got := marshalPlan(t, scheduleOnce(t, Policy{CarbonWeight: 1}, in)); got != want {
			t.Errorf("seed %d: no job has a deadline, yet the plan differs from Pollux's", seed)
		}
		for i := range in.Jobs {
			if i%2 == 0 {
				in.Jobs[i].Deadline, in.Jobs[i].DelayTolerant = in.Now.Add(5*time.Hour), true
				in.Jobs[i].RemainingWork = 3600
			}
		}
		if got := marshalPlan(t, scheduleOnce(t, Policy{}, in)); got != want {
			t.Errorf("seed %d: CarbonWeight 0 differs from Pollux", seed)
		}
		if marshalPlan(t, scheduleOnce(t, Policy{CarbonWeight: 1}, in)) == want {
			t.Errorf("seed %d: CarbonWeight 1 with deadlines changed nothing", seed)
		}
	}
}

func marshalPlan(t *testing.T, p scheduler.Plan) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCarbonAwareEnvelope: two flexible jobs and room for 4 t4 devices:
// the earlier deadline gets them, the other waits.
func TestCarbonAwareEnvelope(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"})
	a, b := flexJob("a", 1, 9*time.Hour), flexJob("b", 1, 8*time.Hour)
	plain := scheduler.Job{ID: "c", Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 2}
	in := scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{a, b, plain}, Now: t0, Envelope: map[accel.TypeKey]int{"t4": 4}}
	p := scheduleOnce(t, Policy{CarbonWeight: 1}, in)
	da, _ := p.Decision("a")
	db, _ := p.Decision("b")
	dc, _ := p.Decision("c")
	if da.To != 0 || da.Reason != scheduler.ReasonCarbon || db.To != 4 || dc.To != 2 {
		t.Errorf("a %d (%v: %s), b %d, c %d; want a 0 (carbon), b 4, c 2", da.To, da.Reason, da.Message, db.To, dc.To)
	}
}

// TestCarbonAwareInvalid: bad settings and input fail with scheduler.ErrInvalid
// naming the field.
func TestCarbonAwareInvalid(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"})
	for _, tc := range []struct {
		name  string
		pol   Policy
		in    scheduler.Input
		field string
	}{
		{"negative weight", Policy{CarbonWeight: -1}, scheduler.Input{Cluster: cl}, "CarbonWeight"},
		{"NaN weight", Policy{CarbonWeight: math.NaN()}, scheduler.Input{Cluster: cl}, "CarbonWeight"},
		{"weight above 1", Policy{CarbonWeight: 2}, scheduler.Input{Cluster: cl}, "CarbonWeight"},
		{"negative headroom", Policy{CarbonWeight: 1, Headroom: -0.1}, scheduler.Input{Cluster: cl}, "Headroom"},
		{"PUE below 1", Policy{CarbonWeight: 1, Power: energy.PowerModel{PUE: 0.5}}, scheduler.Input{Cluster: cl}, "PUE"},
		{"NaN watts", Policy{CarbonWeight: 1, Power: energy.PowerModel{Types: map[accel.TypeKey]energy.DevicePower{"t4": {ActiveWatts: math.NaN()}}}}, scheduler.Input{Cluster: cl}, "PowerModel.Types"},
		{"deadline before submission", Policy{CarbonWeight: 1},
			scheduler.Input{Cluster: cl, Now: t0, Jobs: []scheduler.Job{{ID: "a", Submitted: t0, Deadline: t0.Add(-time.Second)}}}, "Deadline"},
		{"NaN intensity", Policy{CarbonWeight: 1}, scheduler.Input{Cluster: cl, Carbon: hourly(100, math.NaN())}, "Input.Carbon"},
		{"negative envelope", Policy{CarbonWeight: 1}, scheduler.Input{Cluster: cl, Envelope: map[accel.TypeKey]int{"t4": -1}}, "Input.Envelope"},
	} {
		if tc.in.Jobs == nil {
			tc.in.Jobs = []scheduler.Job{{ID: "a", Submitted: t0}}
			tc.in.Now = t0
		}
		_, err := scheduler.New(scheduler.Config{Policy: tc.pol})
		if err == nil {
			var s *scheduler.Scheduler
			s, _ = scheduler.New(scheduler.Config{Policy: tc.pol})
			_, err = s.Schedule(context.Background(), tc.in)
		}
		if !errors.Is(err, scheduler.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want scheduler.ErrInvalid naming %s", tc.name, err, tc.field)
		}
	}
}

// TestCarbonAwareWeight: the same two hours of work as in
// TestCarbonAwareCleanestSlots, deadline 5 h away. Weight 1 waits for the
// clean hours 2 and 3; at weight 0.05 a slot's cost is 0.05 × CI + 0.95 ×
// 187.5 (the mean) × (h + 1)/24 = 22.4, 27.3, 27.3, 34.7 for hours 0–3, so
// delay dominates and the job runs now.
func TestCarbonAwareWeight(t *testing.T) {
	ci := hourly(300, 250, 100, 100, 300, 300, 300, 300)
	cl := testCluster(group{1, 4, "t4"})
	in := scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{flexJob("a", 2, 5*time.Hour)}, Now: t0, Carbon: ci}
	for _, tc := range []struct {
		w    float64
		want int
	}{{1, 0}, {0.05, 4}} {
		if d := scheduleOnce(t, Policy{CarbonWeight: tc.w}, in).Decisions[0]; d.To != tc.want {
			t.Errorf("weight %v: %d devices (%s), want %d", tc.w, d.To, d.Message, tc.want)
		}
	}
}

// FuzzCarbonAware: random delay-tolerant jobs, intensities and envelopes
// never make Policy fail other than with the package's sentinels,
// and the envelope holds for the jobs it binds.
func FuzzCarbonAware(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{30, 20, 10, 5}, uint8(4), 0.5)
	f.Add([]byte{0, 0, 0, 0}, []byte{}, uint8(0), 1.0)
	f.Add([]byte{9, 200, 3, 7, 7, 7, 7, 1, 2, 40, 41, 42}, []byte{255, 0, 255, 0, 1}, uint8(255), 0.01)
	f.Fuzz(func(t *testing.T, data, ci []byte, env uint8, w float64) {
		cl := testCluster(group{2, 4, "t4"})
		now := t0.Add(90 * time.Minute)
		in := scheduler.Input{Cluster: cl, Now: now}
		if len(ci) > 0 {
			in.Carbon = carbon.Series{Start: t0, Step: time.Hour, Unit: carbon.GPerKWh}
			for _, v := range ci {
				in.Carbon.Values = append(in.Carbon.Values, float64(v))
			}
		}
		if env%3 != 0 {
			in.Envelope = map[accel.TypeKey]int{"t4": int(env % 9)}
		}
		for k := 0; k+3 < len(data) && len(in.Jobs) < 10; k += 4 {
			in.Jobs = append(in.Jobs, scheduler.Job{ID: fmt.Sprintf("j%d", k), Submitted: t0, Kind: scheduler.Elastic,
				MinReplicas: int(data[k] % 3), MaxReplicas: int(data[k]%3) + int(data[k+1]%6),
				Deadline: t0.Add(time.Duration(data[k+2]) * 10 * time.Minute), DelayTolerant: data[k+3]%2 == 0,
				RemainingWork: float64(data[k+3]) * 60, Speedup: fakeSpeedup{alpha: 0.2, node: 0.9}})
		}
		s, err := scheduler.New(scheduler.Config{Policy: Policy{CarbonWeight: w}})
		if err != nil {
			if !errors.Is(err, scheduler.ErrInvalid) {
				t.Fatalf("New: %v", err)
			}
			return
		}
		p, err := s.Schedule(context.Background(), in)
		if err != nil {
			if !errors.Is(err, scheduler.ErrInvalid) && !errors.Is(err, scheduler.ErrUnknownType) && !errors.Is(err, scheduler.ErrBadSpeedup) {
				t.Fatalf("Schedule: %v", err)
			}
			return
		}
		used, bound := 0, 0
		for _, d := range p.Decisions {
			used += d.To
			j := in.Jobs[slicesIndexJob(in.Jobs, d.Job)]
			if in.Envelope != nil && j.DelayTolerant && j.Deadline.After(now) && d.Reason != scheduler.ReasonDeadline {
				bound += d.To
			}
		}
		if used > 8 {
			t.Fatalf("%d devices used of 8", used)
		}
		if w > 0 && in.Envelope != nil && bound > in.Envelope["t4"] { // weight 0 is Pollux: no envelope
			t.Fatalf("flexible jobs hold %d devices, the envelope allows %d", bound, in.Envelope["t4"])
		}
	})
}

func slicesIndexJob(js []scheduler.Job, id string) int {
	for i := range js {
		if js[i].ID == id {
			return i
		}
	}
	return -1
}

// TestCarbonAwareMargin: the cleanest hour (10 g/kWh) is the last before
// a deadline 20 h after submission. The default margin, a tenth of the
// window (2 h), keeps the plan out of it, so the job runs now at 50
// g/kWh instead of betting the deadline on the last hours (a margin of
// one step put every job of a flat grid such as Norway's there, and some
// missed their deadlines).
func TestCarbonAwareMargin(t *testing.T) {
	v := make([]float64, 24)
	for h := range v {
		v[h] = 100
	}
	v[0], v[18] = 50, 10
	cl := testCluster(group{1, 4, "t4"})
	in := scheduler.Input{Cluster: cl, Jobs: []scheduler.Job{flexJob("a", 1, 20*time.Hour)}, Now: t0, Carbon: hourly(v...)}
	if d := scheduleOnce(t, Policy{CarbonWeight: 1}, in).Decisions[0]; d.To != 4 {
		t.Errorf("default margin: %d devices (%s), want 4 now", d.To, d.Message)
	}
	if d := scheduleOnce(t, Policy{CarbonWeight: 1, DeadlineMargin: time.Hour}, in).Decisions[0]; d.To != 0 {
		t.Errorf("1 h margin: %d devices (%s), want 0 (it waits for hour 18)", d.To, d.Message)
	}
}

// TestCarbonAwareKeepsQueues: queue a's delay-tolerant jobs wait for the
// clean hours, so the view Pollux searches lacks them; queue b's jobs must
// still be bound, inside the search, by b's own entitlement (nominal 2, no
// borrowing), not by the queue of whichever job sat at their position
// before.
func TestCarbonAwareKeepsQueues(t *testing.T) {
	cl := testCluster(group{2, 4, "t4"})
	queues := []quota.Queue{
		{Name: "a", Quotas: []quota.Quota{{Type: "t4", Nominal: 6}}},
		{Name: "b", Quotas: []quota.Quota{{Type: "t4", Nominal: 2, BorrowingLimit: ip(0)}}},
	}
	var jobs []scheduler.Job
	for _, id := range []string{"a1", "a2", "a3"} {
		j := flexJob(id, 1, 8*time.Hour)
		j.Queue = "a"
		jobs = append(jobs, j)
	}
	for _, id := range []string{"b1", "b2"} {
		jobs = append(jobs, scheduler.Job{ID: id, Queue: "b", Submitted: t0, Kind: scheduler.Elastic, MinReplicas: 1, MaxReplicas: 4})
	}
	in := scheduler.Input{Cluster: cl, Jobs: jobs, Queues: queues, Now: t0, Carbon: hourly(400, 400, 100, 100, 100, 400, 400, 400, 400, 400)}
	plan := scheduleOnce(t, Policy{CarbonWeight: 1}, in)
	used := map[string]int{}
	for _, d := range plan.Decisions {
		used[d.Job[:1]] += d.To
		if d.Job[0] == 'a' && d.To != 0 {
			t.Errorf("%s runs on %d devices in a dirty hour: %s", d.Job, d.To, d.Message)
		}
		// Pollux's search itself keeps b within its cap: had it read b's
		// jobs as a's, the scheduler.Scheduler would have had to trim them (quota).
		if d.Job[0] == 'b' && d.Reason != scheduler.ReasonObjective {
			t.Errorf("%s: %v (%s), want the objective's decision within b's cap", d.Job, d.Reason, d.Message)
		}
	}
	if used["b"] > 2 || used["b"] == 0 {
		t.Fatalf("queue b holds %d devices, want 1..2 (nominal 2, no borrowing): %+v", used["b"], plan.Decisions)
	}
	for _, u := range plan.Queues {
		if u.Used > u.Entitled {
			t.Errorf("queue %s uses %d > entitled %d", u.Queue, u.Used, u.Entitled)
		}
	}
}

// TestCarbonAwareJoint: two jobs of one hour of full-width work each on
// one node of 4 T4, intensities 200, 100, then 500. Planned each alone,
// both count on the clean hour at 4 devices and wait now; planned
// jointly, the clean hour is over-booked twice, each gets half of it and
// runs its other half now (200 g/kWh) on 2 devices.
func TestCarbonAwareJoint(t *testing.T) {
	ci := hourly(200, 100, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
	in := scheduler.Input{Cluster: testCluster(group{1, 4, "t4"}), Now: t0, Carbon: ci,
		Jobs: []scheduler.Job{flexJob("a", 0.999, 12*time.Hour), flexJob("b", 0.999, 12*time.Hour)}}
	for _, tc := range []struct {
		joint bool
		want  int
	}{{false, 0}, {true, 2}} {
		ds := scheduleOnce(t, Policy{CarbonWeight: 1, Joint: tc.joint}, in).Decisions
		if len(ds) != 2 {
			t.Errorf("joint %v: %d decisions, want one per job", tc.joint, len(ds))
		}
		for _, d := range ds {
			if d.To != tc.want || d.Reason != scheduler.ReasonCarbon {
				t.Errorf("joint %v: %s gets %d devices (%v: %s), want %d for carbon", tc.joint, d.Job, d.To, d.Reason, d.Message, tc.want)
			}
		}
	}
}
