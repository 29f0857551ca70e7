package placement

import (
	"errors"
	"reflect"
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
