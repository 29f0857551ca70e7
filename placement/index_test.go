package placement

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// States built on an Index behave like NewState's: same assignments, same
// free capacity, same round, same errors.
func TestIndexNewStateMatchesNewState(t *testing.T) {
	c := testCluster(nodeSpec{name: "a", typ: "h100", count: 8, links: fullMesh(18)},
		nodeSpec{name: "b", typ: "h100", count: 8, links: cubeMesh}, nodeSpec{name: "c", typ: "t4", count: 4})
	ix, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		current []Assignment
		err     error
	}{
		{"empty", nil, nil},
		{"running", []Assignment{{Job: "x", Devices: []string{"a/0", "a/1"}}, {Job: "y", Devices: []string{"b/3", "c/0"}}}, nil},
		{"unknown device", []Assignment{{Job: "x", Devices: []string{"z/9"}}}, ErrUnknownDevice},
		{"shared device", []Assignment{{Job: "x", Devices: []string{"a/0"}}, {Job: "y", Devices: []string{"a/0"}}}, ErrConflict},
		{"empty job", []Assignment{{Devices: []string{"a/0"}}}, ErrInvalid},
	}
	targets := []Target{{Job: "x", Type: "h100", Count: 4}, {Job: "n", Type: "h100", Count: 8}, {Job: "m", Type: "t4", Count: 2}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := NewState(c, tc.current)
			got, gerr := ix.NewState(tc.current)
			if !errors.Is(gerr, tc.err) || !errors.Is(werr, tc.err) || (gerr == nil) != (werr == nil) {
				t.Fatalf("errors: index %v, NewState %v, want %v", gerr, werr, tc.err)
			}
			if gerr != nil {
				if gerr.Error() != werr.Error() {
					t.Fatalf("error text %q, NewState %q", gerr, werr)
				}
				return
			}
			if !reflect.DeepEqual(got.Assignments(), want.Assignments()) {
				t.Fatalf("assignments %v, want %v", got.Assignments(), want.Assignments())
			}
			for _, typ := range []accel.TypeKey{"h100", "t4"} {
				if got.Free(typ) != want.Free(typ) {
					t.Fatalf("free %s: %d, want %d", typ, got.Free(typ), want.Free(typ))
				}
			}
			gr, err1 := Round(got, targets)
			wr, err2 := Round(want, targets)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(gr.Decisions, wr.Decisions) {
				t.Fatalf("rounds differ: %v %v\n%+v\n%+v", err1, err2, gr.Decisions, wr.Decisions)
			}
		})
	}
	if _, err := NewIndex(accel.Cluster{Nodes: []accel.Node{{}}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad cluster: %v", err)
	}
	var none *Index
	if _, err := none.NewState(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil index: %v", err)
	}
}

// An Index indexes only a snapshot that validates and indexes alike:
// health, names, types and links changes are seen, readings are not; and
// it then equals a fresh index of the snapshot.
func TestIndexIndexes(t *testing.T) {
	base := testCluster(uniform("n", 2, 4, "t4", nil)...)
	x, err := NewIndex(base)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(c *accel.Cluster)
		same   bool
	}{
		{"same", func(*accel.Cluster) {}, true},
		{"reading", func(c *accel.Cluster) { c.Nodes[0].Devices[1].PowerWatts = 70 }, true},
		{"copied strings", func(c *accel.Cluster) { // equal, at other addresses: a snapshot read afresh
			for i := range c.Nodes {
				n := &c.Nodes[i]
				n.Name = strings.Clone(n.Name)
				for j := range n.Devices {
					d := &n.Devices[j]
					d.ID, d.Node, d.Type = strings.Clone(d.ID), strings.Clone(d.Node), accel.TypeKey(strings.Clone(string(d.Type)))
				}
			}
		}, true},
		{"unhealthy", func(c *accel.Cluster) { c.Nodes[1].Devices[2].Healthy = false }, false},
		{"type", func(c *accel.Cluster) { c.Nodes[1].Devices[0].Type = "a100" }, false},
		{"numa", func(c *accel.Cluster) { c.Nodes[1].Devices[0].NUMANode = 3 }, false},
		{"mig", func(c *accel.Cluster) { c.Nodes[1].Devices[0].MIGEnabled = true }, false},
		{"id", func(c *accel.Cluster) { c.Nodes[1].Devices[3].ID = "n-001/9" }, false},
		{"device node", func(c *accel.Cluster) { c.Nodes[0].Devices[2].Node = "n-001" }, false},
		{"index", func(c *accel.Cluster) { c.Nodes[0].Devices[3].Index = 7 }, false},
		{"link", func(c *accel.Cluster) { c.Nodes[0].Links = []accel.Link{{A: 0, B: 1, NVLinks: 2}} }, false},
		{"name", func(c *accel.Cluster) { c.Nodes[0].Name = "m" }, false},
		{"fewer nodes", func(c *accel.Cluster) { c.Nodes = c.Nodes[:1] }, false},
		{"fewer devices", func(c *accel.Cluster) { c.Nodes[0].Devices = c.Nodes[0].Devices[:3] }, false},
	}
	for _, tc := range cases {
		c := base.Clone()
		tc.change(&c)
		if got := x.Indexes(&c); got != tc.same {
			t.Errorf("%s: Indexes = %v, want %v", tc.name, got, tc.same)
		}
		if fresh, err := NewIndex(c); tc.same && (err != nil || !reflect.DeepEqual(fresh.ix, x.ix)) {
			t.Errorf("%s: a fresh index differs (%v)", tc.name, err)
		}
	}
	var none *Index
	if none.Indexes(&base) {
		t.Error("a nil Index indexes nothing")
	}
}

