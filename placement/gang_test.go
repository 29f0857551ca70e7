package placement

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// twoTypes indexes one node of 2 A100s and one of 2 T4s.
func twoTypes(t *testing.T) *Index {
	t.Helper()
	c, err := accel.ParseSpec("1x2:a100,1x2:t4")
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A gang of two types is split into one part per type, in type order, and
// joined again; a job with a part left unplaced keeps what it held only
// when the placer left it exactly that.
func TestSplitAndJoinGangs(t *testing.T) {
	x := twoTypes(t)
	cur := []Assignment{{Job: "w", Devices: []string{"t4-0/0", "a100-40gb-0/0", "t4-0/1"}}, {Job: "r", Devices: []string{"a100-40gb-0/1"}}}
	got := x.SplitGangs(cur, func(job string) bool { return job == "w" })
	want := []Assignment{
		{Job: GangPart("w", "a100-40gb"), Devices: []string{"a100-40gb-0/0"}},
		{Job: GangPart("w", "t4"), Devices: []string{"t4-0/0", "t4-0/1"}},
		{Job: "r", Devices: []string{"a100-40gb-0/1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SplitGangs = %v", got)
	}
	held := func(job string) []string { return cur[0].Devices }
	a, u := JoinGangs(got, nil, held)
	if len(u) != 0 || len(a) != 2 || a[0].Job != "r" || a[1].Job != "w" || !SameDevices(a[1].Devices, cur[0].Devices) {
		t.Fatalf("JoinGangs of every part = %v, %v", a, u)
	}
	// The t4 part is unplaced: the job keeps its devices only if the
	// placer left it all of them.
	miss := []Unplaced{{Target: Target{Job: GangPart("w", "t4"), Type: "t4", Count: 2}, Reason: Reason{Code: ReasonCapacity}}}
	a, u = JoinGangs(got, miss, held)
	if len(u) != 1 || u[0].Target.Job != "w" || len(a) != 2 || !SameDevices(a[1].Devices, cur[0].Devices) {
		t.Fatalf("JoinGangs with its own devices left = %v, %v", a, u)
	}
	a, u = JoinGangs(got[:1], miss, held) // only the a100 part
	if len(u) != 1 || len(a) != 0 {
		t.Fatalf("JoinGangs with a part lost = %v, %v", a, u)
	}
}

func TestWorkersByType(t *testing.T) {
	if got := SpreadWorkers(7, []int{2, 0, 1}); !reflect.DeepEqual(got, []int{5, 0, 2}) {
		t.Errorf("SpreadWorkers(7, [2 0 1]) = %v, want [5 0 2]", got)
	}
	x := twoTypes(t)
	devs := []string{"t4-0/0", "a100-40gb-0/0", "t4-0/1"}
	n, w := x.CountByType(devs, []int{2, 3, 1})
	if !reflect.DeepEqual(n, []int{1, 2}) || !reflect.DeepEqual(w, []int{3, 3}) {
		t.Errorf("CountByType = %v, %v", n, w)
	}
	if n, _ := x.CountByType([]string{"nope"}, nil); n != nil {
		t.Errorf("CountByType of an unknown device = %v, want nil", n)
	}
	if got := x.DeviceWorkers(devs, []int{3, 3}); !reflect.DeepEqual(got, []int{2, 3, 1}) {
		t.Errorf("DeviceWorkers = %v, want [2 3 1]", got)
	}
}

// CheckWorkers accepts a W-job's gang only with at most W devices and,
// when counts are given, one ≥ 1 per device summing to W; without counts
// the workers spread over the types by their devices. Workers places them
// per device as the shares say, or evenly when the shares do not fit.
func TestCheckWorkers(t *testing.T) {
	x := twoTypes(t)
	devs := []string{"t4-0/0", "a100-40gb-0/0", "t4-0/1"}
	sh, err := x.CheckWorkers(Assignment{Job: "w", Devices: devs}, 7)
	want := []Share{{Type: "a100-40gb", Count: 1, Workers: 3}, {Type: "t4", Count: 2, Workers: 4}}
	if err != nil || !reflect.DeepEqual(sh, want) {
		t.Fatalf("even spread: %v, %v; want %v", sh, err, want)
	}
	sh, err = x.CheckWorkers(Assignment{Job: "w", Devices: devs, Workers: []int{1, 5, 1}}, 7)
	want = []Share{{Type: "a100-40gb", Count: 1, Workers: 5}, {Type: "t4", Count: 2, Workers: 2}}
	if err != nil || !reflect.DeepEqual(sh, want) {
		t.Fatalf("given counts: %v, %v; want %v", sh, err, want)
	}
	for name, c := range map[string]struct {
		a Assignment
		w int
	}{
		"more devices than W": {Assignment{Job: "w", Devices: devs}, 2},
		"counts short":        {Assignment{Job: "w", Devices: devs, Workers: []int{1, 1}}, 3},
		"idle device":         {Assignment{Job: "w", Devices: devs, Workers: []int{3, 0, 1}}, 4},
		"sum off":             {Assignment{Job: "w", Devices: devs, Workers: []int{1, 1, 1}}, 4},
	} {
		if _, err := x.CheckWorkers(c.a, c.w); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"w"`) {
			t.Errorf("%s: err %v, want ErrInvalid naming the job", name, err)
		}
	}
	if got := x.Workers(devs, 7, want); !reflect.DeepEqual(got, []int{1, 5, 1}) {
		t.Errorf("Workers by shares = %v", got)
	}
	if got := x.Workers(devs, 7, []Share{{Type: "t4", Count: 1, Workers: 7}}); !reflect.DeepEqual(got, []int{2, 3, 2}) {
		t.Errorf("Workers spread = %v", got)
	}
}
