package goodput

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ProfileRow is one measured configuration of a model profile: Pollux's
// placements.csv and scalability.csv rows and Sia's placements-TYPE.csv and
// scalability-TYPE.csv rows.
type ProfileRow struct {
	// Placement is the digit string of GPUs per node ("44" is two nodes of
	// four); empty for scalability rows, which give only the shape.
	Placement string `json:"placement,omitempty"`
	// Nodes and Replicas are the shape (nodes with at least one replica,
	// total replicas).
	Nodes    int `json:"nodes"`
	Replicas int `json:"replicas"`
	// Local is the per-GPU batch size.
	Local int `json:"local"`
	// StepSeconds is the measured time of one iteration (> 0); SyncSeconds
	// the part of it spent in gradient synchronisation (≥ 0). Readers do not
	// require sync < step (Sia's model-parallel profiles break it), but
	// Observation of such a row fails Observation.Validate.
	StepSeconds float64 `json:"step_seconds"`
	SyncSeconds float64 `json:"sync_seconds"`
}

// Observation converts the row to a fit input: AccumSeconds = step − sync,
// OptimSeconds = step, as Pollux's simulator does.
func (r ProfileRow) Observation() Observation {
	return ObservationFromStep(r.Nodes, r.Replicas, r.Local, r.StepSeconds, r.SyncSeconds)
}

// ValidationRow is one epoch of a Pollux validation-M.csv file: a full
// training run at total batch size M.
type ValidationRow struct {
	// Progress is cumulative progress in scale-invariant iterations.
	Progress float64 `json:"progress"`
	// Iteration is the optimizer step count at the end of the epoch.
	Iteration int `json:"iteration"`
	// Metric is the validation metric (accuracy, mAP, WER, F1, ...).
	Metric float64 `json:"metric"`
	// Grad are the gradient statistics measured in that epoch.
	Grad GradStats `json:"grad"`
}

// SeedRow is one row of a Sia seed profile (seed/MODEL.csv): a one-GPU
// measurement of a model on one accelerator type.
type SeedRow struct {
	// Type is the accelerator type name (Sia's gpu_type).
	Type string `json:"type"`
	ProfileRow
}

// maxProfileRows bounds what a reader accepts, so a hostile input cannot
// exhaust memory.
const maxProfileRows = 1 << 20

// csvTable reads a header and maps required column names to positions.
type csvTable struct {
	r    *csv.Reader
	col  map[string]int
	line int
}

func newTable(r io.Reader, required ...string) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty input, want header %s", ErrParse, strings.Join(required, ","))
		}
		return nil, fmt.Errorf("%w: header: %v", ErrParse, err)
	}
	t := &csvTable{r: cr, col: make(map[string]int, len(head)), line: 1}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.col[h]; dup {
			return nil, fmt.Errorf("%w: header: duplicate column %q", ErrParse, h)
		}
		t.col[h] = i
	}
	for _, name := range required {
		if _, ok := t.col[name]; !ok {
			return nil, fmt.Errorf("%w: header: missing column %q", ErrParse, name)
		}
	}
	return t, nil
}

// next returns the next record, or nil at the end.
func (t *csvTable) next() ([]string, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	t.line++
	if err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrParse, t.line, err)
	}
	if t.line > maxProfileRows {
		return nil, fmt.Errorf("%w: more than %d rows", ErrParse, maxProfileRows)
	}
	return rec, nil
}

func (t *csvTable) float(rec []string, name string, min float64, strict bool) (float64, error) {
	s := strings.TrimSpace(rec[t.col[name]])
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < min || (strict && v <= min) {
		return 0, fmt.Errorf("%w: line %d: column %s: bad value %q", ErrParse, t.line, name, s)
	}
	return v, nil
}

func (t *csvTable) int(rec []string, name string, min int) (int, error) {
	s := strings.TrimSpace(rec[t.col[name]])
	v, err := strconv.Atoi(s)
	if err != nil {
		// An integral decimal such as "20.0" (pandas writes them) counts.
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			v, err = int(f), nil
		}
	}
	if err != nil || v < min {
		return 0, fmt.Errorf("%w: line %d: column %s: bad value %q", ErrParse, t.line, name, s)
	}
	return v, nil
}

// ParsePlacement returns the nodes (non-zero digits) and replicas (sum of
// digits) of a placement digit string such as "1444" (PlacementCounts).
func ParsePlacement(s string) (nodes, replicas int, err error) {
	c, err := PlacementCounts(s)
	for _, k := range c {
		replicas += k
	}
	return len(c), replicas, err
}

