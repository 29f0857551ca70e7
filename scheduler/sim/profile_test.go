package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want []int }{
		{[]int{4}, []int{4}},
		{[]int{4, 2}, []int{2, 4}},
		{[]int{2, 4}, []int{2, 4}},
		{[]int{2, 1, 3}, []int{1, 3, 2}},
		{[]int{0, 3, 0, 1}, []int{1, 3}},
		{[]int{4, 4, 1, 4}, []int{1, 4, 4, 4}},
		{nil, []int{}},
	}
	for _, c := range cases {
		if got := normalize(c.in); !slices.Equal(got, c.want) {
			t.Errorf("normalize(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestStepTimeMeasuredPlacement(t *testing.T) {
	a := toyApps(t, ProfileOptions{})["toy"]
	cases := []struct {
		counts     []int
		local      float64
		step, sync float64
	}{
		{[]int{1}, 10, 1, 0},       // measured point
		{[]int{1}, 15, 1.5, 0},     // midpoint
		{[]int{1}, 1, 0.5, 0},      // below range: smallest measurement
		{[]int{1}, 30, 3, 0},       // above range: last slope extended
		{[]int{2}, 7.5, 1.25, 0.5}, // two on one node
		{[]int{1, 1}, 5, 1.0, 0.8}, // one on each of two nodes
		{[]int{0, 1, 0, 1}, 5, 1.0, 0.8},
	}
	for _, c := range cases {
		s, y, ok := a.StepTime("t4", c.counts, c.local)
		if !ok || math.Abs(s-c.step) > 1e-12 || math.Abs(y-c.sync) > 1e-12 {
			t.Errorf("StepTime(%v, %v) = %v, %v, %v; want %v, %v", c.counts, c.local, s, y, ok, c.step, c.sync)
		}
	}
	if _, _, ok := a.StepTime("a100-40gb", []int{1}, 10); ok {
		t.Error("unmeasured type reported ok")
	}
	if _, _, ok := a.StepTime("t4", nil, 10); ok {
		t.Error("empty placement reported ok")
	}
}

// A function linear in (nodes, replicas) at every measured shape must be
// reproduced exactly anywhere inside their hull.
func TestShapeInterpolationIsLinear(t *testing.T) {
	f := func(n, r float64) float64 { return 0.3 + 0.05*n + 0.02*r }
	var b strings.Builder
	b.WriteString("num_nodes,num_replicas,local_bsz,step_time,sync_time\n")
	shapes := [][2]int{{1, 1}, {1, 4}, {2, 2}, {2, 8}, {4, 4}, {4, 16}, {6, 6}, {6, 24}, {8, 8}, {8, 32}, {16, 16}, {16, 64}, {3, 7}, {12, 30}}
	for _, s := range shapes {
		v := f(float64(s[0]), float64(s[1]))
		for _, l := range []int{8, 16} {
			b.WriteString(strings.Join([]string{itoa(s[0]), itoa(s[1]), itoa(l), ftoa(v + float64(l)/100), ftoa(v / 2)}, ","))
			b.WriteString("\n")
		}
	}
	fsys := fstest.MapFS{
		"p/lin/scalability.csv":  {Data: []byte(b.String())},
		"p/lin/validation-8.csv": {Data: []byte("progress,iteration,metric,grad_sqr,grad_var\n1,1,0,1,1\n")},
		"p/lin/placements.csv":   {Data: []byte("placement,local_bsz,step_time,sync_time\n1,8,1,0\n")},
	}
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: fsys, Dir: "p"})
	if err != nil {
		t.Fatal(err)
	}
	a := apps["lin"]
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 5 + rng.IntN(11) // unmeasured node counts 5..15
		r := n + rng.IntN(3*n+1)
		if n == 6 || n == 8 || n == 12 {
			continue
		}
		counts := make([]int, n)
		left := r
		for i := range counts {
			counts[i] = 1
			left--
		}
		for i := 0; left > 0; i = (i + 1) % n {
			if counts[i] < 4 {
				counts[i]++
				left--
			}
		}
		l := 8 + 8*rng.Float64()
		s, y, ok := a.StepTime("t4", counts, l)
		want := f(float64(n), float64(r))
		if !ok || math.Abs(s-(want+l/100)) > 1e-9 || math.Abs(y-want/2) > 1e-9 {
			t.Fatalf("(%d nodes, %d replicas, local %.2f): %v, %v; want %v, %v", n, r, l, s, y, want+l/100, want/2)
		}
	}
}

