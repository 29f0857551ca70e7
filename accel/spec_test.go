package accel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseSpecShorthand(t *testing.T) {
	c, err := ParseSpec("6x4:t4, 2x8:a100-40gb ,3x8:rtx2080ti")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 11 || c.Size() != 24+16+24 {
		t.Fatalf("got %d nodes, %d devices", len(c.Nodes), c.Size())
	}
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	want := "t4-0 t4-1 t4-2 t4-3 t4-4 t4-5 a100-40gb-0 a100-40gb-1 rtx2080ti-0 rtx2080ti-1 rtx2080ti-2"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("node names %q, want %q", got, want)
	}
	counts := c.Counts()
	if counts["t4"] != 24 || counts["a100-40gb"] != 16 || counts["rtx2080ti"] != 24 {
		t.Errorf("counts %v", counts)
	}
	d, ok := c.Device("a100-40gb-1/7")
	if !ok || d.Node != "a100-40gb-1" || d.Index != 7 || d.MemoryBytes != 40<<30 || d.ComputeCapability != "8.0" ||
		d.Architecture != "ampere" || d.NUMANode != 1 || !d.Healthy || d.Product != "NVIDIA A100-SXM4-40GB" {
		t.Errorf("device %+v", d)
	}
	a100 := c.Nodes[6]
	if len(a100.Links) != 28 || a100.Lanes(0, 7) != 12 || a100.Lanes(7, 0) != 12 {
		t.Errorf("a100 links %d, lanes(0,7)=%d", len(a100.Links), a100.Lanes(0, 7))
	}
	t4 := c.Nodes[0]
	if len(t4.Links) != 6 || len(t4.Peers(0)) != 0 {
		t.Errorf("t4 links %v", t4.Links)
	}
	levels := map[[2]int]PCIeLevel{}
	for _, l := range t4.Links {
		levels[[2]int{l.A, l.B}] = l.PCIe
	}
	if levels[[2]int{0, 1}] != PCIeSingle || levels[[2]int{1, 2}] != PCIeSystem || levels[[2]int{2, 3}] != PCIeSingle {
		t.Errorf("t4 pcie levels %v", levels)
	}
}