// PlacementCounts parses Pollux's placement encoding, one decimal digit
// per node giving the devices used on it, into the devices per node:
// "1444" is [1 4 4 4]. Zeros (nodes without a device) are dropped, as the
// Pollux simulator does. A string that is empty, longer than 4,096
// digits, not all digits or without a device fails with ErrParse.
func PlacementCounts(s string) ([]int, error) {
	if s == "" || len(s) > 4096 {
		return nil, fmt.Errorf("%w: placement %q", ErrParse, s)
	}
	c := make([]int, 0, len(s))
	for i := range len(s) {
		d := s[i]
		if d < '0' || d > '9' {
			return nil, fmt.Errorf("%w: placement %q: not a digit string", ErrParse, s)
		}
		if d != '0' {
			c = append(c, int(d-'0'))
		}
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("%w: placement %q has no replica", ErrParse, s)
	}
	return c, nil
}

// rows parses every remaining record with parse, stopping at the first error.
func rows[T any](t *csvTable, parse func(rec []string) (T, error)) ([]T, error) {
	var out []T
	for {
		rec, err := t.next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return out, nil
		}
		row, err := parse(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
}

// placement fills the placement string and the shape it implies.
func (t *csvTable) placement(rec []string, row *ProfileRow) error {
	row.Placement = strings.TrimSpace(rec[t.col["placement"]])
	var err error
	if row.Nodes, row.Replicas, err = ParsePlacement(row.Placement); err != nil {
		return fmt.Errorf("line %d: %w", t.line, err)
	}
	return nil
}

func (t *csvTable) timing(rec []string, row *ProfileRow) error {
	var err error
	if row.Local, err = t.int(rec, "local_bsz", 1); err != nil {
		return err
	}
	if row.StepSeconds, err = t.float(rec, "step_time", 0, true); err != nil {
		return err
	}
	if row.SyncSeconds, err = t.float(rec, "sync_time", 0, false); err != nil {
		return err
	}
	return nil
}

// ReadPlacements reads a placements file: a header with at least the
// columns placement, local_bsz, step_time, sync_time (any order; Pollux's
// placements.csv and Sia's placements-TYPE.csv both fit), then one row per
// measurement. Times are seconds; step_time > 0, sync_time ≥ 0. Errors wrap
// ErrParse and name the line and column.
func ReadPlacements(r io.Reader) ([]ProfileRow, error) {
	t, err := newTable(r, "placement", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, err
	}
	return rows(t, func(rec []string) (ProfileRow, error) {
		var row ProfileRow
		if err := t.placement(rec, &row); err != nil {
			return row, err
		}
		return row, t.timing(rec, &row)
	})
}

// ReadScalability reads a scalability file: a header with at least the
// columns num_nodes, num_replicas, local_bsz, step_time, sync_time (any
// order), then one row per measurement, with 1 ≤ num_nodes ≤ num_replicas.
func ReadScalability(r io.Reader) ([]ProfileRow, error) {
	t, err := newTable(r, "num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
	if err != nil {
		return nil, err
	}
	return rows(t, func(rec []string) (ProfileRow, error) {
		var row ProfileRow
		var err error
		if row.Nodes, err = t.int(rec, "num_nodes", 1); err != nil {
			return row, err
		}
		if row.Replicas, err = t.int(rec, "num_replicas", row.Nodes); err != nil {
			return row, err
		}
		return row, t.timing(rec, &row)
	})
}

// ReadValidation reads a Pollux validation-M.csv file: the columns
// progress, iteration, metric, grad_sqr, grad_var, one row per epoch.
// Values must be finite; progress, iteration, grad_sqr and grad_var
// non-negative.
func ReadValidation(r io.Reader) ([]ValidationRow, error) {
	t, err := newTable(r, "progress", "iteration", "metric", "grad_sqr", "grad_var")
	if err != nil {
		return nil, err
	}
	return rows(t, func(rec []string) (ValidationRow, error) {
		var row ValidationRow
		var err error
		if row.Progress, err = t.float(rec, "progress", 0, false); err != nil {
			return row, err
		}
		if row.Iteration, err = t.int(rec, "iteration", 0); err != nil {
			return row, err
		}
		if row.Metric, err = t.float(rec, "metric", math.Inf(-1), false); err != nil {
			return row, err
		}
		if row.Grad.Sqr, err = t.float(rec, "grad_sqr", 0, false); err != nil {
			return row, err
		}
		row.Grad.Var, err = t.float(rec, "grad_var", 0, false)
		return row, err
	})
}

// ReadSeed reads a Sia seed profile: the columns gpu_type, local_bsz,
// placement, step_time, sync_time; one-GPU measurements per type.
func ReadSeed(r io.Reader) ([]SeedRow, error) {
	t, err := newTable(r, "gpu_type", "local_bsz", "placement", "step_time", "sync_time")
	if err != nil {
		return nil, err
	}
	return rows(t, func(rec []string) (SeedRow, error) {
		var row SeedRow
		row.Type = strings.TrimSpace(rec[t.col["gpu_type"]])
		if row.Type == "" {
			return row, fmt.Errorf("%w: line %d: empty gpu_type", ErrParse, t.line)
		}
		if err := t.placement(rec, &row.ProfileRow); err != nil {
			return row, err
		}
		return row, t.timing(rec, &row.ProfileRow)
	})
}
