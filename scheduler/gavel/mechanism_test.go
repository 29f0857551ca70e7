package gavel

import (
	"errors"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

func TestPolicyRoundLength(t *testing.T) {
	pol, err := NewPolicy(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var rl scheduler.RoundLength = pol
	if got := rl.RoundLength(); got != 360*time.Second {
		t.Errorf("default round %v, want Gavel's 360 s", got)
	}
	pol, _ = NewPolicy(Config{RoundLength: time.Minute})
	if got := pol.RoundLength(); got != time.Minute {
		t.Errorf("round %v, want 1m", got)
	}
	if _, err := NewPolicy(Config{RoundLength: -time.Second}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative RoundLength: %v", err)
	}
}

// TestResetDueSticks follows Gavel's reset rule: once the job set has
// changed, the time counters reset at the first round at least
// ResetInterval after the previous reset, even when nothing changes in
// that round (before, a change had to fall in that very round, so a
// cluster whose arrivals came early never reset again).
func TestResetDueSticks(t *testing.T) {
	c := mustCluster(t, "1x2:v100")
	rates := map[string]map[accel.TypeKey]float64{"a": {"v100-16gb": 1}, "b": {"v100-16gb": 1}, "c": {"v100-16gb": 1}}
	pol, err := NewPolicy(Config{Throughput: tableFunc(rates)})
	if err != nil {
		t.Fatal(err)
	}
	var cur []placement.Assignment
	for r := range 8 {
		now := t0.Add(time.Duration(r) * 6 * time.Minute)
		jobs := []scheduler.Job{{ID: "a"}, {ID: "b"}}
		if r >= 1 {
			jobs = append(jobs, scheduler.Job{ID: "c"}) // arrives in round 1, 6 min after the first reset
		}
		tg, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		res, _ := packTargets(c, cur, tg)
		cur = res.Assignments
		// Rounds at 0, 6, …, 42 min: the first reset at 0, the next due at
		// the first round ≥ 32 min, 36 min.
		want := t0
		if r >= 6 {
			want = t0.Add(36 * time.Minute)
		}
		if got := pol.st.lastReset; !got.Equal(want) {
			t.Errorf("round %d (%v): last reset at %v, want %v", r, now.Sub(t0), got.Sub(t0), want.Sub(t0))
		}
	}
}

// TestPolicyIsolatedTime checks Gavel's finish-time bookkeeping in the
// Policy: a job's isolated time starts at 0 and grows by the steps it did
// over its isolated throughput of the previous round.
func TestPolicyIsolatedTime(t *testing.T) {
	c := mustCluster(t, "1x2:v100")
	rates := map[string]map[accel.TypeKey]float64{"a": {"v100-16gb": 2}, "b": {"v100-16gb": 2}}
	left := map[string]float64{"a": 1000, "b": 1000}
	pol, err := NewPolicy(Config{Objective: FinishTimeFairness{}, Throughput: tableFunc(rates),
		StepsLeft: func(j *scheduler.Job, best float64) float64 { return left[j.ID] }})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []scheduler.Job{{ID: "a", Submitted: t0}, {ID: "b", Submitted: t0}}
	if _, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if got := pol.st.iso["a"].elapsed; got != 0 {
		t.Errorf("new job's isolated time %v, want 0", got)
	}
	// Isolated share: 2 devices / 2 jobs = 1 device each, rate 2 steps/s;
	// 100 steps done → 50 s of isolated time.
	left["a"] = 900
	if _, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Now: t0.Add(6 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got := pol.st.iso["a"].elapsed; got != 50*time.Second {
		t.Errorf("isolated time %v, want 50s", got)
	}
}
