package placement

import (
	"reflect"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// A gang of two types is split into one part per type, in type order, and
// joined again; a job with a part left unplaced keeps what it held only
// when the placer left it exactly that.
func TestSplitAndJoinGangs(t *testing.T) {
	c, err := accel.ParseSpec("1x2:a100,1x2:t4")
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
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
	c, _ := accel.ParseSpec("1x2:a100,1x2:t4")
	x, _ := NewIndex(c)
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
