package sim

import (
	"cmp"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
)

// Application is the measured profile of one model: its step and sync
// times per placement and per-device batch on each accelerator type, and
// its gradient statistics and progress per epoch at several total batch
// sizes. It is the simulator's ground truth and is never shown to a
// policy. An Application is immutable once loaded and safe for concurrent
// use.
type Application struct {
	// Name is the model's name, for example "cifar10".
	Name string
	// InitBatch is the batch size the model was tuned for (Pollux's M0):
	// the smallest validated batch size.
	InitBatch int
	// MaxBatch is the largest validated batch size.
	MaxBatch int
	// MinLocal and MaxLocal bound the per-device batch on the default type.
	MinLocal, MaxLocal int
	// MaxEpochs is the number of epochs to the target: the job completes
	// when its progress reaches the final progress of the validation runs.
	MaxEpochs int
	// RestartDelay is the stall on every (re)allocation.
	RestartDelay time.Duration
	// FixedBatch, when > 0, pins the job's total batch size whatever the
	// policy (Pollux pins NCF to 32768), and MaxReplicas, when > 0, caps its
	// device count for adaptive policies (NCF: 1).
	FixedBatch, MaxReplicas int

	defaultType accel.TypeKey
	perf        map[accel.TypeKey]*perfTable
	runs        []validationRun // sorted by batch
	target      float64         // progress at completion
}

type perfPoint struct{ local, step, sync float64 }

// perfTable holds one type's measurements.
type perfTable struct {
	placements map[string][]perfPoint // key: rotation-normalised counts
	shapeKeys  [][2]int64             // (nodes, replicas)
	shapes     [][]perfPoint
	tri        *triangulation
	maxNodes   int
	maxCount   int // largest per-node count seen: devices per node
	minLocal   int
	maxLocal   int
	maxProfRep int // largest replica count measured
}

type validationRun struct {
	batch     int
	progress  []float64
	iteration []float64
	gradSqr   []float64
	gradVar   []float64
}

// Types returns the accelerator types the application has measurements for,
// sorted.
func (a *Application) Types() []accel.TypeKey {
	return slices.Sorted(maps.Keys(a.perf))
}

// DefaultType is the type whose measurements set MinLocal and MaxLocal.
func (a *Application) DefaultType() accel.TypeKey { return a.defaultType }

// TargetProgress is the progress (scale-invariant iterations) at which a
// job of this application completes.
func (a *Application) TargetProgress() float64 { return a.target }

// LocalRange returns the per-device batch bounds measured on typ.
func (a *Application) LocalRange(typ accel.TypeKey) (lo, hi int, ok bool) {
	t := a.perf[typ]
	if t == nil {
		return 0, 0, false
	}
	lo, hi = t.minLocal, t.maxLocal
	if typ == a.defaultType {
		lo, hi = a.MinLocal, a.MaxLocal
	}
	return lo, hi, true
}

// MaxProfiledReplicas is the largest device count measured on typ.
func (a *Application) MaxProfiledReplicas(typ accel.TypeKey) int {
	if t := a.perf[typ]; t != nil {
		return t.maxProfRep
	}
	return 0
}

// normalize drops empty nodes and rotates counts to the lexicographically
// smallest rotation, the key the measurements are stored under.
func normalize(counts []int) []int {
	c := make([]int, 0, len(counts))
	for _, v := range counts {
		if v > 0 {
			c = append(c, v)
		}
	}
	best := slices.Clone(c)
	for i := 1; i < len(c); i++ {
		rot := append(slices.Clone(c[i:]), c[:i]...)
		if slices.Compare(rot, best) < 0 {
			best = rot
		}
	}
	return best
}

