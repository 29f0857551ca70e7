package scheduler

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
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// hourly returns an hourly g/kWh series from t0.
func hourly(v ...float64) carbon.Series {
	return carbon.Series{Start: t0, Step: time.Hour, Values: v, Unit: carbon.GPerKWh}
}

// flexJob is an elastic, delay-tolerant job on up to 4 devices with a
// linear speedup, whose planned work (RemainingWork × 1.25, the default
// headroom) is hours × 4 devices × 3600 s.
func flexJob(id string, hours float64, deadline time.Duration) Job {
	return Job{ID: id, Submitted: t0, Kind: Elastic, MinReplicas: 1, MaxReplicas: 4,
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
	pol := CarbonAware{CarbonWeight: 1}
	for _, tc := range []struct {
		deadline time.Duration
		now      time.Duration
		want     int
		reason   Reason
	}{
		{5 * time.Hour, 0, 0, ReasonCarbon},
		{5 * time.Hour, 2 * time.Hour, 4, ReasonObjective},
		{4 * time.Hour, 0, 0, ReasonCarbon},
		{3 * time.Hour, 0, 4, ReasonObjective},
	} {
		j := flexJob("a", 2, tc.deadline)
		if tc.now > 0 {
			j.RemainingWork = 2 * 4 * 3600 / 1.25 // nothing done yet: the whole work is left
		}
		in := Input{Cluster: cl, Jobs: []Job{j}, Now: t0.Add(tc.now), Carbon: ci}
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
	pol := CarbonAware{CarbonWeight: 1}
	left := 3 * 4 * 3600.0 // three full-width hours
	var ran []int
	var cur []placement.Assignment
	for h := 0; h < 7 && left > 1e-6; h++ {
		j := Job{ID: "a", Submitted: t0, Kind: Elastic, MinReplicas: 1, MaxReplicas: 4,
			RemainingWork: left * 0.8, Deadline: t0.Add(6 * time.Hour), DelayTolerant: true}
		p := scheduleOnce(t, pol, Input{Cluster: cl, Jobs: []Job{j}, Now: t0.Add(time.Duration(h) * time.Hour), Carbon: ci, Current: cur})
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
	for _, j := range []Job{flexJob("late", 10, 3*time.Hour), flexJob("past", 1, 0)} {
		in := Input{Cluster: cl, Jobs: []Job{j}, Now: t0.Add(time.Minute), Carbon: hourly(300, 100, 100, 100, 100)}
		d := scheduleOnce(t, CarbonAware{CarbonWeight: 1}, in).Decisions[0]
		if d.To != 4 || d.Reason != ReasonDeadline || !strings.Contains(d.Message, "deadline") {
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
		in := genInput(seed, shape160x64)
		in.Carbon = carbon.Series{Start: in.Now.Truncate(time.Hour), Step: time.Hour, Values: ci.Values, Unit: carbon.GPerKWh}
		want := marshalPlan(t, scheduleOnce(t, Pollux{}, in))
		if got := marshalPlan(t, scheduleOnce(t, CarbonAware{CarbonWeight: 1}, in)); got != want {
			t.Errorf("seed %d: no job has a deadline, yet the plan differs from Pollux's", seed)
		}
		for i := range in.Jobs {
			if i%2 == 0 {
				in.Jobs[i].Deadline, in.Jobs[i].DelayTolerant = in.Now.Add(5*time.Hour), true
				in.Jobs[i].RemainingWork = 3600
			}
		}
		if got := marshalPlan(t, scheduleOnce(t, CarbonAware{}, in)); got != want {
			t.Errorf("seed %d: CarbonWeight 0 differs from Pollux", seed)
		}
		if marshalPlan(t, scheduleOnce(t, CarbonAware{CarbonWeight: 1}, in)) == want {
			t.Errorf("seed %d: CarbonWeight 1 with deadlines changed nothing", seed)
		}
	}
}

func marshalPlan(t *testing.T, p Plan) string {
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
	plain := Job{ID: "c", Submitted: t0, Kind: Elastic, MinReplicas: 1, MaxReplicas: 2}
	in := Input{Cluster: cl, Jobs: []Job{a, b, plain}, Now: t0, Envelope: map[accel.TypeKey]int{"t4": 4}}
	p := scheduleOnce(t, CarbonAware{CarbonWeight: 1}, in)
	da, _ := p.Decision("a")
	db, _ := p.Decision("b")
	dc, _ := p.Decision("c")
	if da.To != 0 || da.Reason != ReasonCarbon || db.To != 4 || dc.To != 2 {
		t.Errorf("a %d (%v: %s), b %d, c %d; want a 0 (carbon), b 4, c 2", da.To, da.Reason, da.Message, db.To, dc.To)
	}
}

// TestCarbonAwareInvalid: bad settings and input fail with ErrInvalid
// naming the field.
func TestCarbonAwareInvalid(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"})
	for _, tc := range []struct {
		name  string
		pol   CarbonAware
		in    Input
		field string
	}{
		{"negative weight", CarbonAware{CarbonWeight: -1}, Input{Cluster: cl}, "CarbonWeight"},
		{"NaN weight", CarbonAware{CarbonWeight: math.NaN()}, Input{Cluster: cl}, "CarbonWeight"},
		{"weight above 1", CarbonAware{CarbonWeight: 2}, Input{Cluster: cl}, "CarbonWeight"},
		{"negative headroom", CarbonAware{CarbonWeight: 1, Headroom: -0.1}, Input{Cluster: cl}, "Headroom"},
		{"PUE below 1", CarbonAware{CarbonWeight: 1, PUE: 0.5}, Input{Cluster: cl}, "PUE"},
		{"NaN watts", CarbonAware{CarbonWeight: 1, Power: PowerModel{Types: map[accel.TypeKey]DevicePower{"t4": {ActiveWatts: math.NaN()}}}}, Input{Cluster: cl}, "PowerModel.Types"},
		{"deadline before submission", CarbonAware{CarbonWeight: 1},
			Input{Cluster: cl, Now: t0, Jobs: []Job{{ID: "a", Submitted: t0, Deadline: t0.Add(-time.Second)}}}, "Deadline"},
		{"NaN intensity", CarbonAware{CarbonWeight: 1}, Input{Cluster: cl, Carbon: hourly(100, math.NaN())}, "Input.Carbon"},
		{"negative envelope", CarbonAware{CarbonWeight: 1}, Input{Cluster: cl, Envelope: map[accel.TypeKey]int{"t4": -1}}, "Input.Envelope"},
	} {
		if tc.in.Jobs == nil {
			tc.in.Jobs = []Job{{ID: "a", Submitted: t0}}
			tc.in.Now = t0
		}
		_, err := New(Config{Policy: tc.pol})
		if err == nil {
			var s *Scheduler
			s, _ = New(Config{Policy: tc.pol})
			_, err = s.Schedule(context.Background(), tc.in)
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want ErrInvalid naming %s", tc.name, err, tc.field)
		}
	}
}

// TestAccount: 2 of 4 T4 busy for one hour, half at 100 and half at
// 200 g/kWh, PUE 1.5. Busy: 2 × 70 W × 3600 s = 504 kJ = 0.14 kWh; idle:
// 2 × 10.5 W × 3600 s = 75.6 kJ. Facility kWh (0.14 + 0.021) × 1.5 =
// 0.2415; busy carbon 0.21 kWh × (100 + 200)/2 = 31.5 g, idle 4.725 g.
func TestAccount(t *testing.T) {
	cl := testCluster(group{1, 4, "t4"})
	busy := []placement.Assignment{{Job: "a", Devices: []string{"t4-0-000/0", "t4-0-000/1"}}}
	ci := carbon.Series{Start: t0, Step: 30 * time.Minute, Values: []float64{100, 200, 999}, Unit: carbon.GPerKWh}
	e, err := PowerModel{}.Account(cl, busy, t0, time.Hour, ci, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if !near(e.BusyJoules, 504000) || !near(e.IdleJoules, 75600) || !near(e.KWh, 0.2415) ||
		!near(e.BusyG, 31.5) || !near(e.IdleG, 4.725) || !near(e.CarbonG, 36.225) {
		t.Errorf("got %+v", e)
	}
	// Two half-hour rounds sum to the hour.
	h1, _ := PowerModel{}.Account(cl, busy, t0, 30*time.Minute, ci, 1.5)
	h2, _ := PowerModel{}.Account(cl, busy, t0.Add(30*time.Minute), 30*time.Minute, ci, 1.5)
	if s := h1.Add(h2); !near(s.CarbonG, e.CarbonG) || !near(s.KWh, e.KWh) {
		t.Errorf("halves sum to %+v, the hour is %+v", s, e)
	}
	// Measured readings replace the model for busy devices.
	cl.Nodes[0].Devices[0].PowerWatts = 50
	m, err := PowerModel{Measured: true, Types: map[accel.TypeKey]DevicePower{"t4": {ActiveWatts: 70, IdleWatts: 10}}}.Account(cl, busy, t0, time.Hour, carbon.Series{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(m.BusyJoules, 120*3600) || !near(m.IdleJoules, 20*3600) || m.CarbonG != 0 {
		t.Errorf("measured: got %+v", m)
	}
	if _, err := (PowerModel{}).Account(cl, busy, t0, 2*time.Hour, hourly(1), 1); err == nil {
		t.Error("an intensity series that does not cover the hour was accepted")
	}
	if _, err := (PowerModel{}).Power("no-such-gpu"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if p, err := (PowerModel{}).Power("a100"); err != nil || p.ActiveWatts != 400 {
		t.Errorf("alias a100: %+v, %v", p, err)
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
	in := Input{Cluster: cl, Jobs: []Job{flexJob("a", 2, 5*time.Hour)}, Now: t0, Carbon: ci}
	for _, tc := range []struct {
		w    float64
		want int
	}{{1, 0}, {0.05, 4}} {
		if d := scheduleOnce(t, CarbonAware{CarbonWeight: tc.w}, in).Decisions[0]; d.To != tc.want {
			t.Errorf("weight %v: %d devices (%s), want %d", tc.w, d.To, d.Message, tc.want)
		}
	}
}

// FuzzCarbonAware: random delay-tolerant jobs, intensities and envelopes
// never make CarbonAware fail other than with the package's sentinels,
// and the envelope holds for the jobs it binds.
func FuzzCarbonAware(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{30, 20, 10, 5}, uint8(4), 0.5)
	f.Add([]byte{0, 0, 0, 0}, []byte{}, uint8(0), 1.0)
	f.Add([]byte{9, 200, 3, 7, 7, 7, 7, 1, 2, 40, 41, 42}, []byte{255, 0, 255, 0, 1}, uint8(255), 0.01)
	f.Fuzz(func(t *testing.T, data, ci []byte, env uint8, w float64) {
		cl := testCluster(group{2, 4, "t4"})
		now := t0.Add(90 * time.Minute)
		in := Input{Cluster: cl, Now: now}
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
			in.Jobs = append(in.Jobs, Job{ID: fmt.Sprintf("j%d", k), Submitted: t0, Kind: Elastic,
				MinReplicas: int(data[k] % 3), MaxReplicas: int(data[k]%3) + int(data[k+1]%6),
				Deadline: t0.Add(time.Duration(data[k+2]) * 10 * time.Minute), DelayTolerant: data[k+3]%2 == 0,
				RemainingWork: float64(data[k+3]) * 60, Speedup: fakeSpeedup{alpha: 0.2, node: 0.9}})
		}
		s, err := New(Config{Policy: CarbonAware{CarbonWeight: w}})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("New: %v", err)
			}
			return
		}
		p, err := s.Schedule(context.Background(), in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrBadSpeedup) {
				t.Fatalf("Schedule: %v", err)
			}
			return
		}
		used, bound := 0, 0
		for _, d := range p.Decisions {
			used += d.To
			j := in.Jobs[slicesIndexJob(in.Jobs, d.Job)]
			if in.Envelope != nil && j.DelayTolerant && j.Deadline.After(now) && d.Reason != ReasonDeadline {
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

func slicesIndexJob(js []Job, id string) int {
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
	in := Input{Cluster: cl, Jobs: []Job{flexJob("a", 1, 20*time.Hour)}, Now: t0, Carbon: hourly(v...)}
	if d := scheduleOnce(t, CarbonAware{CarbonWeight: 1}, in).Decisions[0]; d.To != 4 {
		t.Errorf("default margin: %d devices (%s), want 4 now", d.To, d.Message)
	}
	if d := scheduleOnce(t, CarbonAware{CarbonWeight: 1, DeadlineMargin: time.Hour}, in).Decisions[0]; d.To != 0 {
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
	var jobs []Job
	for _, id := range []string{"a1", "a2", "a3"} {
		j := flexJob(id, 1, 8*time.Hour)
		j.Queue = "a"
		jobs = append(jobs, j)
	}
	for _, id := range []string{"b1", "b2"} {
		jobs = append(jobs, Job{ID: id, Queue: "b", Submitted: t0, Kind: Elastic, MinReplicas: 1, MaxReplicas: 4})
	}
	in := Input{Cluster: cl, Jobs: jobs, Queues: queues, Now: t0, Carbon: hourly(400, 400, 100, 100, 100, 400, 400, 400, 400, 400)}
	plan := scheduleOnce(t, CarbonAware{CarbonWeight: 1}, in)
	used := map[string]int{}
	for _, d := range plan.Decisions {
		used[d.Job[:1]] += d.To
		if d.Job[0] == 'a' && d.To != 0 {
			t.Errorf("%s runs on %d devices in a dirty hour: %s", d.Job, d.To, d.Message)
		}
		// Pollux's search itself keeps b within its cap: had it read b's
		// jobs as a's, the Scheduler would have had to trim them (quota).
		if d.Job[0] == 'b' && d.Reason != ReasonObjective {
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