// lookupIndex indexes the lookup tests' cluster: nodes b (4 t4, b/1
// unhealthy), a (2 t4) and c (8 a100, c/0 a MIG parent).
func lookupIndex(t *testing.T) *Index {
	t.Helper()
	c := testCluster(nodeSpec{name: "b", typ: "t4", count: 4}, nodeSpec{name: "a", typ: "t4", count: 2},
		nodeSpec{name: "c", typ: "a100", count: 8})
	c.Nodes[0].Devices[1].Healthy = false
	c.Nodes[2].Devices[0].MIGEnabled = true
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The read-only lookups report the snapshot: types, usable devices
// (healthy, not MIG parents), devices and nodes in name order.
func TestIndexLookups(t *testing.T) {
	x := lookupIndex(t)
	if got := x.Types(); !reflect.DeepEqual(got, []accel.TypeKey{"a100", "t4"}) {
		t.Fatalf("Types = %v", got)
	}
	if i, ok := x.TypeIndex("t4"); i != 1 || !ok {
		t.Fatalf("TypeIndex(t4) = %d, %v", i, ok)
	}
	if _, ok := x.TypeIndex("v100"); ok {
		t.Fatal("TypeIndex(v100) found")
	}
	for typ, want := range map[accel.TypeKey][3]int{"t4": {5, 3, 2}, "a100": {7, 7, 1}, "v100": {}} {
		if n, per, nodes := x.Usable(typ); [3]int{n, per, nodes} != want {
			t.Errorf("Usable(%s) = %d, %d, %d, want %v", typ, n, per, nodes, want)
		}
	}
	if d, ok := x.Device("b/1"); !ok || d.Node != "b" || d.Type != "t4" || d.Index != 1 || d.Healthy || !d.Offered || d.Usable() {
		t.Errorf("Device(b/1) = %+v, %v", d, ok)
	}
	if d, _ := x.Device("c/0"); d.Offered || d.Usable() {
		t.Errorf("MIG parent c/0 = %+v", d)
	}
	if _, ok := x.Device("z/0"); ok {
		t.Error("Device(z/0) found")
	}
	if x.Nodes() != 3 {
		t.Fatalf("Nodes = %d", x.Nodes())
	}
	if name, devs := x.Node(0); name != "a" || len(devs) != 2 || devs[1].ID != "a/1" {
		t.Errorf("Node(0) = %s, %+v", name, devs)
	}
	if name, devs := x.Node(3); name != "" || devs != nil {
		t.Errorf("Node(3) = %q, %v", name, devs)
	}
	for ids, want := range map[string]int{"": 0, "a/0": 1, "a/0 a/1": 1, "a/1 b/2 c/7": 3, "a/0 z/9": 2} {
		if got := x.NodesOf(strings.Fields(ids)); got != want {
			t.Errorf("NodesOf(%s) = %d, want %d", ids, got, want)
		}
	}
	// Beyond 16 nodes the count switches to a set.
	var wide accel.Cluster
	var ids []string
	for n := range 40 {
		name := fmt.Sprintf("w%02d", n)
		wide.Nodes = append(wide.Nodes, accel.Node{Name: name, Devices: []accel.Device{{ID: name + "/0", Node: name, Type: "t4", Healthy: true}}})
		ids = append(ids, name+"/0", name+"/0")
	}
	if w, _ := NewIndex(wide); w.NodesOf(ids) != 40 {
		t.Errorf("NodesOf over 40 nodes = %d", w.NodesOf(ids))
	}
}

// Ref numbers every device node by node in name order, then by index,
// and agrees with Device and Node.
func TestIndexRefs(t *testing.T) {
	x := lookupIndex(t)
	if x.Devices() != 14 {
		t.Fatalf("Devices = %d", x.Devices())
	}
	num := 0
	for n := range x.Nodes() {
		_, devs := x.Node(n)
		slices.SortFunc(devs, func(a, b DeviceInfo) int { return cmp.Compare(a.Index, b.Index) })
		for _, d := range devs {
			ref, ok := x.Ref(d.ID)
			typ, _ := x.TypeIndex(d.Type)
			if want := (DeviceRef{Num: num, Node: n, Type: typ, Usable: d.Usable()}); !ok || ref != want {
				t.Errorf("Ref(%s) = %+v, %v, want %+v", d.ID, ref, ok, want)
			}
			num++
		}
	}
	if _, ok := x.Ref("z/0"); ok {
		t.Error("Ref(z/0) found")
	}
	// A list resolves in any order, and stops at an unknown ID.
	for _, ids := range []string{"a/0 a/1 b/0 b/1 b/2", "b/3 a/1 c/7 c/6 c/5 a/0", "a/0 a/1 z/0 b/0", ""} {
		list := strings.Fields(ids)
		got, ok := x.AppendRefs([]DeviceRef{{Num: -1}}, list)
		var want []DeviceRef
		for _, id := range list {
			r, found := x.Ref(id)
			if !found {
				break
			}
			want = append(want, r)
		}
		if ok != (len(want) == len(list)) || !slices.Equal(got, append([]DeviceRef{{Num: -1}}, want...)) {
			t.Errorf("AppendRefs(%s) = %v, %v, want %v", ids, got, ok, want)
		}
	}
	var none *Index
	if _, ok := none.AppendRefs(nil, []string{"a/0"}); ok {
		t.Error("a nil Index resolves a device")
	}
	if _, ok := none.Ref("a/0"); ok || none.Devices() != 0 {
		t.Error("a nil Index has devices")
	}
}

func TestSameDevices(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"", "", true}, {"a b", "a b", true}, {"a b", "b a", true}, {"a b", "a c", false}, {"a", "a b", false}} {
		if got := SameDevices(strings.Fields(c.a), strings.Fields(c.b)); got != c.want {
			t.Errorf("SameDevices(%q, %q) = %v", c.a, c.b, got)
		}
	}
	// Lists longer than sameDevicesScan go through a set.
	var long, rev []string
	for i := range sameDevicesScan + 8 {
		long = append(long, fmt.Sprintf("n/%d", i))
	}
	for i := range long {
		rev = append(rev, long[len(long)-1-i])
	}
	if !SameDevices(long, rev) {
		t.Error("SameDevices(long, reversed) = false")
	}
	rev[3] = "m/0"
	if SameDevices(long, rev) {
		t.Error("SameDevices(long, other) = true")
	}
}

// Derived builds a value once per index and key: the first value is kept,
// other keys and other indexes get their own.
func TestIndexDerived(t *testing.T) {
	c := testCluster(nodeSpec{name: "a", typ: "t4", count: 4})
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	y, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	type keyA struct{}
	type keyB struct{}
	builds := 0
	build := func(v int) func() any { return func() any { builds++; return v } }
	if v := x.Derived(keyA{}, build(1)); v != 1 {
		t.Fatalf("first: %v, want 1", v)
	}
	if v := x.Derived(keyA{}, build(2)); v != 1 || builds != 1 {
		t.Fatalf("again: %v after %d builds, want 1 after 1", v, builds)
	}
	if v := x.Derived(keyB{}, build(3)); v != 3 {
		t.Fatalf("other key: %v, want 3", v)
	}
	if v := y.Derived(keyA{}, build(4)); v != 4 {
		t.Fatalf("other index: %v, want 4", v)
	}
	var zero *Index
	if v := zero.Derived(keyA{}, build(5)); v != 5 {
		t.Fatalf("nil index: %v, want 5", v)
	}
}
