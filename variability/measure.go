package variability

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/goodsched/goodsched/accel"
)

// Measured is one measured device's slowdown for one application class.
type Measured struct {
	// ID identifies the device in the measurements (a GPU UUID or index).
	ID string
	// Node is the node it sits in, as the measurements name it.
	Node string
	// Factor is its slowdown against the median device (1 = median).
	Factor float64
}

// Measurements are measured devices per application class.
type Measurements struct {
	// Classes lists the classes, sorted.
	Classes []string
	// Devices holds each class's measured devices, sorted by node, then
	// ID.
	Devices map[string][]Measured
}

// Load reads measurements from fsys at name, which is either
//
//   - a directory laid out as PAL's artifact: profiles.json maps each
//     application class to an aggregated per-run CSV (ReadAggregated),
//     relative to the directory; or
//   - one aggregated CSV (its one class is named "all"); or
//   - a per-device table with PerfVar_<class> columns such as PAL's
//     32gpu-variability.csv (ReadTable).
//
// Errors name the file and wrap ErrInvalid (or the fs error).
func Load(fsys fs.FS, name string) (Measurements, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return Measurements{}, err
	}
	if st.IsDir() {
		return loadDir(fsys, name)
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Measurements{}, err
	}
	head, _, _ := strings.Cut(string(b), "\n")
	if strings.Contains(head, "PerfVar_") {
		m, err := ReadTable(strings.NewReader(string(b)))
		if err != nil {
			return Measurements{}, fmt.Errorf("%s: %w", name, err)
		}
		return m, nil
	}
	devs, err := ReadAggregated(strings.NewReader(string(b)))
	if err != nil {
		return Measurements{}, fmt.Errorf("%s: %w", name, err)
	}
	return Measurements{Classes: []string{"all"}, Devices: map[string][]Measured{"all": devs}}, nil
}

func loadDir(fsys fs.FS, dir string) (Measurements, error) {
	pj := path.Join(dir, "profiles.json")
	b, err := fs.ReadFile(fsys, pj)
	if err != nil {
		return Measurements{}, fmt.Errorf("%w: %s: a variability directory needs profiles.json (class → aggregated CSV): %w", ErrInvalid, dir, err)
	}
	var files map[string]string
	if err := json.Unmarshal(b, &files); err != nil {
		return Measurements{}, fmt.Errorf("%w: %s: %w", ErrInvalid, pj, err)
	}
	if len(files) == 0 {
		return Measurements{}, fmt.Errorf("%w: %s names no class", ErrInvalid, pj)
	}
	m := Measurements{Devices: map[string][]Measured{}}
	read := map[string][]Measured{} // one read per file (PAL's B and C share BERT's)
	for class, file := range files {
		m.Classes = append(m.Classes, class)
		if devs, ok := read[file]; ok {
			m.Devices[class] = devs
			continue
		}
		p := path.Join(dir, file)
		f, err := fsys.Open(p)
		if err != nil {
			return Measurements{}, fmt.Errorf("%w: %s: class %q: %w", ErrInvalid, pj, class, err)
		}
		devs, err := ReadAggregated(f)
		f.Close()
		if err != nil {
			return Measurements{}, fmt.Errorf("%s: %w", p, err)
		}
		read[file] = devs
		m.Devices[class] = devs
	}
	slices.Sort(m.Classes)
	return m, nil
}

// ReadAggregated reads one application's per-run measurements, as PAL's
// aggregated_data CSVs hold them: one row per (run, GPU) with at least the
// columns uuid, perf (the run's performance metric, larger = slower; PAL
// normalises it by the median) and the GPU's node (column cab-node, or
// cabinet and node, or node alone). A device's factor is the median over its runs of perf / the
// median perf of all rows, as PAL's simulator computes it.
//
// A missing column, or a perf that is not finite and > 0, fails with
// ErrInvalid naming the column or row.
func ReadAggregated(r io.Reader) ([]Measured, error) {
	rows, col, err := readCSV(r, []string{"uuid", "perf"}, []string{"cab-node", "node"})
	if err != nil {
		return nil, err
	}
	nodeOf := func(rec []string) string {
		switch {
		case col["cab-node"] >= 0:
			return rec[col["cab-node"]]
		case hasCol(col, "cabinet"):
			return rec[col["cabinet"]] + "-" + rec[col["node"]]
		}
		return rec[col["node"]]
	}
	type dev struct {
		node  string
		perfs []float64
	}
	devs := map[string]*dev{}
	var all []float64
	for i, rec := range rows {
		v, err := strconv.ParseFloat(rec[col["perf"]], 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: row %d: perf %q is not a finite number > 0", ErrInvalid, i+2, rec[col["perf"]])
		}
		id := rec[col["uuid"]]
		if id == "" {
			return nil, fmt.Errorf("%w: row %d: empty uuid", ErrInvalid, i+2)
		}
		d := devs[id]
		if d == nil {
			d = &dev{node: nodeOf(rec)}
			devs[id] = d
		}
		d.perfs = append(d.perfs, v)
		all = append(all, v)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrInvalid)
	}
	med := median(all)
	out := make([]Measured, 0, len(devs))
	for id, d := range devs {
		out = append(out, Measured{ID: id, Node: d.node, Factor: median(d.perfs) / med})
	}
	sortMeasured(out)
	return out, nil
}

