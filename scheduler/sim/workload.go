package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Errors returned by this package, wrapped with the offending field, row or
// file; test with errors.Is.
var (
	// ErrInvalid reports a malformed workload, profile or configuration.
	ErrInvalid = errors.New("sim: invalid")
	// ErrUnknownApplication reports a workload job whose application has no
	// profile.
	ErrUnknownApplication = errors.New("sim: unknown application")
	// ErrLostJob reports a violated bookkeeping invariant: a job that is
	// neither waiting, running nor completed. It signals a simulator bug.
	ErrLostJob = errors.New("sim: job lost")
)

// JobSpec is one row of a workload: a job, when it arrives and what the
// tuned (or user-requested) configuration is. Rigid baselines run the job
// on Replicas devices with total batch BatchSize; adaptive policies ignore
// both.
type JobSpec struct {
	// Name identifies the job; unique within a workload.
	Name string `json:"name"`
	// Submit is the arrival time, relative to the start of the workload.
	Submit time.Duration `json:"submit"`
	// Application names the model profile (for example "cifar10").
	Application string `json:"application"`
	// Replicas is the requested number of devices (≥ 1).
	Replicas int `json:"replicas"`
	// BatchSize is the requested total batch size (≥ 1).
	BatchSize int `json:"batch_size"`
	// Workers is the job's number of logical workers (EasyScale's W: its
	// world size, with global batch BatchSize, fixed for its whole run, on
	// any devices up to W of one type or several); 0 = not such a job
	// (ReadWorkload: the optional workers column, an empty cell = 0).
	Workers int `json:"workers,omitempty"`
	// Queue names the job's tenant: the leaf queue of Config.Queues it is
	// submitted to (ReadPhilly: the trace's virtual cluster; ReadWorkload:
	// the optional queue column). It is ignored when Config.Queues is
	// empty; "" = none.
	Queue string `json:"queue,omitempty"`
	// TraceDuration is the job's run time in the source trace, when the
	// trace records one (0 = unknown). The simulator does not use it (a
	// job runs until its application's target); hosts derive tenants'
	// shares of GPU-time from it (TraceDuration × Replicas).
	TraceDuration time.Duration `json:"trace_duration,omitempty"`
}

// Workload is a named list of jobs in arrival order.
type Workload struct {
	Name string    `json:"name"`
	Jobs []JobSpec `json:"jobs"`
}

// maxSubmitSeconds bounds submit times (about 31 years) so that they fit a
// time.Duration with room to spare.
const maxSubmitSeconds = 1e9

// ReadWorkload parses a workload in the Pollux layout: a header naming at
// least the columns name, time, application, num_replicas and batch_size
// (in any order; other columns are ignored), then one job per row. time is
// the submit time in seconds (a decimal number); an optional queue column
// sets JobSpec.Queue and an optional workers column JobSpec.Workers (a
// positive integer, or empty). Jobs are returned sorted
// by submit time, ties broken by name. Errors wrap ErrInvalid and name the
// row and column.
func ReadWorkload(r io.Reader) ([]JobSpec, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: workload header: %v", ErrInvalid, err)
	}
	col, err := columns(header, "name", "time", "application", "num_replicas", "batch_size")
	if err != nil {
		return nil, err
	}
	var jobs []JobSpec
	seen := make(map[string]bool)
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: workload row %d: %v", ErrInvalid, row, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) < len(header) {
			return nil, fmt.Errorf("%w: workload row %d has %d fields, want %d", ErrInvalid, row, len(rec), len(header))
		}
		j := JobSpec{Name: strings.TrimSpace(rec[col["name"]]), Application: strings.TrimSpace(rec[col["application"]])}
		if q, ok := col["queue"]; ok {
			j.Queue = strings.TrimSpace(rec[q])
		}
		if j.Name == "" {
			return nil, fmt.Errorf("%w: workload row %d: empty name", ErrInvalid, row)
		}
		if seen[j.Name] {
			return nil, fmt.Errorf("%w: workload row %d: duplicate name %q", ErrInvalid, row, j.Name)
		}
		seen[j.Name] = true
		if j.Application == "" {
			return nil, fmt.Errorf("%w: workload row %d (%s): empty application", ErrInvalid, row, j.Name)
		}
		t, err := strconv.ParseFloat(strings.TrimSpace(rec[col["time"]]), 64)
		if err != nil || math.IsNaN(t) || t < 0 || t > maxSubmitSeconds {
			return nil, fmt.Errorf("%w: workload row %d (%s): time %q", ErrInvalid, row, j.Name, rec[col["time"]])
		}
		j.Submit = time.Duration(math.Round(t * float64(time.Second)))
		if j.Replicas, err = positiveInt(rec[col["num_replicas"]]); err != nil {
			return nil, fmt.Errorf("%w: workload row %d (%s): num_replicas: %v", ErrInvalid, row, j.Name, err)
		}
		if j.BatchSize, err = positiveInt(rec[col["batch_size"]]); err != nil {
			return nil, fmt.Errorf("%w: workload row %d (%s): batch_size: %v", ErrInvalid, row, j.Name, err)
		}
		if w, ok := col["workers"]; ok && w < len(rec) && strings.TrimSpace(rec[w]) != "" {
			if j.Workers, err = positiveInt(rec[w]); err != nil {
				return nil, fmt.Errorf("%w: workload row %d (%s): workers: %v", ErrInvalid, row, j.Name, err)
			}
		}
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b JobSpec) int {
		if a.Submit != b.Submit {
			if a.Submit < b.Submit {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return jobs, nil
}

// positiveInt parses an integer in [1, 1<<30]; a float with no fraction
// ("6.0") is accepted, as some published workloads write counts that way.
func positiveInt(s string) (int, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.Atoi(s); err == nil {
		if v < 1 || v > 1<<30 {
			return 0, fmt.Errorf("%d out of range [1, 2^30]", v)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 1 || f > 1<<30 {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return int(f), nil
}

// columns maps each wanted column name to its index in header.
func columns(header []string, want ...string) (map[string]int, error) {
	col := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, fmt.Errorf("%w: header lacks column %q", ErrInvalid, w)
		}
	}
	return col, nil
}

// LoadWorkloads reads workloads from fsys. If name is a file, it is the one
// workload; if it is a directory, every *.csv file in it is a workload, in
// natural order (workload-2 before workload-10). Each workload is named
// after its file without the extension.
func LoadWorkloads(fsys fs.FS, name string) ([]Workload, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("%w: workload %s: %v", ErrInvalid, name, err)
	}
	files := []string{name}
	if st.IsDir() {
		ents, err := fs.ReadDir(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%w: workload dir %s: %v", ErrInvalid, name, err)
		}
		files = files[:0]
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".csv") {
				files = append(files, path.Join(name, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: workload dir %s has no .csv files", ErrInvalid, name)
		}
		slices.SortFunc(files, naturalCompare)
	}
	out := make([]Workload, 0, len(files))
	for _, f := range files {
		r, err := fsys.Open(f)
		if err != nil {
			return nil, fmt.Errorf("%w: workload %s: %v", ErrInvalid, f, err)
		}
		jobs, err := ReadWorkload(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, Workload{Name: strings.TrimSuffix(path.Base(f), ".csv"), Jobs: jobs})
	}
	return out, nil
}

// naturalCompare orders strings with embedded decimal numbers by value.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:min(da, 18)], 10, 64)
			nb, _ := strconv.ParseUint(b[:min(db, 18)], 10, 64)
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