func countsKey(c []int) string {
	var b strings.Builder
	for i, v := range c {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}

// StepTime returns the measured (or interpolated) time of one optimizer
// step without accumulation and its all-reduce part, in seconds, for a
// job with counts[i] devices of type typ on its i-th node and per-device
// batch local. A measured placement is interpolated linearly in local;
// any other placement linearly across (nodes, replicas) shapes of the
// placement and scalability measurements. ok is false when typ has no
// measurements or counts is empty.
func (a *Application) StepTime(typ accel.TypeKey, counts []int, local float64) (step, sync float64, ok bool) {
	t := a.perf[typ]
	c := normalize(counts)
	if t == nil || len(c) == 0 || local <= 0 {
		return 0, 0, false
	}
	if pts, found := t.placements[countsKey(c)]; found {
		step, sync = interpLocal(pts, local)
		return step, sync, true
	}
	replicas := 0
	for _, v := range c {
		replicas += v
	}
	nodes := min(len(c), t.maxNodes)
	idx, w, k := t.tri.weights(float64(nodes), float64(replicas))
	for i := 0; i < k; i++ {
		if w[i] == 0 {
			continue
		}
		s, y := interpLocal(t.shapes[idx[i]], local)
		step += w[i] * s
		sync += w[i] * y
	}
	return step, sync, true
}

// interpLocal interpolates step and sync time linearly in the per-device
// batch. Below the measured range the smallest measurement is used; above
// it the last segment is extended (never decreasing).
func interpLocal(pts []perfPoint, x float64) (step, sync float64) {
	n := len(pts)
	if n == 1 || x <= pts[0].local {
		return pts[0].step, pts[0].sync
	}
	i, _ := slices.BinarySearchFunc(pts, x, func(p perfPoint, x float64) int { return cmp.Compare(p.local, x) })
	if i >= n {
		a, b := pts[n-2], pts[n-1]
		slope := max((b.step-a.step)/(b.local-a.local), 0)
		return b.step + slope*(x-b.local), b.sync
	}
	b := pts[i]
	if b.local == x {
		return b.step, b.sync
	}
	a := pts[i-1]
	f := (x - a.local) / (b.local - a.local)
	return a.step + f*(b.step-a.step), a.sync + f*(b.sync-a.sync)
}

// bracket returns the validation runs around batch (clamped to the
// validated range) and the weight of the upper one.
func (a *Application) bracket(batch float64) (lo, hi *validationRun, f float64) {
	r := a.runs
	if batch <= float64(r[0].batch) {
		return &r[0], &r[0], 0
	}
	if batch >= float64(r[len(r)-1].batch) {
		return &r[len(r)-1], &r[len(r)-1], 0
	}
	i := searchRuns(r, batch)
	lo, hi = &r[i-1], &r[i]
	return lo, hi, (batch - float64(lo.batch)) / float64(hi.batch-lo.batch)
}

func searchRuns(r []validationRun, batch float64) int {
	i, _ := slices.BinarySearchFunc(r, batch, func(v validationRun, b float64) int { return cmp.Compare(float64(v.batch), b) })
	return i
}

// GradStats returns the gradient statistics (squared norm and variance of
// the gradient, Pollux's grad_sqr and grad_var) during epoch at total batch
// size batch, interpolated linearly between the two nearest validated batch
// sizes. epoch is clamped to [0, MaxEpochs-1].
func (a *Application) GradStats(batch float64, epoch int) (sqr, variance float64) {
	lo, hi, f := a.bracket(batch)
	e := min(max(epoch, 0), a.MaxEpochs-1)
	sqr = lo.gradSqr[e] + f*(hi.gradSqr[e]-lo.gradSqr[e])
	variance = lo.gradVar[e] + f*(hi.gradVar[e]-lo.gradVar[e])
	return sqr, variance
}

// Gain is the statistical efficiency gain of one step at total batch size
// batch during epoch: how many steps at InitBatch it is worth,
// (var + sqr) / (var/scale + sqr) with scale = batch / InitBatch.
func (a *Application) Gain(batch float64, epoch int) float64 {
	sqr, v := a.GradStats(batch, epoch)
	scale := batch / float64(a.InitBatch)
	den := v/scale + sqr
	if !(den > 0) || !(v+sqr > 0) {
		return 1
	}
	return (v + sqr) / den
}

// EpochProgress returns the progress at the end of epoch e (1-based; 0 for
// e ≤ 0): the smallest value over the validation runs.
func (a *Application) EpochProgress(e int) float64 {
	if e <= 0 {
		return 0
	}
	e = min(e, a.MaxEpochs)
	p := math.Inf(1)
	for _, r := range a.runs {
		p = min(p, r.progress[e-1])
	}
	return p
}

// Iterations returns the optimizer steps taken by the end of epoch index e
// (0-based, clamped) at total batch size batch, interpolated between the
// validated batch sizes. The Optimus oracle uses it for remaining work.
func (a *Application) Iterations(batch float64, e int) float64 {
	lo, hi, f := a.bracket(batch)
	e = min(max(e, 0), a.MaxEpochs-1)
	return lo.iteration[e] + f*(hi.iteration[e]-lo.iteration[e])
}

// ProfileOptions says how to read a profile directory. The zero value reads
// the Pollux layout with the default type "t4".
type ProfileOptions struct {
	// DefaultType is the type of placements.csv and scalability.csv
	// (default "t4", the Pollux measurements on g4dn.12xlarge).
	DefaultType accel.TypeKey
	// Suffixes maps the suffix of placements-<suffix>.csv and
	// scalability-<suffix>.csv (Sia's per-type layout) to a type. Files
	// with an unmapped suffix are skipped. nil = DefaultSuffixes().
	Suffixes map[string]accel.TypeKey
	// RestartDelay is the stall on each (re)allocation for models not in
	// RestartDelays (default 30 s).
	RestartDelay time.Duration
	// RestartDelays overrides RestartDelay per model.
	RestartDelays map[string]time.Duration
}

// DefaultSuffixes maps Sia's file suffixes to accel type keys: aws (4× T4
// per node) → t4, dgx-ext (8× A100-40GB) → a100-40gb, azure (8× V100
// 32GB) → v100-32gb, quad (4× Quadro RTX 6000) → rtx6000 and rtx (8× RTX
// 2080 Ti) → rtx2080ti.
// "dgx" is left out: "dgx-ext" is the same machine with a wider batch range.
func DefaultSuffixes() map[string]accel.TypeKey {
	return map[string]accel.TypeKey{
		"aws": "t4", "dgx-ext": "a100-40gb", "azure": "v100-32gb", "quad": "rtx6000", "rtx": "rtx2080ti",
	}
}

// modelDefaults returns the per-model settings of the Pollux simulator:
// epochs to the target, YOLOv3's per-device batch cap, and NCF's pinned
// batch and single device.
func modelDefaults(name string) (epochs, maxLocal, fixedBatch, maxReplicas int) {
	switch name {
	case "bert":
		return 2, 0, 0, 0
	case "cifar10":
		return 100, 0, 0, 0
	case "ncf":
		return 10, 0, 32768, 1
	case "imagenet":
		return 90, 0, 0, 0
	case "deepspeech2":
		return 80, 0, 0, 0
	case "yolov3":
		return 50, 8, 0, 0
	}
	return 0, 0, 0, 0
}

// ProfileSource is one directory of model profiles inside a file system:
// one sub-directory per model holding any of placements*.csv,
// scalability*.csv and validation-<batch>.csv.
type ProfileSource struct {
	FS  fs.FS
	Dir string
}

// LoadProfiles reads the applications found in the sources and merges them
// by model name: throughput measurements per type from the first source
// that has that type, and validation runs from the first source that has
// them. Models that end up without validation runs or without throughput
// measurements are left out; it is an error if no model is complete, or
// if a file is malformed. The result maps model name to application.
func LoadProfiles(opts ProfileOptions, sources ...ProfileSource) (map[string]*Application, error) {
	if opts.DefaultType == "" {
		opts.DefaultType = "t4"
	}
	if opts.Suffixes == nil {
		opts.Suffixes = DefaultSuffixes()
	}
	if opts.RestartDelay == 0 {
		opts.RestartDelay = 30 * time.Second
	}
	if opts.RestartDelay < 0 {
		return nil, fmt.Errorf("%w: RestartDelay %v is negative", ErrInvalid, opts.RestartDelay)
	}
	apps := make(map[string]*Application)
	for _, src := range sources {
		ents, err := fs.ReadDir(src.FS, src.Dir)
		if err != nil {
			return nil, fmt.Errorf("%w: profiles %s: %v", ErrInvalid, src.Dir, err)
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			a := apps[name]
			if a == nil {
				a = &Application{Name: name, perf: make(map[accel.TypeKey]*perfTable)}
			}
			if err := a.load(src.FS, path.Join(src.Dir, name), opts); err != nil {
				return nil, err
			}
			if len(a.perf) > 0 || len(a.runs) > 0 {
				apps[name] = a
			}
		}
	}
	var firstErr error
	for _, name := range slices.Sorted(maps.Keys(apps)) {
		a := apps[name]
		if len(a.runs) == 0 || len(a.perf) == 0 {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: model %s lacks validation runs or throughput measurements", ErrInvalid, name)
			}
			delete(apps, name)
			continue
		}
		if err := a.finish(opts); err != nil {
			return nil, err
		}
	}
	if len(apps) == 0 {
		if firstErr != nil {
			return nil, firstErr
		}
		return nil, fmt.Errorf("%w: no model profiles found", ErrInvalid)
	}
	return apps, nil
}

