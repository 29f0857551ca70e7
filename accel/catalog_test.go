package accel

import (
	"slices"
	"strings"
	"testing"
)

func TestTypeFromProduct(t *testing.T) {
	tests := []struct {
		name string
		mem  uint64
		want TypeKey
	}{
		{"Tesla T4", 0, "t4"},
		{"Tesla V100-SXM2-16GB", 0, "v100-16gb"},
		{"Tesla V100-SXM2-32GB", 0, "v100-32gb"},
		{"Tesla V100-PCIE-16GB", 0, "v100-16gb"},
		{"Tesla V100S-PCIE-32GB", 0, "v100-32gb"},
		{"Tesla V100-DGXS-32GB", 0, "v100-32gb"},
		{"NVIDIA A100-SXM4-40GB", 0, "a100-40gb"},
		{"Mock NVIDIA A100-SXM4-40GB", 40960 * mib, "a100-40gb"},
		{"NVIDIA A100-SXM4-80GB", 0, "a100-80gb"},
		{"NVIDIA A100-PCIE-40GB", 0, "a100-40gb"},
		{"NVIDIA A100-PCIE-80GB", 0, "a100-80gb"},
		{"NVIDIA A100 80GB PCIe", 0, "a100-80gb"},
		{"NVIDIA A100-SXM4-40GB MIG 1g.5gb", 0, "a100-40gb"},
		{"NVIDIA A30", 0, "a30"},
		{"NVIDIA A30-PCIE-24GB", 0, "a30"},
		{"NVIDIA A10", 0, "a10"},
		{"NVIDIA A10G", 0, "a10g"},
		{"NVIDIA A40", 0, "a40"},
		{"NVIDIA L4", 0, "l4"},
		{"NVIDIA L40", 0, "l40"},
		{"NVIDIA L40S", 0, "l40s"},
		{"NVIDIA H100 80GB HBM3", 0, "h100-80gb"},
		{"NVIDIA H100 PCIe", 81559 * mib, "h100-80gb"},
		{"NVIDIA H100 NVL", 0, "h100-94gb"},
		{"NVIDIA H200", 0, "h200-141gb"},
		{"NVIDIA H200 141GB HBM3e", 0, "h200-141gb"},
		{"NVIDIA H200 NVL", 0, "h200-141gb"},
		{"NVIDIA B200", 0, "b200"},
		{"NVIDIA B200 180GB HBM3e", 0, "b200"},
		{"NVIDIA GB200", 0, "gb200"},
		{"NVIDIA GeForce RTX 2080 Ti", 0, "rtx2080ti"},
		{"GeForce RTX 2080Ti", 0, "rtx2080ti"},
		{"Quadro RTX 6000", 0, "rtx6000"},
		{"NVIDIA RTX 6000 Ada Generation", 0, "rtx6000-ada"},
		{"NVIDIA RTX A6000", 0, "rtx-a6000"},
		{"Tesla K80", 0, "k80"},
		{"Tesla P100-PCIE-16GB", 0, "p100"},
		{"Tesla P100-SXM2-16GB", 0, "p100"},
		{"NVIDIA GeForce RTX 4090", 0, "rtx-4090"},
		{"AMD Instinct MI300X", 0, "amd-instinct-mi300x"},
		{"", 0, "unknown"},
		{"NVIDIA", 0, "unknown"},
		{"  ***  ", 0, "unknown"},
	}
	for _, tt := range tests {
		if got := TypeFromProduct(tt.name, tt.mem); got != tt.want {
			t.Errorf("TypeFromProduct(%q, %d) = %q, want %q", tt.name, tt.mem, got, tt.want)
		}
	}
}

// Every table entry's representative name maps back to its own key, and the
// table is sorted (LookupProduct relies on it) with consistent fields.
func TestProductTable(t *testing.T) {
	ps := Products()
	if !slices.IsSortedFunc(ps, func(a, b Product) int { return strings.Compare(string(a.Type), string(b.Type)) }) {
		t.Fatal("product table is not sorted by type")
	}
	for _, p := range ps {
		if got := TypeFromProduct(p.Name, p.MemoryBytes); got != p.Type {
			t.Errorf("TypeFromProduct(%q) = %q, want %q", p.Name, got, p.Type)
		}
		if !ValidTypeKey(string(p.Type)) || p.MemoryBytes == 0 || p.ComputeCapability == "" || p.Architecture == "" {
			t.Errorf("incomplete product %+v", p)
		}
		if (p.NVLink == NVLinkNone) != (p.NVLinkLanes == 0) {
			t.Errorf("%s: layout %v with %d lanes", p.Type, p.NVLink, p.NVLinkLanes)
		}
		if q, ok := LookupProduct(p.Type); !ok || q.Type != p.Type {
			t.Errorf("LookupProduct(%q) = %v, %v", p.Type, q, ok)
		}
	}
	for a, k := range aliases {
		if _, ok := LookupProduct(k); !ok {
			t.Errorf("alias %q points to unknown %q", a, k)
		}
	}
	if _, ok := LookupProduct("nope"); ok {
		t.Error("LookupProduct(nope) found something")
	}
}

