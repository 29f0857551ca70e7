//go:build cgo && linux

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

func TestMockJSON(t *testing.T) {
	for _, tt := range []struct {
		preset, typ string
		lanes       int
	}{{"dgxa100", "a100-40gb", 12}, {"dgxh100", "h100-80gb", 18}, {"dgxh200", "h200-141gb", 18}, {"dgxb200", "b200", 18}} {
		code, out, errs := runArgs(t, "-mock", tt.preset, "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tt.preset, code, errs)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Devices != 8 || len(r.Types) != 1 || r.Types[accel.TypeKey(tt.typ)] != 8 {
			t.Errorf("%s: %d devices, types %v", tt.preset, r.Devices, r.Types)
		}
		for _, d := range r.Nodes[0].Devices {
			if d.MemoryBytes == 0 || d.ComputeCapability == "" || len(d.NVLinkPeers) != 7 || d.NVLinkPeers[0].Lanes != tt.lanes || !strings.HasPrefix(d.ID, "GPU-") {
				t.Errorf("%s: device %+v", tt.preset, d)
			}
		}
	}
}
