package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

func fuzzCluster() accel.Cluster {
	return testCluster(
		nodeSpec{"a0", "a100", 8, fullMesh(12)},
		nodeSpec{"a1", "a100", 8, fullMesh(12)},
		nodeSpec{"v0", "v100", 8, cubeMesh},
		nodeSpec{"t0", "t4", 4, pairs},
	)
}

func knownErr(err error) bool {
	for _, e := range []error{ErrInvalid, ErrUnknownType, ErrUnknownDevice, ErrImpossible, ErrConflict, ErrUnhealthy, ErrNoFit} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzPlace feeds malformed and odd requests: every outcome is a valid
// placement or an error wrapping one of the package's sentinels.
func FuzzPlace(f *testing.F) {
	f.Add("j", "a100", 4, 0, uint8(0), 1.0, uint8(0))
	f.Add("j", "a100", -3, 0, uint8(0), 1.0, uint8(0))
	f.Add("j", "tpu-v5", 1, 0, uint8(0), 1.0, uint8(0))
	f.Add("j", "a100", 9, 2, uint8(1), 1.0, uint8(1))
	f.Add("j", "t4", 3, 0, uint8(2), 0.0, uint8(2))
	f.Add("", "v100", 1, -1, uint8(4), -1.0, uint8(0))
	f.Add("j", "", 40, 0, uint8(0), 2.5, uint8(1))
	f.Add("j", "a100,a100", 1, 0, uint8(0), 1.0, uint8(0))
	f.Fuzz(func(t *testing.T, job, types string, count, maxNodes int, flags uint8, value float64, strategy uint8) {
		c := fuzzCluster()
		s, err := NewState(c, []Assignment{{Job: "x", Devices: []string{"a0/0", "a0/1", "v0/4"}}})
		if err != nil {
			t.Fatal(err)
		}
		r := Request{Job: job, Count: count, MaxNodes: maxNodes,
			SingleNode: flags&1 != 0, SameIsland: flags&2 != 0, SameNUMA: flags&4 != 0}
		if types != "" {
			for _, ty := range strings.Split(types, ",") {
				r.Types = append(r.Types, accel.TypeKey(ty))
			}
			r.Values = map[accel.TypeKey]float64{r.Types[0]: value}
		}
		p := Chooser{Strategy: Strategy(strategy % 4)}
		a, err := p.Place(s, r)
		if err != nil {
			if !knownErr(err) {
				t.Fatalf("%+v: error %v wraps no sentinel", r, err)
			}
			return
		}
		checkPlacement(t, c, s, r, a, p)
		if err := s.Assign(a); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, c, s)
	})
}

// FuzzRound feeds odd targets to a round: errors wrap sentinels, results
// never hold a device twice.
func FuzzRound(f *testing.F) {
	f.Add("x", "a100", 4, 0, "y", "t4", 2, 1)
	f.Add("x", "a100", -1, 0, "y", "t4", 2, 1)
	f.Add("x", "gpu", 1, 0, "x", "t4", 2, 1)
	f.Add("", "a100", 1, -2, "y", "v100", 20, 1)
	f.Add("x", "v100", 0, 0, "z", "a100", 16, 2)
	f.Fuzz(func(t *testing.T, j1, t1 string, c1, m1 int, j2, t2 string, c2, m2 int) {
		c := fuzzCluster()
		s, err := NewState(c, []Assignment{
			{Job: "x", Devices: []string{"a0/0", "a0/1"}},
			{Job: "y", Devices: []string{"t0/0"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		targets := []Target{{Job: j1, Type: accel.TypeKey(t1), Count: c1, MaxNodes: m1}, {Job: j2, Type: accel.TypeKey(t2), Count: c2, MaxNodes: m2}}
		res, err := Round(s, targets)
		if err != nil {
			if !knownErr(err) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		checkInvariants(t, c, res.State)
	})
}

// FuzzNewState feeds current assignments naming odd devices.
func FuzzNewState(f *testing.F) {
	f.Add("a", "a0/0,a0/1", "b", "a0/1")
	f.Add("a", "a0/0,a0/0", "b", "t0/3")
	f.Add("", "zz", "b", "")
	f.Add("a", "v0/7", "a", "v0/6")
	f.Fuzz(func(t *testing.T, j1, d1, j2, d2 string) {
		c := fuzzCluster()
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		s, err := NewState(c, []Assignment{{Job: j1, Devices: split(d1)}, {Job: j2, Devices: split(d2)}})
		if err != nil {
			if !knownErr(err) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		checkInvariants(t, c, s)
	})
}
