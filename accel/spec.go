package accel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what a description may ask for, so that a typo cannot make a
// process allocate without bound.
const (
	// MaxSpecDevices is the most devices one description may declare.
	MaxSpecDevices = 1 << 16
	// MaxNodeDevices is the most devices one node may have.
	MaxNodeDevices = 256
	// MaxSpecPairs is the most device pairs (links) a description may
	// produce: the sum over nodes of n(n-1)/2.
	MaxSpecPairs = 1 << 20
)

// Group is a set of identical nodes in a declarative description.
type Group struct {
	// Nodes is the number of nodes; 0 means 1.
	Nodes int `json:"nodes,omitempty"`
	// Devices is the number of devices per node, 1..MaxNodeDevices.
	Devices int `json:"devices"`
	// Type is the device type; aliases are resolved by CanonicalType.
	Type TypeKey `json:"type"`
	// Prefix names the nodes "<prefix>-<k>"; empty means the type key.
	Prefix string `json:"prefix,omitempty"`
	// NVLink overrides the product's board layout: "none", "pairs", "all"
	// or "cube-mesh"; empty means the product default (none for types
	// outside the table).
	NVLink string `json:"nvlink,omitempty"`
	// NVLinkLanes overrides the lanes of a linked pair; 0 means the
	// product's (or 1 for a type outside the table with a layout set).
	NVLinkLanes int `json:"nvlink_lanes,omitempty"`
	// MemoryBytes overrides the product's nominal memory; 0 means default.
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
}

// Spec is a declarative cluster description. Its JSON form is
//
//	{
//	  "groups": [
//	    {"nodes": 6, "devices": 4, "type": "t4"},
//	    {"nodes": 2, "devices": 8, "type": "a100-40gb", "prefix": "dgx"},
//	    {"devices": 8, "type": "rtx2080ti", "nvlink": "pairs", "nvlink_lanes": 2}
//	  ],
//	  "unhealthy": ["dgx-1/3"]
//	}
//
// Unknown fields are rejected. See Group for each field and Build for the
// cluster it produces.
type Spec struct {
	// Groups are built in order; at least one is required.
	Groups []Group `json:"groups"`
	// Unhealthy lists device IDs ("node/index") to mark unhealthy.
	Unhealthy []string `json:"unhealthy,omitempty"`
}

// ParseSpec parses a description into a cluster: JSON (see Spec) when the
// text starts with '{', otherwise the shorthand of ParseShorthand, for
// example "16x4:t4" or "6x4:t4,2x8:a100-40gb,3x8:rtx2080ti".
func ParseSpec(s string) (Cluster, error) {
	var sp Spec
	var err error
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		sp, err = ParseJSONSpec([]byte(t))
	} else {
		sp, err = ParseShorthand(s)
	}
	if err != nil {
		return Cluster{}, err
	}
	return sp.Build()
}

// ParseShorthand parses the compact form: comma-separated groups
// "NODESxDEVICES:TYPE" (nodes × devices per node : type), blanks allowed
// around each part. Errors wrap ErrInvalid and give the group's number
// (from 1) and byte offset.
func ParseShorthand(s string) (Spec, error) {
	var sp Spec
	if strings.TrimSpace(s) == "" {
		return sp, fmt.Errorf("%w: empty description", ErrInvalid)
	}
	off := 0
	for i, part := range strings.Split(s, ",") {
		g, err := parseGroup(part)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: group %d at offset %d (%q): %v", ErrInvalid, i+1, off, strings.TrimSpace(part), err)
		}
		sp.Groups = append(sp.Groups, g)
		off += len(part) + 1
	}
	return sp, nil
}

func parseGroup(part string) (Group, error) {
	count, typ, ok := strings.Cut(part, ":")
	if !ok {
		return Group{}, errors.New("want NODESxDEVICES:TYPE")
	}
	ns, ds, ok := strings.Cut(strings.ToLower(count), "x")
	if !ok {
		return Group{}, errors.New("want NODESxDEVICES before ':'")
	}
	n, err := parseCount(ns, "nodes")
	if err != nil {
		return Group{}, err
	}
	d, err := parseCount(ds, "devices per node")
	if err != nil {
		return Group{}, err
	}
	t, problem := canonicalType(typ)
	if problem != "" {
		return Group{}, errors.New(problem)
	}
	return Group{Nodes: n, Devices: d, Type: t}, nil
}

func parseCount(s, what string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 7 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%s %q is not a positive integer", what, s)
	}
	n, _ := strconv.Atoi(s)
	if n < 1 {
		return 0, fmt.Errorf("%s is %d, want at least 1", what, n)
	}
	return n, nil
}

// ParseJSONSpec parses the JSON form of Spec. Errors wrap ErrInvalid and
// give the byte offset of a syntax or type error.
func ParseJSONSpec(data []byte) (Spec, error) {
	var sp Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return Spec{}, fmt.Errorf("%w: json at offset %d: %v", ErrInvalid, se.Offset, err)
		case errors.As(err, &te):
			return Spec{}, fmt.Errorf("%w: json at offset %d: field %q: %v", ErrInvalid, te.Offset, te.Field, err)
		}
		return Spec{}, fmt.Errorf("%w: json at offset %d: %v", ErrInvalid, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Spec{}, fmt.Errorf("%w: json at offset %d: data after the description", ErrInvalid, dec.InputOffset())
	}
	return sp, nil
}

