package accel

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// NVLinkLayout is how the devices of a standard board are wired with NVLink.
type NVLinkLayout int

// NVLink layouts.
const (
	// NVLinkNone: no NVLink between devices (PCIe only).
	NVLinkNone NVLinkLayout = iota
	// NVLinkPairs: devices 2k and 2k+1 are bridged (NVLink bridge cards).
	NVLinkPairs
	// NVLinkAllToAll: every pair of devices in an island reaches every other
	// with the device's full lane count, through NVSwitch (HGX/DGX boards).
	NVLinkAllToAll
	// NVLinkCubeMesh: the DGX-1 hybrid cube-mesh of 8 devices, with the lane
	// counts of the DGX-1V (V100) board; see [CubeMeshLanes].
	NVLinkCubeMesh
)

var layoutNames = [...]string{"none", "pairs", "all", "cube-mesh"}

// String returns the name used in JSON descriptions: "none", "pairs", "all"
// or "cube-mesh".
func (l NVLinkLayout) String() string {
	if l >= 0 && int(l) < len(layoutNames) {
		return layoutNames[l]
	}
	return "NVLinkLayout(" + strconv.Itoa(int(l)) + ")"
}

// ParseNVLinkLayout parses a layout name as returned by String.
func ParseNVLinkLayout(s string) (NVLinkLayout, error) {
	for i, n := range layoutNames {
		if s == n {
			return NVLinkLayout(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrInvalid, layoutProblem(s))
}

func layoutProblem(s string) string {
	return fmt.Sprintf("nvlink layout %q (want none, pairs, all or cube-mesh)", s)
}

// Product describes a known accelerator type: the defaults a Static
// inventory gives its devices and the NVLink wiring of its standard board.
type Product struct {
	// Type is the canonical key.
	Type TypeKey
	// Name is a representative product name as NVML reports it.
	Name string
	// MemoryBytes is the nominal device memory.
	MemoryBytes uint64
	// ComputeCapability is the CUDA compute capability, "major.minor".
	ComputeCapability string
	// Architecture is the lower-case architecture name ("ampere", "hopper").
	Architecture string
	// NVLink is the wiring of a standard board of this product.
	NVLink NVLinkLayout
	// NVLinkLanes is the number of NVLink lanes between two linked devices
	// under NVLinkPairs and NVLinkAllToAll (the device's links through the
	// switch). Zero without NVLink.
	NVLinkLanes int
	// IslandSize is the number of devices one NVLink domain spans on a node;
	// devices of a node are grouped into consecutive islands of this size and
	// islands are not linked to each other. Zero means 8.
	IslandSize int
	// BoardPairs reports dual-GPU boards (K80): devices 2k and 2k+1 share a
	// board, PCIe level PCIeInternal.
	BoardPairs bool
	// TDPWatts is the published board power (thermal design power) of one
	// device, in watts: the most it draws under sustained load. Zero when
	// unknown.
	TDPWatts float64
}

const mib = 1 << 20

// products is the canonical table, sorted by Type. Memory is the nominal
// size in MiB; compute capability and architecture from NVIDIA's CUDA GPU
// list; NVLink from the boards these parts ship on (HGX/DGX for SXM parts,
// bridged pairs for H100 NVL, none for PCIe cards usually installed without
// bridges). TDPWatts are NVIDIA's published maximum board power per GPU
// (product datasheets; the SXM figure for SXM parts, the configurable
// maximum for H100 NVL, half the 300 W board for each K80 GPU, 1,200 W
// per GB200 GPU as NVIDIA states for NVL72); A10G has no public
// datasheet and takes the 300 W power limit nvidia-smi reports on EC2 G5.
var products = []Product{
	{Type: "a10", Name: "NVIDIA A10", MemoryBytes: 24576 * mib, ComputeCapability: "8.6", Architecture: "ampere", TDPWatts: 150},
	{Type: "a100-40gb", Name: "NVIDIA A100-SXM4-40GB", MemoryBytes: 40960 * mib, ComputeCapability: "8.0", Architecture: "ampere", NVLink: NVLinkAllToAll, NVLinkLanes: 12, TDPWatts: 400},
	{Type: "a100-80gb", Name: "NVIDIA A100-SXM4-80GB", MemoryBytes: 81920 * mib, ComputeCapability: "8.0", Architecture: "ampere", NVLink: NVLinkAllToAll, NVLinkLanes: 12, TDPWatts: 400},
	{Type: "a10g", Name: "NVIDIA A10G", MemoryBytes: 24576 * mib, ComputeCapability: "8.6", Architecture: "ampere", TDPWatts: 300},
	{Type: "a30", Name: "NVIDIA A30", MemoryBytes: 24576 * mib, ComputeCapability: "8.0", Architecture: "ampere", TDPWatts: 165},
	{Type: "a40", Name: "NVIDIA A40", MemoryBytes: 49152 * mib, ComputeCapability: "8.6", Architecture: "ampere", TDPWatts: 300},
	{Type: "b200", Name: "NVIDIA B200", MemoryBytes: 184320 * mib, ComputeCapability: "10.0", Architecture: "blackwell", NVLink: NVLinkAllToAll, NVLinkLanes: 18, TDPWatts: 1000},
	{Type: "gb200", Name: "NVIDIA GB200", MemoryBytes: 190464 * mib, ComputeCapability: "10.0", Architecture: "blackwell", NVLink: NVLinkAllToAll, NVLinkLanes: 18, IslandSize: 72, TDPWatts: 1200},
	{Type: "h100-80gb", Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 81920 * mib, ComputeCapability: "9.0", Architecture: "hopper", NVLink: NVLinkAllToAll, NVLinkLanes: 18, TDPWatts: 700},
	{Type: "h100-94gb", Name: "NVIDIA H100 NVL", MemoryBytes: 96256 * mib, ComputeCapability: "9.0", Architecture: "hopper", NVLink: NVLinkPairs, NVLinkLanes: 12, TDPWatts: 400},
	{Type: "h200-141gb", Name: "NVIDIA H200", MemoryBytes: 144384 * mib, ComputeCapability: "9.0", Architecture: "hopper", NVLink: NVLinkAllToAll, NVLinkLanes: 18, TDPWatts: 700},
	{Type: "k80", Name: "Tesla K80", MemoryBytes: 12288 * mib, ComputeCapability: "3.7", Architecture: "kepler", BoardPairs: true, TDPWatts: 150},
	{Type: "l4", Name: "NVIDIA L4", MemoryBytes: 24576 * mib, ComputeCapability: "8.9", Architecture: "ada", TDPWatts: 72},
	{Type: "l40", Name: "NVIDIA L40", MemoryBytes: 49152 * mib, ComputeCapability: "8.9", Architecture: "ada", TDPWatts: 300},
	{Type: "l40s", Name: "NVIDIA L40S", MemoryBytes: 49152 * mib, ComputeCapability: "8.9", Architecture: "ada", TDPWatts: 350},
	{Type: "p100", Name: "Tesla P100-PCIE-16GB", MemoryBytes: 16384 * mib, ComputeCapability: "6.0", Architecture: "pascal", TDPWatts: 250},
	{Type: "rtx-a6000", Name: "NVIDIA RTX A6000", MemoryBytes: 49152 * mib, ComputeCapability: "8.6", Architecture: "ampere", TDPWatts: 300},
	{Type: "rtx2080ti", Name: "NVIDIA GeForce RTX 2080 Ti", MemoryBytes: 11264 * mib, ComputeCapability: "7.5", Architecture: "turing", TDPWatts: 250},
	{Type: "rtx6000", Name: "Quadro RTX 6000", MemoryBytes: 24576 * mib, ComputeCapability: "7.5", Architecture: "turing", TDPWatts: 295},
	{Type: "rtx6000-ada", Name: "NVIDIA RTX 6000 Ada Generation", MemoryBytes: 49152 * mib, ComputeCapability: "8.9", Architecture: "ada", TDPWatts: 300},
	{Type: "t4", Name: "Tesla T4", MemoryBytes: 15360 * mib, ComputeCapability: "7.5", Architecture: "turing", TDPWatts: 70},
	{Type: "v100-16gb", Name: "Tesla V100-SXM2-16GB", MemoryBytes: 16384 * mib, ComputeCapability: "7.0", Architecture: "volta", NVLink: NVLinkCubeMesh, NVLinkLanes: 6, TDPWatts: 300},
	{Type: "v100-32gb", Name: "Tesla V100-SXM2-32GB", MemoryBytes: 32768 * mib, ComputeCapability: "7.0", Architecture: "volta", NVLink: NVLinkCubeMesh, NVLinkLanes: 6, TDPWatts: 300},
}

// aliases are short names accepted by CanonicalType and the Static parsers.
var aliases = map[string]TypeKey{
	"a100":         "a100-40gb",
	"h100":         "h100-80gb",
	"h100-nvl":     "h100-94gb",
	"h200":         "h200-141gb",
	"v100":         "v100-16gb",
	"2080ti":       "rtx2080ti",
	"rtx-2080ti":   "rtx2080ti",
	"quadro":       "rtx6000",
	"quadro-6000":  "rtx6000",
	"rtx-6000":     "rtx6000",
	"rtx-6000-ada": "rtx6000-ada",
	"a6000":        "rtx-a6000",
}

// Products returns the table of known products, sorted by type key. The
// canonical keys are:
//
//	key          product (as NVML names it)            memory  cc    NVLink on the standard board
//	a10          NVIDIA A10                             24 GiB  8.6   none
//	a100-40gb    NVIDIA A100-SXM4-40GB / A100-PCIE-40GB  40 GiB  8.0   all-to-all, 12 lanes (NVSwitch), islands of 8
//	a100-80gb    NVIDIA A100-SXM4-80GB / A100 80GB PCIe  80 GiB  8.0   all-to-all, 12 lanes (NVSwitch), islands of 8
//	a10g         NVIDIA A10G                            24 GiB  8.6   none
//	a30          NVIDIA A30                             24 GiB  8.0   none
//	a40          NVIDIA A40                             48 GiB  8.6   none
//	b200         NVIDIA B200                           180 GiB 10.0   all-to-all, 18 lanes, islands of 8
//	gb200        NVIDIA GB200                          186 GiB 10.0   all-to-all, 18 lanes (NVL72 domain)
//	h100-80gb    NVIDIA H100 80GB HBM3 / H100 PCIe       80 GiB  9.0   all-to-all, 18 lanes, islands of 8
//	h100-94gb    NVIDIA H100 NVL                         94 GiB  9.0   bridged pairs, 12 lanes
//	h200-141gb   NVIDIA H200 / H200 NVL                 141 GiB  9.0   all-to-all, 18 lanes, islands of 8
//	k80          Tesla K80                               12 GiB  3.7   none; 2 GPUs per board
//	l4           NVIDIA L4                               24 GiB  8.9   none
//	l40          NVIDIA L40                              48 GiB  8.9   none
//	l40s         NVIDIA L40S                             48 GiB  8.9   none
//	p100         Tesla P100-PCIE-16GB / -12GB / SXM2     16 GiB  6.0   none
//	rtx-a6000    NVIDIA RTX A6000                        48 GiB  8.6   none
//	rtx2080ti    NVIDIA GeForce RTX 2080 Ti              11 GiB  7.5   none (servers rarely fit the 2-way bridge)
//	rtx6000      Quadro RTX 6000                         24 GiB  7.5   none
//	rtx6000-ada  NVIDIA RTX 6000 Ada Generation          48 GiB  8.9   none
//	t4           Tesla T4                                15 GiB  7.5   none
//	v100-16gb    Tesla V100-SXM2-16GB / -PCIE-16GB       16 GiB  7.0   DGX-1 hybrid cube-mesh
//	v100-32gb    Tesla V100-SXM2-32GB / V100S-PCIE-32GB  32 GiB  7.0   DGX-1 hybrid cube-mesh
//
// Aliases accepted wherever a type is parsed: a100→a100-40gb, h100→h100-80gb,
// h100-nvl→h100-94gb, h200→h200-141gb, v100→v100-16gb, 2080ti and
// rtx-2080ti→rtx2080ti, quadro, quadro-6000 and rtx-6000→rtx6000,
// rtx-6000-ada→rtx6000-ada, a6000→rtx-a6000.
//
// The returned slice is a copy.
func Products() []Product { return slices.Clone(products) }

// LookupProduct returns the table entry for a canonical key (aliases are
// not resolved; see CanonicalType).
func LookupProduct(t TypeKey) (Product, bool) {
	i, ok := slices.BinarySearchFunc(products, t, func(p Product, t TypeKey) int { return strings.Compare(string(p.Type), string(t)) })
	if !ok {
		return Product{}, false
	}
	return products[i], true
}

// ValidTypeKey reports whether s is a well-formed type key: 1 to 64
// characters of [a-z0-9-], not starting or ending with '-'.
func ValidTypeKey(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// CanonicalType resolves a type written by a user: a canonical key, an
// alias (see Products) or any other well-formed key, which is kept as is so
// that simulators can use types outside the table. Upper case is folded.
// It fails with ErrInvalid on a malformed key.
func CanonicalType(s string) (TypeKey, error) {
	t, problem := canonicalType(s)
	if problem != "" {
		return "", fmt.Errorf("%w: %s", ErrInvalid, problem)
	}
	return t, nil
}

func canonicalType(s string) (TypeKey, string) {
	k := strings.ToLower(strings.TrimSpace(s))
	if t, ok := aliases[k]; ok {
		return t, ""
	}
	if !ValidTypeKey(k) {
		return "", fmt.Sprintf("type %q: want 1-64 characters of [a-z0-9-]", s)
	}
	return TypeKey(k), ""
}

// typeRule maps product-name tokens to a key. A rule matches when one of
// any and all of all are tokens of the normalised name, and the memory, if
// the rule sets minGiB, is at least that.
type typeRule struct {
	key    TypeKey
	any    []string
	all    []string
	minGiB uint64
}

// rules are tried in order; more specific first.
var rules = []typeRule{
	{key: "gb200", any: []string{"GB200"}},
	{key: "b200", any: []string{"B200"}},
	{key: "h200-141gb", any: []string{"H200"}},
	{key: "h100-94gb", any: []string{"H100"}, all: []string{"NVL"}},
	{key: "h100-80gb", any: []string{"H100"}},
	{key: "a100-80gb", any: []string{"A100"}, minGiB: 60},
	{key: "a100-40gb", any: []string{"A100"}},
	{key: "a10g", any: []string{"A10G"}},
	{key: "a10", any: []string{"A10"}},
	{key: "a30", any: []string{"A30"}},
	{key: "a40", any: []string{"A40"}},
	{key: "l40s", any: []string{"L40S"}},
	{key: "l40", any: []string{"L40"}},
	{key: "l4", any: []string{"L4"}},
	{key: "t4", any: []string{"T4"}},
	{key: "v100-32gb", any: []string{"V100", "V100S"}, minGiB: 24},
	{key: "v100-16gb", any: []string{"V100", "V100S"}},
	{key: "p100", any: []string{"P100"}},
	{key: "k80", any: []string{"K80"}},
	{key: "rtx2080ti", any: []string{"2080TI"}},
	{key: "rtx2080ti", any: []string{"2080"}, all: []string{"TI"}},
	{key: "rtx6000-ada", any: []string{"6000"}, all: []string{"RTX", "ADA"}},
	{key: "rtx-a6000", any: []string{"A6000"}},
	{key: "rtx6000", any: []string{"6000"}, all: []string{"RTX"}},
}

// vendorWords are dropped from product names before matching or deriving.
var vendorWords = []string{"MOCK", "NVIDIA", "TESLA", "GEFORCE", "QUADRO"}

// nameTokens splits a product name into upper-case alphanumeric tokens,
// without vendor words, and the memory in GiB named by a token like "40GB"
// (0 if none).
func nameTokens(name string) ([]string, uint64) {
	fields := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	var toks []string
	var gib uint64
	for _, f := range fields {
		if slices.Contains(vendorWords, f) {
			continue
		}
		if n, ok := strings.CutSuffix(f, "GB"); ok && n != "" {
			if v, err := strconv.ParseUint(n, 10, 32); err == nil && gib == 0 {
				gib = v
			}
		}
		toks = append(toks, f)
	}
	return toks, gib
}

// TypeFromProduct returns the canonical key for a product name as NVML
// reports it ("NVIDIA A100-SXM4-40GB", "Tesla T4", "Mock NVIDIA
// A100-SXM4-40GB"). memoryBytes, when non-zero, separates variants whose
// names omit the memory size (A100 PCIe 40/80 GB, V100 16/32 GB). A product
// outside the table gets a key derived from its name alone: the lower-case
// alphanumeric words without vendor words (NVIDIA, Tesla, GeForce, Quadro,
// Mock), joined by '-', cut to 64 characters ("AMD Instinct MI300X" →
// "amd-instinct-mi300x"); an empty name gives "unknown". The same inputs
// always give the same key.
func TypeFromProduct(name string, memoryBytes uint64) TypeKey {
	toks, gib := nameTokens(name)
	if gib == 0 {
		gib = (memoryBytes + (1<<30)/2) >> 30
	}
	for _, r := range rules {
		if !slices.ContainsFunc(r.any, func(s string) bool { return slices.Contains(toks, s) }) {
			continue
		}
		if slices.ContainsFunc(r.all, func(s string) bool { return !slices.Contains(toks, s) }) {
			continue
		}
		if r.minGiB > 0 && gib < r.minGiB {
			continue
		}
		return r.key
	}
	key := strings.ToLower(strings.Join(toks, "-"))
	if len(key) > 64 {
		key = strings.TrimRight(key[:64], "-")
	}
	if key == "" {
		return "unknown"
	}
	return TypeKey(key)
}
