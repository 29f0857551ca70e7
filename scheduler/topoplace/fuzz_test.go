package topoplace

import (
	"context"
	"testing"

	"github.com/goodsched/goodsched/placement"
)

// FuzzConstraint: any constraint, count and keep fraction is either a
// typed error or a placement with 0 violations; never a panic.
func FuzzConstraint(f *testing.F) {
	f.Add("rack", "", "rack", 4, "", 0, 8, false, 0.5)
	f.Add("", "block", "block", 6, "rack", 3, 12, true, 1.0)
	f.Add("zone", "rack", "rack", 0, "block", 2, 3, false, -1.0)
	f.Add(NodeLevel, NodeLevel, NodeLevel, 2, "", 0, 4, true, 0.0)
	_, top, x := fabric(f, 2, 2, 2, 4, nil)
	f.Fuzz(func(t *testing.T, req, pref, l1 string, s1 int, l2 string, s2, count int, bal bool, keep float64) {
		c := Constraint{Required: req, Preferred: pref, Balanced: bal}
		if l1 != "" {
			c.Slices = append(c.Slices, Slice{Level: l1, Size: s1})
		}
		if l2 != "" {
			c.Slices = append(c.Slices, Slice{Level: l2, Size: s2})
		}
		verr := c.Validate(top)
		if count < 1 || count > 64 {
			return
		}
		for _, st := range []Strategy{LeastLoss, BestFit, Binpack} {
			p := Placer{Topology: top, Strategy: st, Constraint: func(string) Constraint { return c }, Keep: map[string]float64{"rack": keep}}
			res, err := p.Place(context.Background(), placement.PlaceInput{Cluster: x, Targets: []placement.Target{{Job: "j", Type: "gb200", Count: count}}})
			if err != nil {
				if verr == nil && p.Validate() == nil {
					t.Fatalf("%v: valid constraint %+v failed: %v", st, c, err)
				}
				continue
			}
			if verr != nil {
				t.Fatalf("%v: invalid constraint %+v (%v) placed", st, c, verr)
			}
			if n, _ := Check(x, top, res.Assignments, p.Constraint); n != 0 {
				t.Fatalf("%v: %+v count %d: %d violations", st, c, count, n)
			}
			for _, a := range res.Assignments {
				if len(a.Devices) != count {
					t.Fatalf("%v: %d devices for %d", st, len(a.Devices), count)
				}
			}
		}
	})
}