type rawTable struct {
	placements map[string][]perfPoint
	scal       map[[2]int64][]perfPoint
	maxCount   int
}

// load reads one model directory.
func (a *Application) load(fsys fs.FS, dir string, opts ProfileOptions) error {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return fmt.Errorf("%w: profile %s: %v", ErrInvalid, dir, err)
	}
	raw := make(map[accel.TypeKey]*rawTable)
	get := func(t accel.TypeKey) *rawTable {
		if raw[t] == nil {
			raw[t] = &rawTable{placements: map[string][]perfPoint{}, scal: map[[2]int64][]perfPoint{}}
		}
		return raw[t]
	}
	haveRuns := len(a.runs) > 0
	for _, e := range ents {
		fn := e.Name()
		if e.IsDir() || !strings.HasSuffix(fn, ".csv") {
			continue
		}
		base := strings.TrimSuffix(fn, ".csv")
		p := path.Join(dir, fn)
		switch {
		case strings.HasPrefix(base, "validation-"):
			if haveRuns {
				continue
			}
			b, err := strconv.Atoi(strings.TrimPrefix(base, "validation-"))
			if err != nil || b < 1 {
				return fmt.Errorf("%w: %s: batch size in file name", ErrInvalid, p)
			}
			run, err := readValidation(fsys, p, b)
			if err != nil {
				return err
			}
			a.runs = append(a.runs, run)
		case strings.HasPrefix(base, "placements"), strings.HasPrefix(base, "scalability"):
			kind, suffix, _ := strings.Cut(base, "-")
			typ := opts.DefaultType
			if suffix != "" {
				t, ok := opts.Suffixes[suffix]
				if !ok {
					continue
				}
				typ = t
			}
			if _, done := a.perf[typ]; done {
				continue // an earlier source has this type
			}
			if err := readPerf(fsys, p, kind == "placements", get(typ)); err != nil {
				return err
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(raw)) {
		pt, err := buildTable(raw[t])
		if err != nil {
			return fmt.Errorf("%w: profile %s type %s: %v", ErrInvalid, dir, t, err)
		}
		a.perf[t] = pt
	}
	return nil
}

// readValidation reads one validation-<batch>.csv with goodput's reader and
// adds what the simulator needs on top: at least one epoch and progress
// that never decreases.
func readValidation(fsys fs.FS, p string, batch int) (validationRun, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return validationRun{}, fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
	}
	defer f.Close()
	rows, err := goodput.ReadValidation(f)
	if err != nil {
		return validationRun{}, fmt.Errorf("%w: %s: %w", ErrInvalid, p, err)
	}
	if len(rows) == 0 {
		return validationRun{}, fmt.Errorf("%w: %s: no data rows", ErrInvalid, p)
	}
	run := validationRun{batch: batch}
	for i, r := range rows {
		if i > 0 && r.Progress < run.progress[i-1] {
			return validationRun{}, fmt.Errorf("%w: %s row %d: progress decreases", ErrInvalid, p, i+1)
		}
		run.progress = append(run.progress, r.Progress)
		run.iteration = append(run.iteration, float64(r.Iteration))
		run.gradSqr = append(run.gradSqr, r.Grad.Sqr)
		run.gradVar = append(run.gradVar, r.Grad.Var)
	}
	return run, nil
}

