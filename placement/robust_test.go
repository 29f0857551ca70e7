package placement

import (
	"errors"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// Issue 17: health events of an unknown kind change nothing and fail.
func TestApplyHealthUnknownKind(t *testing.T) {
	s, err := NewState(testCluster(nodeSpec{"n0", "t4", 2, nil}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []accel.HealthKind{0, 99, -1} {
		if _, err := s.ApplyHealth(accel.HealthEvent{Device: "n0/0", Kind: k, Critical: true}); !errors.Is(err, ErrInvalid) {
			t.Errorf("kind %d: err %v, want ErrInvalid", k, err)
		}
	}
	if s.Free("t4") != 2 {
		t.Errorf("free %d after rejected events, want 2", s.Free("t4"))
	}
}
