package variability

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Episode is a stretch of time in which one node's devices run Factor
// times slower than usual (interference from co-located work, a
// throttled node).
type Episode struct {
	// Node names the node, as the cluster does.
	Node string
	// Start and End bound the episode, from the workload's start; it is
	// in effect at t when Start ≤ t < End.
	Start, End time.Duration
	// Factor is the slowdown (> 0, finite; 2 = twice as slow).
	Factor float64
}

// ReadEpisodes reads episodes from a CSV with the header
// node,start,end,factor (times in seconds from the workload's start, as
// decimals). A missing column, a time that is negative or not a number,
// an end before its start, or a factor that is not finite and > 0 fails
// with ErrInvalid naming the row.
func ReadEpisodes(r io.Reader) ([]Episode, error) {
	rows, col, err := readCSV(r, []string{"node", "start", "end", "factor"}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Episode, 0, len(rows))
	for i, rec := range rows {
		row := i + 2
		ep := Episode{Node: rec[col["node"]]}
		if ep.Node == "" {
			return nil, fmt.Errorf("%w: row %d: empty node", ErrInvalid, row)
		}
		var t [2]time.Duration
		for k, name := range []string{"start", "end"} {
			v, err := strconv.ParseFloat(rec[col[name]], 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > float64(math.MaxInt64/int64(time.Second)) {
				return nil, fmt.Errorf("%w: row %d: %s %q is not a time ≥ 0 in seconds", ErrInvalid, row, name, rec[col[name]])
			}
			t[k] = time.Duration(v * float64(time.Second))
		}
		ep.Start, ep.End = t[0], t[1]
		if ep.End < ep.Start {
			return nil, fmt.Errorf("%w: row %d: end %v before start %v", ErrInvalid, row, ep.End, ep.Start)
		}
		f, err := strconv.ParseFloat(rec[col["factor"]], 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: row %d: factor %q is not a finite number > 0", ErrInvalid, row, rec[col["factor"]])
		}
		ep.Factor = f
		out = append(out, ep)
	}
	return out, nil
}