// Build returns the cluster the description declares:
//
//   - Node names are "<prefix>-<k>", the prefix defaulting to the type key
//     and k counting from 0 per prefix across groups in order: "6x4:t4,
//     2x8:a100-40gb" gives t4-0 … t4-5, a100-40gb-0, a100-40gb-1.
//   - Device IDs are "<node>/<index>", indices 0..devices-1.
//   - Product, memory, compute capability and architecture come from the
//     product table (Products); a type outside it gets only its key.
//   - NUMA nodes follow StandardNUMANode, and every device pair of a node
//     gets a Link with the PCIe distance of StandardPCIe and the NVLink lanes
//     of the group's layout (LayoutLanes).
//   - All devices are healthy except those listed in Unhealthy.
//
// Errors wrap ErrInvalid and name the group or entry.
func (sp Spec) Build() (Cluster, error) {
	if len(sp.Groups) == 0 {
		return Cluster{}, fmt.Errorf("%w: groups is empty", ErrInvalid)
	}
	total, pairs := 0, 0
	gs := make([]Group, len(sp.Groups))
	for i, g := range sp.Groups {
		if g.Nodes == 0 {
			g.Nodes = 1
		}
		switch {
		case g.Nodes < 0 || g.Nodes > MaxSpecDevices:
			return Cluster{}, fmt.Errorf("%w: groups[%d].nodes is %d, want 1..%d", ErrInvalid, i, g.Nodes, MaxSpecDevices)
		case g.Devices < 1 || g.Devices > MaxNodeDevices:
			return Cluster{}, fmt.Errorf("%w: groups[%d].devices is %d, want 1..%d", ErrInvalid, i, g.Devices, MaxNodeDevices)
		case g.NVLinkLanes < 0 || g.NVLinkLanes > 64:
			return Cluster{}, fmt.Errorf("%w: groups[%d].nvlink_lanes is %d, want 0..64", ErrInvalid, i, g.NVLinkLanes)
		}
		t, problem := canonicalType(string(g.Type))
		if problem != "" {
			return Cluster{}, fmt.Errorf("%w: groups[%d].%s", ErrInvalid, i, problem)
		}
		g.Type = t
		if g.Prefix == "" {
			g.Prefix = string(t)
		}
		if !validName(g.Prefix) {
			return Cluster{}, fmt.Errorf("%w: groups[%d].prefix %q: want 1-64 characters of [A-Za-z0-9._-]", ErrInvalid, i, g.Prefix)
		}
		if g.NVLink != "" {
			if _, err := ParseNVLinkLayout(g.NVLink); err != nil {
				return Cluster{}, fmt.Errorf("%w: groups[%d].nvlink: %s", ErrInvalid, i, layoutProblem(g.NVLink))
			}
		}
		total += g.Nodes * g.Devices
		pairs += g.Nodes * g.Devices * (g.Devices - 1) / 2
		if total > MaxSpecDevices || pairs > MaxSpecPairs {
			return Cluster{}, fmt.Errorf("%w: groups[%d]: more than %d devices or %d device pairs in all", ErrInvalid, i, MaxSpecDevices, MaxSpecPairs)
		}
		gs[i] = g
	}
	var c Cluster
	next := make(map[string]int)
	for _, g := range gs {
		p, known := LookupProduct(g.Type)
		layout, lanes, island := p.NVLink, p.NVLinkLanes, p.IslandSize
		if g.NVLink != "" {
			layout, _ = ParseNVLinkLayout(g.NVLink)
		}
		if g.NVLinkLanes > 0 {
			lanes = g.NVLinkLanes
		}
		if lanes == 0 {
			lanes = 1
		}
		mem := p.MemoryBytes
		if g.MemoryBytes > 0 {
			mem = g.MemoryBytes
		}
		for range g.Nodes {
			name := g.Prefix + "-" + strconv.Itoa(next[g.Prefix])
			next[g.Prefix]++
			n := Node{Name: name, Devices: make([]Device, g.Devices)}
			for j := range n.Devices {
				d := Device{
					ID:          name + "/" + strconv.Itoa(j),
					Node:        name,
					Index:       j,
					Type:        g.Type,
					MemoryBytes: mem,
					NUMANode:    StandardNUMANode(j, g.Devices),
					Healthy:     true,
				}
				if known {
					d.Product, d.ComputeCapability, d.Architecture = p.Name, p.ComputeCapability, p.Architecture
				}
				n.Devices[j] = d
			}
			if g.Devices > 1 {
				n.Links = make([]Link, 0, g.Devices*(g.Devices-1)/2)
			}
			for a := 0; a < g.Devices; a++ {
				for b := a + 1; b < g.Devices; b++ {
					n.Links = append(n.Links, Link{A: a, B: b,
						NVLinks: LayoutLanes(layout, lanes, island, a, b),
						PCIe:    StandardPCIe(a, b, g.Devices, p.BoardPairs)})
				}
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	for i, id := range sp.Unhealthy {
		if !c.setHealth(id, false, "marked unhealthy in the description") {
			return Cluster{}, fmt.Errorf("%w: unhealthy[%d]: device %q: %w", ErrInvalid, i, id, ErrNotFound)
		}
	}
	if err := c.Validate(); err != nil {
		return Cluster{}, err
	}
	return c, nil
}

// validName reports whether s is a usable node-name prefix.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
