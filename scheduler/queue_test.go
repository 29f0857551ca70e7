package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler/quota"
)

func ip(v int) *int { return &v }

// TestQueueValidation: every malformed tree or job queue fails with
// ErrInvalid naming the bad queue (or job).
func TestQueueValidation(t *testing.T) {
	q := func(name, parent string, quotas ...quota.Quota) quota.Queue {
		return quota.Queue{Name: name, Parent: parent, Quotas: quotas}
	}
	a100 := func(n int) quota.Quota { return quota.Quota{Type: "a100", Nominal: n} }
	for _, tc := range []struct {
		name   string
		queues []quota.Queue
		jobQ   string
		want   string // "" = valid
	}{
		{"flat", []quota.Queue{q("a", "", a100(4)), q("b", "", a100(4))}, "a", ""},
		{"nested", []quota.Queue{q("org", "", a100(8)), q("a", "org", a100(4)), q("b", "org", a100(4))}, "b", ""},
		{"cohort-unlisted", []quota.Queue{q("org", ""), q("a", "org", a100(4))}, "a", ""},
		{"empty-name", []quota.Queue{q("", "")}, "a", "empty name"},
		{"duplicate", []quota.Queue{q("a", ""), q("a", "")}, "a", `queue "a": duplicate`},
		{"unknown-parent", []quota.Queue{q("a", "zz")}, "a", `queue "a": unknown parent "zz"`},
		{"cycle", []quota.Queue{q("a", "b"), q("b", "a"), q("c", "")}, "c", "cycle"},
		{"self-cycle", []quota.Queue{q("a", "a")}, "a", "cycle"},
		{"neg-nominal", []quota.Queue{q("a", "", a100(-1))}, "a", `queue "a": a100: negative nominal`},
		{"neg-borrow", []quota.Queue{q("a", "", quota.Quota{Type: "a100", BorrowingLimit: ip(-2)})}, "a", "negative borrowing"},
		{"neg-lend", []quota.Queue{q("a", "", quota.Quota{Type: "a100", LendingLimit: ip(-2)})}, "a", "negative lending"},
		{"dup-type", []quota.Queue{q("a", "", a100(1), a100(2))}, "a", "two quotas for type a100"},
		{"empty-type", []quota.Queue{q("a", "", quota.Quota{Nominal: 1})}, "a", "empty type"},
		{"children-exceed", []quota.Queue{q("org", "", a100(6)), q("a", "org", a100(4)), q("b", "org", a100(4))}, "a", `queue "org": a100: its children's nominal quotas sum to 8`},
		{"unknown-queue", []quota.Queue{q("a", "")}, "nope", `unknown queue "nope"`},
		{"inner-queue", []quota.Queue{q("org", ""), q("a", "org")}, "org", "is a cohort"},
		{"no-queue", []quota.Queue{q("a", "")}, "", "no queue"},
		{"nan-weight", []quota.Queue{{Name: "a", Weight: math.NaN()}}, "a", `queue "a": weight NaN`},
		{"neg-weight", []quota.Queue{{Name: "a", Weight: -1}}, "a", `queue "a": weight -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := checkQueues(tc.queues, []Job{{ID: "j", Queue: tc.jobQ}})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
	// A queue named without Input.Queues is an error too.
	if _, _, err := checkQueues(nil, []Job{{ID: "j", Queue: "a"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("job with a queue and no Input.Queues: err = %v", err)
	}
}

// entitlements returns, for a cluster of 16 a100 (2 nodes × 8), the
// entitlement per queue that the round computes.
func entitlements(t *testing.T, queues []quota.Queue, jobs []Job, current []placement.Assignment) map[string]int {
	t.Helper()
	r, err := NewRound(Input{Cluster: testCluster(group{2, 8, "a100"}), Jobs: jobs, Current: current, Queues: queues, Now: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for i, q := range queues {
		out[q.Name] = r.Entitlements().Entitled(i, 0)
		_, leaf, _ := r.Entitlements().Tree().Find(q.Name)
		if e, ok := r.Entitlement(q.Name, "a100"); ok != leaf || (ok && e != out[q.Name]) {
			t.Fatalf("Round.Entitlement(%s) = %d, %v; entitlement %d", q.Name, e, ok, out[q.Name])
		}
	}
	if _, ok := r.Entitlement(queues[0].Name, "t4"); ok {
		t.Fatal("Round.Entitlement of a type the cluster lacks")
	}
	return out
}

// demandJob is an elastic job of queue q wanting up to n devices.
func demandJob(id, q string, n int) Job {
	return Job{ID: id, Queue: q, Kind: Elastic, MinReplicas: 1, MaxReplicas: n, Submitted: t0}
}

// TestEntitlements checks hand-computed entitlements on 16 a100: a
// cohort of two or three queues, borrowing and lending limits, weights
// (the leftover is shared by Weight × jobs with demand), nesting, pinned
// jobs and guarantees the cluster cannot cover.
func TestEntitlements(t *testing.T) {
	mkq := func(name, parent string, w float64, nominal int, bl, ll *int) quota.Queue {
		return quota.Queue{Name: name, Parent: parent, Weight: w, Quotas: []quota.Quota{{Type: "a100", Nominal: nominal, BorrowingLimit: bl, LendingLimit: ll}}}
	}
	pinnedDevs := []string{"a100-0-000/0", "a100-0-000/1", "a100-0-000/2", "a100-0-000/3", "a100-0-000/4", "a100-0-000/5",
		"a100-0-000/6", "a100-0-000/7", "a100-0-001/0", "a100-0-001/1", "a100-0-001/2", "a100-0-001/3"}
	pinned := Job{ID: "pin", Queue: "b", Kind: Rigid, Requested: 12, NonPreemptible: true, Submitted: t0}
	for _, tc := range []struct {
		name    string
		queues  []quota.Queue
		jobs    []Job
		current []placement.Assignment
		want    map[string]int
	}{
		{"both-want-all", []quota.Queue{mkq("a", "", 0, 8, nil, nil), mkq("b", "", 0, 8, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 16)}, nil, map[string]int{"a": 8, "b": 8}},
		{"borrow-unused", []quota.Queue{mkq("a", "", 0, 8, nil, nil), mkq("b", "", 0, 8, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 2)}, nil, map[string]int{"a": 14, "b": 2}},
		{"borrowing-limit", []quota.Queue{mkq("a", "", 0, 8, ip(2), nil), mkq("b", "", 0, 8, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 2)}, nil, map[string]int{"a": 10, "b": 2}},
		{"lending-limit", []quota.Queue{mkq("a", "", 0, 8, nil, nil), mkq("b", "", 0, 8, nil, ip(4))},
			[]Job{demandJob("a1", "a", 16)}, nil, map[string]int{"a": 12, "b": 4}},
		{"weights", []quota.Queue{mkq("a", "", 1, 0, nil, nil), mkq("b", "", 3, 0, nil, nil), mkq("c", "", 1, 4, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 16), demandJob("c1", "c", 4)}, nil, map[string]int{"a": 3, "b": 9, "c": 4}},
		{"per-job-share", []quota.Queue{mkq("a", "", 0, 0, nil, nil), mkq("b", "", 0, 0, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 16), demandJob("b2", "b", 16), demandJob("b3", "b", 16)}, nil, map[string]int{"a": 4, "b": 12}},
		{"nested", []quota.Queue{{Name: "org"}, mkq("a", "org", 0, 4, nil, nil), mkq("b", "org", 0, 4, nil, nil), mkq("c", "", 0, 8, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("c1", "c", 16)}, nil, map[string]int{"org": 8, "a": 8, "b": 0, "c": 8}},
		{"cohort-cannot-borrow", []quota.Queue{mkq("org", "", 0, 8, ip(0), nil), mkq("a", "org", 0, 4, nil, nil), mkq("b", "org", 0, 4, nil, nil), mkq("c", "", 0, 4, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 16), demandJob("c1", "c", 16)}, nil, map[string]int{"org": 8, "a": 4, "b": 4, "c": 8}},
		{"pinned-beyond-nominal", []quota.Queue{mkq("a", "", 0, 8, nil, nil), mkq("b", "", 0, 8, nil, nil)},
			[]Job{demandJob("a1", "a", 16), pinned}, []placement.Assignment{{Job: "pin", Devices: pinnedDevs}}, map[string]int{"a": 4, "b": 12}},
		{"roots-exceed-cluster", []quota.Queue{mkq("a", "", 0, 12, nil, nil), mkq("b", "", 0, 12, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 16)}, nil, map[string]int{"a": 8, "b": 8}},
		{"huge-limits", []quota.Queue{mkq("a", "", 0, 8, ip(math.MaxInt), ip(math.MaxInt)), mkq("b", "", 0, math.MaxInt-1, nil, nil)},
			[]Job{demandJob("a1", "a", 16), demandJob("b1", "b", 2)}, nil, map[string]int{"a": 14, "b": 2}},
		{"no-demand", []quota.Queue{mkq("a", "", 0, 8, nil, nil), mkq("b", "", 0, 8, nil, nil)},
			[]Job{demandJob("a1", "a", 3)}, nil, map[string]int{"a": 3, "b": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := entitlements(t, tc.queues, tc.jobs, tc.current)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("entitlements %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReclaimWithinOneRound: nlp borrows all 16 a100 while vision is
// idle; when vision's demand returns, the next plan shrinks nlp's elastic
// job to its nominal 8 with ReasonReclaimed naming vision, starts
// vision's job on the freed devices, and reports both queues.
func TestReclaimWithinOneRound(t *testing.T) {
	queues := []quota.Queue{
		{Name: "nlp", Quotas: []quota.Quota{{Type: "a100", Nominal: 8}}},
		{Name: "vision", Quotas: []quota.Quota{{Type: "a100", Nominal: 8}}},
	}
	in := Input{Cluster: testCluster(group{2, 8, "a100"}), Queues: queues, Now: t0.Add(time.Hour),
		Jobs: []Job{{ID: "n1", Queue: "nlp", Kind: Elastic, MinReplicas: 1, MaxReplicas: 16, Submitted: t0}}}
	s, _ := New(Config{})
	p1, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := p1.Decision("n1"); d.To != 16 {
		t.Fatalf("round 1: n1 %+v, want all 16 (borrowing vision's unused 8)", d)
	}
	if u := usage(p1, "nlp", "a100"); u.Borrowed != 8 || u.Used != 16 || u.Guaranteed != 8 {
		t.Fatalf("round 1: nlp %+v", u)
	}
	if u := usage(p1, "vision", "a100"); u.Lent != 8 {
		t.Fatalf("round 1: vision %+v, want 8 lent", u)
	}
	in.Current = p1.Assignments()
	in.Now = in.Now.Add(time.Minute)
	in.Jobs = append(in.Jobs, Job{ID: "v1", Queue: "vision", Kind: Elastic, MinReplicas: 1, MaxReplicas: 8, Submitted: in.Now})
	p2, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := p2.Decision("n1")
	v1, _ := p2.Decision("v1")
	if n1.To != 8 || n1.Action != placement.Shrink || n1.Reason != ReasonReclaimed || !strings.Contains(n1.Message, "reclaimed by queue vision") ||
		!strings.Contains(n1.Message, "borrowed beyond its nominal 8") {
		t.Fatalf("round 2: n1 %+v", n1)
	}
	if v1.To != 8 {
		t.Fatalf("round 2: v1 %+v, want its guarantee of 8", v1)
	}
	if u := usage(p2, "vision", "a100"); u.Used != 8 || u.Pending != 0 || u.Entitled != 8 {
		t.Fatalf("round 2: vision %+v", u)
	}
	t.Log(n1.Message)
}

func usage(p Plan, q string, typ accel.TypeKey) quota.Usage {
	for _, u := range p.Queues {
		if u.Queue == q && u.Type == typ {
			return u
		}
	}
	return quota.Usage{}
}

// TestQueuesOff: without Input.Queues a plan has no queue report and its
// JSON has no "queues" key; one catch-all queue without quotas changes
// no decision (its entitlement is the whole demand), for every policy.
func TestQueuesOff(t *testing.T) {
	in := genInput(3, shape160x64)
	for _, pol := range []Policy{Pollux{}, fifo, tiresiasAt(0), optimus} {
		s, _ := New(Config{Policy: pol})
		plain, err := s.Schedule(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Queues != nil {
			t.Fatalf("%T: queue report without queues", pol)
		}
		b, _ := json.Marshal(plain)
		if strings.Contains(string(b), `"queues"`) {
			t.Fatalf("%T: JSON has a queues key without queues", pol)
		}
		one := in
		one.Queues = []quota.Queue{{Name: "all"}}
		one.Jobs = slices.Clone(in.Jobs)
		for i := range one.Jobs {
			one.Jobs[i].Queue = "all"
		}
		q, err := s.Schedule(context.Background(), one)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range q.Decisions {
			// The same decision; the message may add which quota it runs on.
			was := plain.Decisions[i]
			msg, wasMsg := d.Message, was.Message
			d.Message, was.Message = "", ""
			if !reflect.DeepEqual(d, was) || !strings.HasPrefix(msg, wasMsg) {
				t.Fatalf("%T: one catch-all queue changed %s:\n%+v %q\nwas\n%+v %q", pol, d.Job, d, msg, was, wasMsg)
			}
		}
		if len(q.Queues) != 1 || q.Queues[0].Queue != "all" {
			t.Fatalf("%T: report %+v", pol, q.Queues)
		}
	}
}

// TestQueuesConcurrent: one Scheduler schedules rounds with queues from
// several goroutines (run with -race) and gives each the plan it gives
// alone.
func TestQueuesConcurrent(t *testing.T) {
	in := queued50(genInput(2, shape160x64))
	s, _ := New(Config{})
	want, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Queues) == 0 {
		t.Fatal("no queue report")
	}
	schedulesConcurrently(t, s, []Input{in, in, in, in}, []Plan{want, want, want, want})
}
