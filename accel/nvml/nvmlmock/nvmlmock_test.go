//go:build cgo && linux

package nvmlmock

import (
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestNew(t *testing.T) {
	for _, name := range Presets() {
		s, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		var _ gonvml.Interface = s
		if n, r := s.DeviceGetCount(); n != 8 || r != gonvml.SUCCESS {
			t.Errorf("%s: %d devices, %v", name, n, r)
		}
		set, _ := s.EventSetCreate()
		if _, r := set.Wait(1); r != gonvml.ERROR_TIMEOUT {
			t.Errorf("%s: empty Wait = %v", name, r)
		}
		s.InjectXid(2, 79)
		if ev, r := set.Wait(1000); r != gonvml.SUCCESS || ev.EventData != 79 || ev.Device != s.Devices[2] {
			t.Errorf("%s: Wait = %+v, %v", name, ev, r)
		}
		set.Free()
		if s.FreedEventSets() != 1 {
			t.Error("Free not counted")
		}
	}
	if _, err := New("dgx1"); err == nil {
		t.Error("New(dgx1) succeeded")
	}
}