func TestCanonicalType(t *testing.T) {
	tests := []struct {
		in   string
		want TypeKey
		ok   bool
	}{
		{"t4", "t4", true},
		{" T4 ", "t4", true},
		{"a100", "a100-40gb", true},
		{"H100", "h100-80gb", true},
		{"2080ti", "rtx2080ti", true},
		{"mi300x", "mi300x", true},
		{"", "", false},
		{"-t4", "", false},
		{"t4-", "", false},
		{"t_4", "", false},
		{strings.Repeat("a", 65), "", false},
	}
	for _, tt := range tests {
		got, err := CanonicalType(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("CanonicalType(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// Derived keys are always well formed and stable.
func FuzzTypeFromProduct(f *testing.F) {
	for _, s := range []string{"Tesla T4", "NVIDIA A100-SXM4-40GB", "weird ∑ name 12GB", "", "-"} {
		f.Add(s, uint64(0))
	}
	f.Fuzz(func(t *testing.T, name string, mem uint64) {
		k := TypeFromProduct(name, mem)
		if !ValidTypeKey(string(k)) {
			t.Fatalf("TypeFromProduct(%q) = %q: not a valid key", name, k)
		}
		if k2 := TypeFromProduct(name, mem); k2 != k {
			t.Fatalf("unstable: %q then %q", k, k2)
		}
	})
}

func TestLayoutLanes(t *testing.T) {
	// Cube mesh: six lanes per GPU, symmetric, four peers each.
	for a := range 8 {
		sum, peers := 0, 0
		for b := range 8 {
			if CubeMeshLanes(a, b) != CubeMeshLanes(b, a) {
				t.Fatalf("cube mesh not symmetric at %d,%d", a, b)
			}
			sum += CubeMeshLanes(a, b)
			if CubeMeshLanes(a, b) > 0 {
				peers++
			}
		}
		if sum != 6 || peers != 4 {
			t.Errorf("cube mesh GPU %d: %d lanes to %d peers, want 6 to 4", a, sum, peers)
		}
	}
	tests := []struct {
		layout              NVLinkLayout
		lanes, island, a, b int
		want                int
	}{
		{NVLinkNone, 12, 8, 0, 1, 0},
		{NVLinkPairs, 12, 8, 0, 1, 12},
		{NVLinkPairs, 12, 8, 1, 2, 0},
		{NVLinkAllToAll, 18, 8, 0, 7, 18},
		{NVLinkAllToAll, 18, 8, 7, 8, 0},
		{NVLinkAllToAll, 18, 0, 3, 5, 18},
		{NVLinkAllToAll, 18, 72, 0, 71, 18},
		{NVLinkCubeMesh, 6, 8, 0, 3, 2},
		{NVLinkCubeMesh, 6, 8, 8, 11, 2},
		{NVLinkCubeMesh, 6, 8, 0, 8, 0},
		{NVLinkAllToAll, 18, 8, 2, 2, 0},
	}
	for _, tt := range tests {
		if got := LayoutLanes(tt.layout, tt.lanes, tt.island, tt.a, tt.b); got != tt.want {
			t.Errorf("LayoutLanes(%v, %d, %d, %d, %d) = %d, want %d", tt.layout, tt.lanes, tt.island, tt.a, tt.b, got, tt.want)
		}
	}
	if _, err := ParseNVLinkLayout("mesh"); err == nil {
		t.Error("ParseNVLinkLayout(mesh) succeeded")
	}
	for _, l := range []NVLinkLayout{NVLinkNone, NVLinkPairs, NVLinkAllToAll, NVLinkCubeMesh} {
		if got, err := ParseNVLinkLayout(l.String()); err != nil || got != l {
			t.Errorf("round trip of %v: %v, %v", l, got, err)
		}
	}
}

func TestCriticalXid(t *testing.T) {
	for _, x := range []int{48, 63, 64, 74, 79} {
		if !CriticalXid(x) {
			t.Errorf("xid %d not critical", x)
		}
	}
	for _, x := range []int{0, 13, 31, 43, 45, 68, 109} {
		if CriticalXid(x) {
			t.Errorf("xid %d critical", x)
		}
	}
	if !slices.IsSorted(CriticalXids()) {
		t.Error("CriticalXids not sorted")
	}
}

// TestProductTDP: every product carries its published board power.
func TestProductTDP(t *testing.T) {
	for _, p := range Products() {
		if !(p.TDPWatts > 0) || p.TDPWatts > 2000 {
			t.Errorf("%s: TDPWatts %v", p.Type, p.TDPWatts)
		}
	}
}