// ReadTable reads a per-device table such as PAL's 32gpu-variability.csv:
// columns GPU_ID, Node_ID and one PerfVar_<class> column per class, each
// a slowdown factor (1 = median). A missing column, a duplicate GPU_ID or
// a factor that is not finite and > 0 fails with ErrInvalid naming the
// row.
func ReadTable(r io.Reader) (Measurements, error) {
	rows, col, err := readCSV(r, []string{"GPU_ID", "Node_ID"}, nil)
	if err != nil {
		return Measurements{}, err
	}
	m := Measurements{Devices: map[string][]Measured{}}
	classCol := map[string]int{}
	for name, k := range col {
		if c, ok := strings.CutPrefix(name, "PerfVar_"); ok && c != "" {
			m.Classes = append(m.Classes, c)
			classCol[c] = k
		}
	}
	if len(m.Classes) == 0 {
		return Measurements{}, fmt.Errorf("%w: no PerfVar_<class> column", ErrInvalid)
	}
	slices.Sort(m.Classes)
	seen := map[string]bool{}
	for i, rec := range rows {
		id := rec[col["GPU_ID"]]
		if id == "" || seen[id] {
			return Measurements{}, fmt.Errorf("%w: row %d: GPU_ID %q is empty or repeated", ErrInvalid, i+2, id)
		}
		seen[id] = true
		for _, c := range m.Classes {
			s := rec[classCol[c]]
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return Measurements{}, fmt.Errorf("%w: row %d (GPU_ID %s): PerfVar_%s %q is not a finite number > 0", ErrInvalid, i+2, id, c, s)
			}
			m.Devices[c] = append(m.Devices[c], Measured{ID: id, Node: rec[col["Node_ID"]], Factor: v})
		}
	}
	if len(rows) == 0 {
		return Measurements{}, fmt.Errorf("%w: no rows", ErrInvalid)
	}
	for _, c := range m.Classes {
		sortMeasured(m.Devices[c])
	}
	return m, nil
}

// readCSV reads a CSV with a header; every name in need must be a column,
// and at least one of oneOf (when given). col maps every header name to
// its position (−1 for absent names of need and oneOf).
func readCSV(r io.Reader, need, oneOf []string) ([][]string, map[string]int, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%w: empty file", ErrInvalid)
		}
		return nil, nil, fmt.Errorf("%w: header: %w", ErrInvalid, err)
	}
	col := map[string]int{}
	for _, n := range slices.Concat(need, oneOf) {
		col[n] = -1
	}
	for k, h := range head {
		col[strings.TrimSpace(h)] = k
	}
	for _, n := range need {
		if col[n] < 0 {
			return nil, nil, fmt.Errorf("%w: missing column %q", ErrInvalid, n)
		}
	}
	if len(oneOf) > 0 && !slices.ContainsFunc(oneOf, func(n string) bool { return col[n] >= 0 }) {
		return nil, nil, fmt.Errorf("%w: missing column: one of %q", ErrInvalid, oneOf)
	}
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return rows, col, nil
}

func sortMeasured(ms []Measured) {
	slices.SortFunc(ms, func(a, b Measured) int { return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.ID, b.ID)) })
}

// median returns the median of vs (the mean of the middle two for an
// even count, as numpy); vs is reordered.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// Assign maps the measured devices onto c's devices, deterministically,
// and returns their factors as a Table over m's classes. Per class, the
// measured nodes (sorted by name) are spread evenly over c's nodes (node
// j of N takes measured node ⌊j·M/N⌋ of M when N ≤ M, else j mod M), and
// a node's k-th device takes its measured node's k-th device (wrapping
// around), so devices measured together stay together. Unhealthy and MIG
// devices are mapped like the others.
func (m Measurements) Assign(c accel.Cluster) (*Table, error) {
	t := NewTable(m.Classes...)
	for _, class := range m.Classes {
		var nodes [][]Measured
		for _, d := range m.Devices[class] {
			if len(nodes) == 0 || nodes[len(nodes)-1][0].Node != d.Node {
				nodes = append(nodes, nil)
			}
			nodes[len(nodes)-1] = append(nodes[len(nodes)-1], d)
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("%w: class %q has no measured device", ErrInvalid, class)
		}
		M, N := len(nodes), len(c.Nodes)
		for j, n := range c.Nodes {
			src := nodes[j%M]
			if N <= M {
				src = nodes[j*M/N]
			}
			for k, d := range n.Devices {
				if err := t.Set(d.ID, class, src[k%len(src)].Factor); err != nil {
					return nil, err
				}
			}
		}
	}
	return t, nil
}

// PALClass returns the application class PAL's simulator gives a model
// (classA: compute-bound, ResNet-like; classB and classC: BERT-like;
// classD: memory-bound), extended to the applications of Sia's and
// Pollux's workloads: imagenet, yolov3 and resnet50 → classA; bert,
// deepspeech2, gnmt, transformer, gpt → classB; cifar10 and resnet18 →
// classC; ncf, mobilenet, shufflenet, lstm, pagerank → classD. Anything
// else is classB, PAL's default.
func PALClass(app string) string {
	switch strings.ToLower(app) {
	case "imagenet", "resnet50", "resnet", "yolov3", "alexnet", "sgemm":
		return "classA"
	case "cifar10", "resnet18":
		return "classC"
	case "ncf", "mobilenet", "shufflenet", "lstm", "pagerank":
		return "classD"
	}
	return "classB"
}

func hasCol(col map[string]int, name string) bool {
	k, ok := col[name]
	return ok && k >= 0
}
