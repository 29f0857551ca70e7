package variability

import (
	"errors"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
)

// TestEstimatorAddDevices: a node that joins gets estimates of 1, the
// known devices keep theirs, and reports on the new devices apply.
func TestEstimatorAddDevices(t *testing.T) {
	one := accel.Cluster{Nodes: []accel.Node{{Name: "a", Devices: []accel.Device{{ID: "a/0"}}}}}
	e, err := NewEstimator(one, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := func(dev string) Report {
		return Report{Job: "j", Devices: []string{dev}, Step: 2 * time.Second, Base: time.Second}
	}
	if err := e.Observe(rep("b/0")); !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("device of a node not added yet: %v, want ErrUnknownDevice", err)
	}
	for range 3 {
		if err := e.Observe(rep("a/0")); err != nil {
			t.Fatal(err)
		}
	}
	two := accel.Cluster{Nodes: append(one.Nodes, accel.Node{Name: "b", Devices: []accel.Device{{ID: "b/0"}}})}
	e.AddDevices(two)
	if got := e.Slowdown("a/0", ""); got != 2 {
		t.Errorf("a/0 after AddDevices: %v, want its estimate 2 kept", got)
	}
	if got := e.Slowdown("b/0", ""); got != 1 {
		t.Errorf("new b/0: %v, want 1", got)
	}
	for range 3 {
		if err := e.Observe(rep("b/0")); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.Slowdown("b/0", ""); got != 2 {
		t.Errorf("b/0 after 3 reports: %v, want 2", got)
	}
}