// readPerf reads one placements or scalability file with goodput's reader
// into rt; a sync time above the step time is cut to it.
func readPerf(fsys fs.FS, p string, placements bool, rt *rawTable) error {
	f, err := fsys.Open(p)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, p, err)
	}
	defer f.Close()
	read := goodput.ReadScalability
	if placements {
		read = goodput.ReadPlacements
	}
	rows, err := read(f)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, p, err)
	}
	if len(rows) == 0 {
		return fmt.Errorf("%w: %s: no data rows", ErrInvalid, p)
	}
	for i, r := range rows {
		pt := perfPoint{local: float64(r.Local), step: r.StepSeconds, sync: min(r.SyncSeconds, r.StepSeconds)}
		if placements {
			c, err := goodput.PlacementCounts(strings.TrimSpace(r.Placement))
			if err != nil {
				return fmt.Errorf("%w: %s row %d: %w", ErrInvalid, p, i+1, err)
			}
			for _, v := range c {
				rt.maxCount = max(rt.maxCount, v)
			}
			k := countsKey(normalize(c))
			rt.placements[k] = append(rt.placements[k], pt)
			continue
		}
		if r.Replicas > 1<<16 {
			return fmt.Errorf("%w: %s row %d: num_replicas %d", ErrInvalid, p, i+1, r.Replicas)
		}
		k := [2]int64{int64(r.Nodes), int64(r.Replicas)}
		rt.scal[k] = append(rt.scal[k], pt)
	}
	return nil
}

