package scheduler

import (
	"fmt"
	"maps"
	"slices"
)

// checkGrid validates what the grid allows this round (Input.Carbon and
// Input.Envelope).
func checkGrid(in *Input) error {
	s := in.Carbon
	if len(s.Values) > 0 || s.Step != 0 || !s.Start.IsZero() {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%w: Input.Carbon: %w", ErrInvalid, err)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(in.Envelope)) {
		if n := in.Envelope[t]; n < 0 {
			return fmt.Errorf("%w: Input.Envelope[%q] = %d is negative", ErrInvalid, t, n)
		}
	}
	return nil
}
