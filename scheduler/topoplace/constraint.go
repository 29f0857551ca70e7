package topoplace

import (
	"errors"
	"fmt"
	"math"

	"github.com/goodsched/goodsched/accel/topology"
)

// Errors of this package, wrapped with the offending job, field or value:
// test with errors.Is. A level name that the topology lacks wraps
// topology.ErrUnknownLevel instead.
var (
	// ErrInvalid reports a malformed Constraint or Placer setting.
	ErrInvalid = errors.New("topoplace: invalid")
)

// NodeLevel names the node as a level: a Constraint with Required
// NodeLevel keeps the gang on one node. A topology with a level of this
// name (Kubernetes' hostname label as Kueue's last level) uses its own.
const NodeLevel = "kubernetes.io/hostname"

// Slice asks that the gang be cut into groups of Size devices, each group
// inside one domain of Level (Kueue's slice-required-topology with
// slice-size; Volcano's partitionPolicy).
type Slice struct {
	// Level is the level each group must sit in one domain of.
	Level string `json:"level"`
	// Size is the group's device count (≥ 1).
	Size int `json:"size"`
}

// Constraint is what one job asks of the topology. The zero value asks
// nothing: the strategy's own preferences apply.
type Constraint struct {
	// Required is a level every device of the gang must share one domain
	// of; "" = none. A gang no domain of it can hold now waits
	// (placement.ReasonTopology).
	Required string `json:"required,omitempty"`
	// Preferred is a level the gang should fit in one domain of, spilling
	// over to outer levels when none can; "" = none. It must not be
	// outside Required.
	Preferred string `json:"preferred,omitempty"`
	// Slices cut the gang into groups, outermost level first, each level
	// strictly inside the previous one, each size dividing the previous
	// one; the gang's count must be a multiple of the first size (or it
	// waits with placement.ReasonTopology). Each slice level must not be
	// outside Required.
	Slices []Slice `json:"slices,omitempty"`
	// Balanced spreads a gang that needs several sub-domains of its scope
	// evenly over as few of them as can hold it (Kueue's example: 12 on
	// two domains of 10 free is 6+6, not 10+2).
	Balanced bool `json:"balanced,omitempty"`
}

// levelOf returns the depth of a level name: 0 = outermost, len(levels) =
// the node.
func levelOf(levels []topology.Level, name string) (int, error) {
	for i, l := range levels {
		if l.Name == name {
			return i, nil
		}
	}
	if name == NodeLevel {
		return len(levels), nil
	}
	return 0, fmt.Errorf("%w: %q", topology.ErrUnknownLevel, name)
}

// resolved is a Constraint in level depths (-1 = none).
type resolved struct {
	required, preferred int
	slices              []int // unit per depth 0..len(levels) (1 = none)
	first               int   // the outermost slice size (1 = none)
	balanced            bool
}

// Validate checks c against the topology: known levels, Preferred and
// slice levels not outside Required, slices ordered and dividing.
// Errors wrap topology.ErrUnknownLevel or ErrInvalid and name the field.
func (c Constraint) Validate(top *topology.Topology) error {
	if top == nil {
		return fmt.Errorf("%w: no topology", ErrInvalid)
	}
	_, err := c.resolve(top.Levels())
	return err
}

func (c Constraint) resolve(levels []topology.Level) (resolved, error) {
	r := resolved{required: -1, preferred: -1, first: 1, balanced: c.Balanced}
	var err error
	if c.Required != "" {
		if r.required, err = levelOf(levels, c.Required); err != nil {
			return r, fmt.Errorf("Required: %w", err)
		}
	}
	if c.Preferred != "" {
		if r.preferred, err = levelOf(levels, c.Preferred); err != nil {
			return r, fmt.Errorf("Preferred: %w", err)
		}
		if r.required >= 0 && r.preferred < r.required {
			return r, fmt.Errorf("%w: Preferred %q is outside Required %q", ErrInvalid, c.Preferred, c.Required)
		}
	}
	if len(c.Slices) == 0 {
		return r, nil
	}
	r.slices = make([]int, len(levels)+1)
	for i := range r.slices {
		r.slices[i] = 1
	}
	prevDepth, prevSize := -1, 0
	for i, s := range c.Slices {
		d, err := levelOf(levels, s.Level)
		if err != nil {
			return r, fmt.Errorf("Slices[%d].Level: %w", i, err)
		}
		switch {
		case s.Size < 1:
			return r, fmt.Errorf("%w: Slices[%d].Size %d < 1", ErrInvalid, i, s.Size)
		case r.required >= 0 && d < r.required:
			return r, fmt.Errorf("%w: Slices[%d].Level %q is outside Required %q", ErrInvalid, i, s.Level, c.Required)
		case i > 0 && d <= prevDepth:
			return r, fmt.Errorf("%w: Slices[%d].Level %q is not inside Slices[%d].Level", ErrInvalid, i, s.Level, i-1)
		case i > 0 && prevSize%s.Size != 0:
			return r, fmt.Errorf("%w: Slices[%d].Size %d does not divide Slices[%d].Size %d", ErrInvalid, i, s.Size, i-1, prevSize)
		}
		r.slices[d] = s.Size
		prevDepth, prevSize = d, s.Size
	}
	r.first = c.Slices[0].Size
	return r, nil
}

// keepTable returns the fraction of throughput kept per span depth:
// index 0 = no common domain (the whole cluster), 1+d = innermost common
// domain at depth d, len(levels)+1 = one node (always 1).
func keepTable(levels []topology.Level, keep map[string]float64) ([]float64, error) {
	n := len(levels)
	out := make([]float64, n+2)
	out[n+1] = 1
	if keep == nil {
		// Each tier outward costs a little more: only the order matters.
		for d := n; d >= 0; d-- {
			out[d] = out[d+1] * 0.99
		}
		return out, nil
	}
	for name, v := range keep {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1 {
			return nil, fmt.Errorf("%w: Keep[%q] = %v, want 0 < keep <= 1", ErrInvalid, name, v)
		}
		if name == "" {
			continue
		}
		d, err := levelOf(levels, name)
		if err != nil {
			return nil, fmt.Errorf("Keep: %w", err)
		}
		if d == n {
			return nil, fmt.Errorf("%w: Keep[%q]: a gang on one node keeps all", ErrInvalid, name)
		}
	}
	for d := n - 1; d >= 0; d-- {
		if v, ok := keep[levels[d].Name]; ok {
			out[d+1] = v
		} else {
			out[d+1] = out[d+2]
		}
	}
	if v, ok := keep[""]; ok {
		out[0] = v
	} else {
		out[0] = out[1]
	}
	return out, nil
}
