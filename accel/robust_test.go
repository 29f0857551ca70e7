package accel

import (
	"errors"
	"testing"
)

// Issue 17: a device type that is not a type key is invalid.
func TestValidateRejectsMalformedType(t *testing.T) {
	for _, typ := range []TypeKey{"Not A Key!", "A100", "t4 ", "-t4", "t4/x"} {
		c := Cluster{Nodes: []Node{{Name: "n0", Devices: []Device{{ID: "n0/0", Node: "n0", Type: typ}}}}}
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("type %q: err %v, want ErrInvalid", typ, err)
		}
	}
	c := Cluster{Nodes: []Node{{Name: "n0", Devices: []Device{{ID: "n0/0", Node: "n0", Type: "a100-40gb"}}}}}
	if err := c.Validate(); err != nil {
		t.Errorf("a100-40gb: %v", err)
	}
}
