package variability

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Table holds a slowdown factor per device and application class: how
// many times longer a step of that class takes on the device than on the
// median device (1 = median, 1.1 = 10% slower). A device or class the
// table does not list has factor 1.
//
// Build it with NewTable and Set (or Measurements.Assign, Bin); once built
// it may be read concurrently. It is not safe to Set while others read.
type Table struct {
	classes []string
	class   map[string]int
	devs    map[string][]float64
}

// NewTable returns an empty table over the given classes (in that order;
// duplicates are dropped).
func NewTable(classes ...string) *Table {
	t := &Table{class: map[string]int{}, devs: map[string][]float64{}}
	for _, c := range classes {
		if _, dup := t.class[c]; !dup {
			t.class[c] = len(t.classes)
			t.classes = append(t.classes, c)
		}
	}
	return t
}

// Set records device's factor for class. A factor that is not finite or
// not > 0, or a class the table was not built with, fails with
// ErrInvalid.
func (t *Table) Set(device, class string, factor float64) error {
	k, ok := t.class[class]
	if !ok {
		return fmt.Errorf("%w: device %q: class %q is not one of %v", ErrInvalid, device, class, t.classes)
	}
	if !(factor > 0) || math.IsInf(factor, 0) {
		return fmt.Errorf("%w: device %q, class %q: factor %v is not finite and > 0", ErrInvalid, device, class, factor)
	}
	row := t.devs[device]
	if row == nil {
		row = make([]float64, len(t.classes))
		for i := range row {
			row[i] = 1
		}
		t.devs[device] = row
	}
	row[k] = factor
	return nil
}

// Factor returns device's factor for class, 1 when the table does not
// list either.
func (t *Table) Factor(device, class string) float64 {
	if t == nil {
		return 1
	}
	k, ok := t.class[class]
	row := t.devs[device]
	if !ok || row == nil {
		return 1
	}
	return row[k]
}

// Classes returns the table's classes in order.
func (t *Table) Classes() []string { return slices.Clone(t.classes) }

// Devices returns the devices the table lists, sorted.
func (t *Table) Devices() []string { return slices.Sorted(maps.Keys(t.devs)) }

// HasClass reports whether the table was built with class.
func (t *Table) HasClass(class string) bool {
	_, ok := t.class[class]
	return ok
}