func TestParseSpecDefaults(t *testing.T) {
	tests := []struct {
		spec   string
		node   int
		a, b   int
		lanes  int
		pcie   PCIeLevel
		peers0 int
	}{
		{"1x8:h100-80gb", 0, 0, 7, 18, PCIeSystem, 7},
		{"1x8:h200", 0, 1, 6, 18, PCIeSystem, 7},
		{"1x8:b200", 0, 2, 3, 18, PCIeSingle, 7},
		{"1x4:gb200", 0, 0, 3, 18, PCIeSystem, 3},
		{"1x8:h100-94gb", 0, 0, 1, 12, PCIeSingle, 1},
		{"1x8:h100-94gb", 0, 1, 2, 0, PCIeNode, 1},
		{"1x8:v100", 0, 0, 3, 2, PCIeNode, 4},
		{"1x8:v100-32gb", 0, 0, 5, 0, PCIeSystem, 4},
		{"1x16:a100-80gb", 0, 7, 8, 0, PCIeSystem, 7},
		{"1x16:a100-80gb", 0, 8, 15, 12, PCIeNode, 7},
		{"1x8:k80", 0, 0, 1, 0, PCIeInternal, 0},
		{"1x8:rtx2080ti", 0, 0, 1, 0, PCIeSingle, 0},
		{"1x2:l4", 0, 0, 1, 0, PCIeSingle, 0},
		{"1x8:mi300x", 0, 0, 1, 0, PCIeSingle, 0},
	}
	for _, tt := range tests {
		c, err := ParseSpec(tt.spec)
		if err != nil {
			t.Errorf("%s: %v", tt.spec, err)
			continue
		}
		n := c.Nodes[tt.node]
		var got Link
		for _, l := range n.Links {
			if l.A == tt.a && l.B == tt.b {
				got = l
			}
		}
		if got.NVLinks != tt.lanes || got.PCIe != tt.pcie || len(n.Peers(0)) != tt.peers0 {
			t.Errorf("%s: link %d-%d = %+v, peers(0)=%v; want %d lanes, %v, %d peers", tt.spec, tt.a, tt.b, got, n.Peers(0), tt.lanes, tt.pcie, tt.peers0)
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		spec string
		want string // substring of the message
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"4:t4", "group 1 at offset 0"},
		{"1x4:t4,x4:t4", "group 2 at offset 7"},
		{"1x4:t4,1x:t4", "devices per node"},
		{"0x4:t4", "nodes is 0"},
		{"1x0:t4", "devices per node is 0"},
		{"-1x4:t4", "not a positive integer"},
		{"1x4:", "type"},
		{"1x4:T_4", "type"},
		{"1x4:t4,", "group 2"},
		{"1x257:t4", "groups[0].devices is 257"},
		{"9999x8:t4", "more than"},
		{"99999x8:t4", "nodes is 99999"},
		{"1x4x4:t4", "devices per node"},
		{"12345678x1:t4", "not a positive integer"},
		{`{"groups":[]}`, "groups is empty"},
		{`{"groups":[{"devices":4,"type":"t4"}],"unhealthy":["t4-0/9"]}`, "unhealthy[0]"},
		{`{"groups":[{"devices":4,"type":"t4","nvlink":"mesh"}]}`, "groups[0].nvlink"},
		{`{"groups":[{"devices":4,"type":"t4","nvlink_lanes":-1}]}`, "nvlink_lanes"},
		{`{"groups":[{"devices":4,"type":"t4","prefix":"a b"}]}`, "prefix"},
		{`{"groups":[{"devices":4,"type":"t4","color":"red"}]}`, "unknown field"},
		{`{"groups":[{"devices":"4","type":"t4"}]}`, "offset"},
		{`{"groups":[{"devices":4,"type":"t4"}]} {}`, "data after"},
		{`{"groups":[{"devices":4,"type":"t4"}`, "offset"},
		{`{"groups":[{"devices":4,"type":"t4","nodes":-2}]}`, "groups[0].nodes"},
		{`{"groups":[{"devices":4,"type":"t4","prefix":"x"},{"devices":4,"type":"l4","prefix":"x"}]}`, ""},
	}
	for _, tt := range tests {
		_, err := ParseSpec(tt.spec)
		if tt.want == "" {
			if err != nil {
				t.Errorf("ParseSpec(%q): %v", tt.spec, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSpec(%q) = %v; want ErrInvalid mentioning %q", tt.spec, err, tt.want)
		}
	}
	_, err := ParseSpec(`{"groups":[{"devices":4,"type":"t4"}],"unhealthy":["x/1"]}`)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown unhealthy device: %v, want ErrNotFound too", err)
	}
}

func TestParseSpecJSON(t *testing.T) {
	c, err := ParseSpec(`{
	  "groups": [
	    {"nodes": 2, "devices": 8, "type": "a100", "prefix": "dgx"},
	    {"devices": 8, "type": "rtx2080ti", "nvlink": "pairs", "nvlink_lanes": 2, "memory_bytes": 1024},
	    {"nodes": 1, "devices": 2, "type": "t4", "prefix": "dgx"}
	  ],
	  "unhealthy": ["dgx-1/3"]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.Nodes[0].Name, c.Nodes[1].Name, c.Nodes[2].Name, c.Nodes[3].Name); got != "dgx-0dgx-1rtx2080ti-0dgx-2" {
		t.Errorf("names %s", got)
	}
	if d, _ := c.Device("dgx-1/3"); d.Healthy || d.Fault == "" || d.Type != "a100-40gb" {
		t.Errorf("dgx-1/3 = %+v", d)
	}
	if c.Count("a100-40gb") != 15 {
		t.Errorf("healthy a100 = %d", c.Count("a100-40gb"))
	}
	rtx := c.Nodes[2]
	if rtx.Lanes(2, 3) != 2 || rtx.Lanes(1, 2) != 0 || rtx.Devices[0].MemoryBytes != 1024 {
		t.Errorf("rtx node: lanes %d %d, memory %d", rtx.Lanes(2, 3), rtx.Lanes(1, 2), rtx.Devices[0].MemoryBytes)
	}
	// Shorthand and JSON agree.
	a, _ := ParseSpec("2x4:t4")
	b, err := ParseSpec(`{"groups":[{"nodes":2,"devices":4,"type":"t4"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("shorthand and JSON differ:\n%s\n%s", ja, jb)
	}
}

// checkSpecCluster holds for every cluster a description produces.
func checkSpecCluster(t *testing.T, c Cluster) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("invalid cluster: %v", err)
	}
	for _, n := range c.Nodes {
		k := len(n.Devices)
		if len(n.Links) != k*(k-1)/2 {
			t.Fatalf("node %s: %d links for %d devices", n.Name, len(n.Links), k)
		}
		for i, d := range n.Devices {
			if d.Index != i || d.ID != fmt.Sprintf("%s/%d", n.Name, i) || !ValidTypeKey(string(d.Type)) {
				t.Fatalf("device %+v", d)
			}
		}
		for _, l := range n.Links {
			if l.A >= l.B || l.NVLinks < 0 || l.PCIe == PCIeUnknown {
				t.Fatalf("link %+v", l)
			}
		}
	}
}

func FuzzParseShorthand(f *testing.F) {
	for _, s := range []string{"16x4:t4", "6x4:t4,2x8:a100-40gb,3x8:rtx2080ti", "1x8:v100", " 2 x 2 : H100 ", "1x1:x", "x", ",", "1x4:t4,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 256 {
			return
		}
		sp, err := ParseShorthand(s)
		checkParsedSpec(t, sp, err)
	})
}

func FuzzParseJSONSpec(f *testing.F) {
	for _, s := range []string{
		`{"groups":[{"nodes":2,"devices":8,"type":"a100"}]}`,
		`{"groups":[{"devices":8,"type":"rtx2080ti","nvlink":"pairs","nvlink_lanes":2,"prefix":"r"}],"unhealthy":["r-0/1"]}`,
		`{"groups":[{"devices":4,"type":"t4","nvlink":"cube-mesh","memory_bytes":5}]}`,
		`{}`, `[]`, `{"groups":null}`, `{"groups":[{"devices":1e9,"type":"t4"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1024 {
			return
		}
		sp, err := ParseJSONSpec(data)
		checkParsedSpec(t, sp, err)
	})
}

// checkParsedSpec is the shared body of the spec fuzz targets: a parse or
// build error must wrap ErrInvalid, and a spec that builds must give a
// consistent cluster.
func checkParsedSpec(t *testing.T, sp Spec, err error) {
	t.Helper()
	if err == nil {
		var c Cluster
		if c, err = sp.Build(); err == nil {
			checkSpecCluster(t, c)
			return
		}
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
}

func BenchmarkParseSpec(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSpec("64x4:t4,32x8:a100-40gb,48x8:rtx2080ti"); err != nil {
			b.Fatal(err)
		}
	}
}