func itoa(v int) string     { return strconv.Itoa(v) }
func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestGradStatsAndProgress(t *testing.T) {
	a := toyApps(t, ProfileOptions{})["toy"]
	if a.InitBatch != 10 || a.MaxBatch != 20 || a.MaxEpochs != 2 || a.TargetProgress() != 200 {
		t.Fatalf("derived fields: %+v target %v", a, a.TargetProgress())
	}
	cases := []struct {
		batch     float64
		epoch     int
		sqr, vari float64
	}{
		{10, 0, 1, 0},
		{15, 0, 1, 0.5}, // halfway between 10 and 20
		{15, 1, 1, 1.5},
		{5, 0, 1, 0},   // below: clamp to smallest batch
		{40, 1, 1, 3},  // above: clamp to largest
		{20, 9, 1, 3},  // epoch clamped to the last
		{20, -1, 1, 1}, // and to the first
	}
	for _, c := range cases {
		s, v := a.GradStats(c.batch, c.epoch)
		if math.Abs(s-c.sqr) > 1e-12 || math.Abs(v-c.vari) > 1e-12 {
			t.Errorf("GradStats(%v, %d) = %v, %v; want %v, %v", c.batch, c.epoch, s, v, c.sqr, c.vari)
		}
	}
	if g := a.Gain(20, 0); math.Abs(g-4.0/3) > 1e-12 {
		t.Errorf("Gain(20, 0) = %v, want 4/3", g)
	}
	if g := a.Gain(10, 1); g != 1 {
		t.Errorf("Gain at M0 = %v, want 1", g)
	}
	for e, want := range []float64{0, 100, 200, 200} {
		if got := a.EpochProgress(e); got != want {
			t.Errorf("EpochProgress(%d) = %v, want %v", e, got, want)
		}
	}
	if got := a.Iterations(15, 1); got != 150 {
		t.Errorf("Iterations(15, 1) = %v, want 150", got)
	}
}

func TestLoadPolluxProfiles(t *testing.T) {
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: polluxdata.FS, Dir: "traces"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ m0, maxB, minL, maxL, epochs int }{
		"bert": {12, 384, 4, 12, 2}, "cifar10": {128, 4096, 32, 1024, 100}, "deepspeech2": {20, 640, 10, 80, 80},
		"imagenet": {200, 12800, 20, 200, 90}, "ncf": {256, 32768, 32, 32768, 10}, "yolov3": {8, 512, 4, 8, 50},
	}
	for name, w := range want {
		a := apps[name]
		if a == nil {
			t.Fatalf("missing %s", name)
		}
		if a.InitBatch != w.m0 || a.MaxBatch != w.maxB || a.MinLocal != w.minL || a.MaxLocal != w.maxL || a.MaxEpochs != w.epochs {
			t.Errorf("%s: M0 %d max %d local %d..%d epochs %d; want %+v", name, a.InitBatch, a.MaxBatch, a.MinLocal, a.MaxLocal, a.MaxEpochs, w)
		}
		if a.RestartDelay.Seconds() != 30 {
			t.Errorf("%s: restart delay %v", name, a.RestartDelay)
		}
	}
	// Published examples (pollux.md §3.2): CIFAR-10 at 32 per GPU.
	c := apps["cifar10"]
	for _, tc := range []struct {
		counts     []int
		step, sync float64
	}{{[]int{4}, 0.058, 0.014}, {[]int{4, 4}, 0.185, 0.142}} {
		s, y, _ := c.StepTime("t4", tc.counts, 32)
		if math.Abs(s-tc.step) > 0.001 || math.Abs(y-tc.sync) > 0.001 {
			t.Errorf("cifar10 %v @32: %.4f/%.4f, want %.3f/%.3f", tc.counts, s, y, tc.step, tc.sync)
		}
	}
	// Every shape of a 16×4 cluster has a positive, finite step time.
	for _, a := range apps {
		for r := 1; r <= 64; r++ {
			n := (r + 3) / 4
			counts := make([]int, n)
			for i := range counts {
				counts[i] = min(4, r-4*i)
			}
			s, y, ok := a.StepTime("t4", counts, float64(a.MinLocal))
			if !ok || !(s > 0) || math.IsInf(s, 0) || y < 0 || y > s {
				t.Fatalf("%s %v: %v %v %v", a.Name, counts, s, y, ok)
			}
		}
	}
}