// mergePoints sorts points by local batch and averages duplicates.
func mergePoints(pts []perfPoint) []perfPoint {
	s := slices.Clone(pts)
	slices.SortStableFunc(s, func(a, b perfPoint) int { return cmp.Compare(a.local, b.local) })
	var out []perfPoint
	for i := 0; i < len(s); {
		j, sum := i, perfPoint{local: s[i].local}
		for ; j < len(s) && s[j].local == s[i].local; j++ {
			sum.step += s[j].step
			sum.sync += s[j].sync
		}
		k := float64(j - i)
		out = append(out, perfPoint{local: sum.local, step: sum.step / k, sync: sum.sync / k})
		i = j
	}
	return out
}

func buildTable(rt *rawTable) (*perfTable, error) {
	if len(rt.placements) == 0 && len(rt.scal) == 0 {
		return nil, fmt.Errorf("no measurements")
	}
	t := &perfTable{placements: make(map[string][]perfPoint), maxCount: rt.maxCount, minLocal: math.MaxInt}
	shapes := make(map[[2]int64][]perfPoint)
	note := func(p perfPoint, replicas int) {
		t.minLocal = min(t.minLocal, int(p.local))
		t.maxLocal = max(t.maxLocal, int(p.local))
		t.maxProfRep = max(t.maxProfRep, replicas)
	}
	for _, k := range slices.Sorted(maps.Keys(rt.placements)) {
		pts := mergePoints(rt.placements[k])
		t.placements[k] = pts
		var c []int
		for _, f := range strings.Split(k, ".") {
			v, _ := strconv.Atoi(f)
			c = append(c, v)
		}
		r := 0
		for _, v := range c {
			r += v
		}
		key := [2]int64{int64(len(c)), int64(r)}
		shapes[key] = append(shapes[key], pts...)
		for _, p := range pts {
			note(p, r)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(rt.scal), cmpShape) {
		shapes[k] = append(shapes[k], rt.scal[k]...)
		for _, p := range rt.scal[k] {
			note(p, int(k[1]))
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(shapes), cmpShape) {
		t.shapeKeys = append(t.shapeKeys, k)
		t.shapes = append(t.shapes, mergePoints(shapes[k]))
		t.maxNodes = max(t.maxNodes, int(k[0]))
	}
	t.tri = newTriangulation(t.shapeKeys)
	if t.maxCount == 0 {
		t.maxCount = 1
	}
	return t, nil
}

func cmpShape(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }

// finish checks a merged application and fills in its derived fields.
func (a *Application) finish(opts ProfileOptions) error {
	if len(a.runs) == 0 {
		return fmt.Errorf("%w: model %s has no validation-<batch>.csv runs", ErrInvalid, a.Name)
	}
	if len(a.perf) == 0 {
		return fmt.Errorf("%w: model %s has no throughput measurements", ErrInvalid, a.Name)
	}
	slices.SortFunc(a.runs, func(x, y validationRun) int { return cmp.Compare(x.batch, y.batch) })
	epochs := math.MaxInt
	for i, r := range a.runs {
		if i > 0 && r.batch == a.runs[i-1].batch {
			return fmt.Errorf("%w: model %s: duplicate validation batch %d", ErrInvalid, a.Name, r.batch)
		}
		epochs = min(epochs, len(r.progress))
	}
	dEpochs, dMaxLocal, dFixed, dMaxRep := modelDefaults(a.Name)
	a.MaxEpochs = epochs
	if dEpochs > 0 {
		a.MaxEpochs = min(epochs, dEpochs)
	}
	a.InitBatch, a.MaxBatch = a.runs[0].batch, a.runs[len(a.runs)-1].batch
	a.defaultType = opts.DefaultType
	if a.perf[a.defaultType] == nil {
		a.defaultType = a.Types()[0]
	}
	t := a.perf[a.defaultType]
	a.MinLocal, a.MaxLocal = t.minLocal, t.maxLocal
	if dMaxLocal > 0 {
		a.MaxLocal = min(a.MaxLocal, dMaxLocal)
	}
	a.FixedBatch, a.MaxReplicas = dFixed, dMaxRep
	a.RestartDelay = opts.RestartDelay
	if v, ok := opts.RestartDelays[a.Name]; ok {
		if v < 0 {
			return fmt.Errorf("%w: RestartDelays[%s] %v is negative", ErrInvalid, a.Name, v)
		}
		a.RestartDelay = v
	}
	a.target = a.EpochProgress(a.MaxEpochs)
	if !(a.target > 0) {
		return fmt.Errorf("%w: model %s: final progress %v is not positive", ErrInvalid, a.Name, a.target)
	}
	return nil
}