func TestLoadProfilesErrors(t *testing.T) {
	base := toyFS()
	cases := []struct {
		name string
		edit func(fstest.MapFS)
	}{
		{"no validation", func(m fstest.MapFS) { delete(m, "p/toy/validation-10.csv"); delete(m, "p/toy/validation-20.csv") }},
		{"bad placement", func(m fstest.MapFS) {
			m["p/toy/placements.csv"] = &fstest.MapFile{Data: []byte("placement,local_bsz,step_time,sync_time\n0,1,1,0\n")}
		}},
		{"negative step", func(m fstest.MapFS) {
			m["p/toy/placements.csv"] = &fstest.MapFile{Data: []byte("placement,local_bsz,step_time,sync_time\n1,1,-1,0\n")}
		}},
		{"header only", func(m fstest.MapFS) {
			m["p/toy/scalability.csv"] = &fstest.MapFile{Data: []byte("num_nodes,num_replicas,local_bsz,step_time,sync_time\n")}
		}},
		{"missing column", func(m fstest.MapFS) {
			m["p/toy/scalability.csv"] = &fstest.MapFile{Data: []byte("num_nodes,local_bsz,step_time,sync_time\n1,1,1,0\n")}
		}},
		{"bad validation name", func(m fstest.MapFS) { m["p/toy/validation-x.csv"] = base["p/toy/validation-10.csv"] }},
		{"decreasing progress", func(m fstest.MapFS) {
			m["p/toy/validation-10.csv"] = &fstest.MapFile{Data: []byte("progress,iteration,metric,grad_sqr,grad_var\n2,1,0,1,1\n1,1,0,1,1\n")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := toyFS()
			tc.edit(m)
			if _, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: m, Dir: "p"}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestSiaSuffixes(t *testing.T) {
	m := toyFS()
	m["p/toy/placements-rtx.csv"] = &fstest.MapFile{Data: []byte("local_bsz,step_time,sync_time,placement\n5,0.25,0,1\n10,0.5,0,1\n5,0.5,0.1,8\n")}
	m["p/toy/placements-unknown.csv"] = &fstest.MapFile{Data: []byte("garbage")}
	apps, err := LoadProfiles(ProfileOptions{}, ProfileSource{FS: m, Dir: "p"})
	if err != nil {
		t.Fatal(err)
	}
	a := apps["toy"]
	if got := a.Types(); !slices.Equal(got, []accel.TypeKey{"rtx2080ti", "t4"}) {
		t.Fatalf("types %v", got)
	}
	if s, _, ok := a.StepTime("rtx2080ti", []int{1}, 10); !ok || s != 0.5 {
		t.Fatalf("rtx step %v %v", s, ok)
	}
	if a.MaxProfiledReplicas("rtx2080ti") != 8 || a.MaxProfiledReplicas("t4") != 8 {
		t.Fatalf("max profiled %d %d", a.MaxProfiledReplicas("rtx2080ti"), a.MaxProfiledReplicas("t4"))
	}
}

// FuzzReadValidation fuzzes the validation-<batch>.csv reader: goodput's
// ReadValidation plus the simulator's own checks.
func FuzzReadValidation(f *testing.F) {
	f.Add([]byte("progress,iteration,metric,grad_sqr,grad_var\n391.0,390,0.4455,8.9,5.06\n782.0,781,0.6,1.8,1.5\n"))
	f.Add([]byte("progress,iteration,grad_sqr,grad_var\nNaN,1,1,1\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := readValidation(fstest.MapFS{"v.csv": {Data: data}}, "v.csv", 1)
		p, it, s, v := run.progress, run.iteration, run.gradSqr, run.gradVar
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if len(p) == 0 || len(p) != len(it) || len(p) != len(s) || len(p) != len(v) {
			t.Fatal("inconsistent lengths")
		}
		for i := range p {
			if p[i] < 0 || math.IsNaN(p[i]) || (i > 0 && p[i] < p[i-1]) {
				t.Fatalf("bad progress %v", p)
			}
		}
	})
}

// FuzzPlacementCounts: every count goodput parses is a digit 1-9 and
// normalize keeps the length.
func FuzzPlacementCounts(f *testing.F) {
	for _, s := range []string{"1", "44", "4444", "404", "0", "", "12a", "99999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := goodput.PlacementCounts(s)
		if err != nil {
			return
		}
		for _, v := range c {
			if v < 1 || v > 9 {
				t.Fatalf("%q → %v", s, c)
			}
		}
		n := normalize(c)
		if len(n) != len(c) {
			t.Fatalf("normalize changed length: %v → %v", c, n)
		}
	})
}
