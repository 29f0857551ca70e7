package variability_test

import (
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/variability"
)

func cluster(t testing.TB, spec string) accel.Cluster {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadLonghorn(t *testing.T) {
	m, err := variability.Load(os.DirFS("testdata"), "longhorn")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"classA", "classB", "classC", "classD"}; !slices.Equal(m.Classes, want) {
		t.Fatalf("classes %v, want %v (profiles.json)", m.Classes, want)
	}
	// B and C are both BERT in PAL's mapping: the same devices and factors.
	if !slices.Equal(m.Devices["classB"], m.Devices["classC"]) {
		t.Error("classB and classC differ although profiles.json maps both to BERT")
	}
	for _, c := range m.Classes {
		var fs []float64
		for _, d := range m.Devices[c] {
			fs = append(fs, d.Factor)
		}
		slices.Sort(fs)
		// Normalised by the median run, the median device is ≈ 1, and the
		// spread is PAL's: a few percent to ~20% between fastest and slowest.
		if med := fs[len(fs)/2]; math.Abs(med-1) > 0.02 {
			t.Errorf("%s: median factor %v, want ≈ 1", c, med)
		}
		if spread := fs[len(fs)-1] / fs[0]; spread < 1.03 || spread > 1.6 {
			t.Errorf("%s: spread %v outside the measured range", c, spread)
		}
	}
}

func TestLoadTableAndAssign(t *testing.T) {
	m, err := variability.Load(os.DirFS("testdata"), "longhorn/aggregated_data/32gpu-variability.csv")
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, "8x4:v100-32gb")
	tb, err := m.Assign(c)
	if err != nil {
		t.Fatal(err)
	}
	// 8 simulated nodes take the table's 8 nodes in order; GPU 28 of node 7
	// is the slowest V100 for class A (1.110 in the CSV).
	if got := tb.Factor(c.Nodes[7].Devices[0].ID, "classA"); math.Abs(got-1.110) > 0.001 {
		t.Errorf("node 7 device 0 classA = %v, want 1.110 (GPU_ID 28)", got)
	}
	again, _ := m.Assign(c)
	for _, d := range tb.Devices() {
		if tb.Factor(d, "classD") != again.Factor(d, "classD") {
			t.Fatal("Assign is not deterministic")
		}
	}
	// More simulated nodes than measured ones: wrap around.
	big := cluster(t, "20x4:v100-32gb")
	tb2, err := m.Assign(big)
	if err != nil {
		t.Fatal(err)
	}
	if tb2.Factor(big.Nodes[15].Devices[0].ID, "classA") != tb.Factor(c.Nodes[7].Devices[0].ID, "classA") {
		t.Error("node 15 of 20 should take measured node 7 (15 mod 8)")
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct {
		name, csv, want string
		table           bool
	}{
		{"table without Node_ID", "GPU_ID,PerfVar_classA\n0,1\n", `"Node_ID"`, true},
		{"table without classes", "GPU_ID,Node_ID\n0,0\n", "PerfVar", true},
		{"table NaN", "GPU_ID,Node_ID,PerfVar_classA\n0,0,NaN\n", "row 2", true},
		{"table zero", "GPU_ID,Node_ID,PerfVar_classA\n0,0,1\n1,0,0\n", "row 3", true},
		{"table negative", "GPU_ID,Node_ID,PerfVar_classA\n0,0,-1\n", "row 2", true},
		{"table Inf", "GPU_ID,Node_ID,PerfVar_classA\n0,0,+Inf\n", "row 2", true},
		{"table repeated GPU", "GPU_ID,Node_ID,PerfVar_classA\n0,0,1\n0,0,1\n", "row 3", true},
		{"table empty", "", "empty", true},
		{"aggregated without perf", "uuid,node\na,1\n", `"perf"`, false},
		{"aggregated without node", "uuid,perf\na,1\n", "one of", false},
		{"aggregated bad perf", "uuid,node,perf\na,1,2\nb,1,x\n", "row 3", false},
		{"aggregated no rows", "uuid,node,perf\n", "no rows", false},
	} {
		var err error
		if c.table {
			_, err = variability.ReadTable(strings.NewReader(c.csv))
		} else {
			_, err = variability.ReadAggregated(strings.NewReader(c.csv))
		}
		if !errors.Is(err, variability.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want ErrInvalid naming %s", c.name, err, c.want)
		}
	}
}

func TestTableSet(t *testing.T) {
	tb := variability.NewTable("a")
	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if err := tb.Set("d", "a", f); !errors.Is(err, variability.ErrInvalid) || !strings.Contains(err.Error(), `"d"`) {
			t.Errorf("Set(%v): err %v, want ErrInvalid naming the device", f, err)
		}
	}
	if err := tb.Set("d", "b", 1); !errors.Is(err, variability.ErrInvalid) {
		t.Errorf("unknown class: err %v", err)
	}
	if tb.Factor("d", "a") != 1 || tb.Factor("x", "a") != 1 {
		t.Error("unset factors must be 1")
	}
}

// TestBinAgainstBruteForce checks the exact 1-D k-means against every
// contiguous partition (the optimum of 1-D k-means is contiguous).
func TestBinAgainstBruteForce(t *testing.T) {
	vals := []float64{0.97, 0.98, 0.985, 1.0, 1.01, 1.02, 1.05, 1.06, 1.3}
	// mean+3σ: 1.3 is not above it for 9 values (σ is large), so k = 2.
	tb := variability.NewTable("x")
	for i, v := range vals {
		if err := tb.Set(string(rune('a'+i)), "x", v); err != nil {
			t.Fatal(err)
		}
	}
	got := variability.Bin(tb)
	// Brute force over the split point of 2 contiguous clusters.
	best, split := math.Inf(1), 0
	for s := 1; s < len(vals); s++ {
		cost := sse(vals[:s]) + sse(vals[s:])
		if cost < best {
			best, split = cost, s
		}
	}
	c0, c1 := mean(vals[:split]), mean(vals[split:])
	med := (c0 + c1) / 2
	for i, v := range vals {
		want := c0 / med
		if i >= split {
			want = c1 / med
		}
		if g := got.Factor(string(rune('a'+i)), "x"); math.Abs(g-want) > 1e-12 {
			t.Errorf("value %v: binned %v, want %v", v, g, want)
		}
	}
}

func TestBinCountsOutliers(t *testing.T) {
	tb := variability.NewTable("x")
	for i := range 30 {
		v := 1 + 0.001*float64(i%3)
		if i == 29 {
			v = 2 // one outlier above mean + 3σ: k = 3
		}
		_ = tb.Set(string(rune('A'+i)), "x", v)
	}
	b := variability.Bin(tb)
	levels := map[float64]bool{}
	for _, d := range b.Devices() {
		levels[b.Factor(d, "x")] = true
	}
	if len(levels) != 3 {
		t.Errorf("%d bins, want 3 (2 + one outlier)", len(levels))
	}
}

func sse(v []float64) float64 {
	m, s := mean(v), 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

const base = 100 * time.Millisecond

func report(job string, f float64, devs ...string) variability.Report {
	return variability.Report{Job: job, Devices: devs, Base: base, Step: time.Duration(f * float64(base))}
}

// TestEstimatorEpisode: a 2× slowdown on one node is learned within 5
// reports from gangs touching it, forgotten within 5 after it ends, and a
// one-off 10× outlier moves nothing by more than 5%.
func TestEstimatorEpisode(t *testing.T) {
	c := cluster(t, "2x2:v100-32gb")
	e, err := variability.NewEstimator(c, nil, variability.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a0, a1 := c.Nodes[0].Devices[0].ID, c.Nodes[0].Devices[1].ID
	b0, b1 := c.Nodes[1].Devices[0].ID, c.Nodes[1].Devices[1].ID
	// The episode: node 0 runs 2× slower. Gangs touching it: one on node 0
	// alone, and one on node 1 alone in between, which touches it not.
	n := 0
	for ; n < 5 && math.Abs(e.Slowdown(a0, "")-2) > 0.2; n++ {
		if err := e.Observe(report("j1", 2, a0, a1), report("j2", 1, b0, b1)); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.Slowdown(a0, ""); math.Abs(got-2) > 0.2 {
		t.Fatalf("after %d reports the estimate is %v, want 2 ± 10%%", n, got)
	}
	t.Logf("2× learned after %d reports", n)
	if got := e.Slowdown(b0, ""); got != 1 {
		t.Errorf("node 1 estimate %v, want 1", got)
	}
	// The episode ends.
	for n = 0; n < 5 && math.Abs(e.Slowdown(a0, "")-1) > 0.1; n++ {
		_ = e.Observe(report("j1", 1, a0, a1))
	}
	if got := e.Slowdown(a0, ""); math.Abs(got-1) > 0.1 {
		t.Fatalf("after %d reports the estimate is %v, want 1 ± 10%%", n, got)
	}
	// One 10× outlier.
	before := e.Slowdown(b1, "")
	_ = e.Observe(report("j2", 10, b0, b1))
	if got := e.Slowdown(b1, ""); math.Abs(got/before-1) > 0.05 {
		t.Errorf("a one-off 10× outlier moved the estimate from %v to %v", before, got)
	}
}

// TestEstimatorDeviceSteps: one gang spanning a 2× slower node and a
// fast one, always the same gang, cannot tell them apart from its step
// time; with each device's own time it can, after 3 reports.
func TestEstimatorDeviceSteps(t *testing.T) {
	c := cluster(t, "2x2:v100-32gb")
	a0, a1 := c.Nodes[0].Devices[0].ID, c.Nodes[0].Devices[1].ID
	b0, b1 := c.Nodes[1].Devices[0].ID, c.Nodes[1].Devices[1].ID
	gang := report("j", 2, a0, a1, b0, b1)
	for _, perDevice := range []bool{false, true} {
		e, err := variability.NewEstimator(c, nil, variability.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := gang
		if perDevice {
			r.DeviceSteps = []time.Duration{2 * base, 2 * base, base, base}
		}
		for range 3 {
			if err := e.Observe(r); err != nil {
				t.Fatal(err)
			}
		}
		fast := e.Slowdown(b0, "")
		if got := e.Slowdown(a0, ""); got != 2 {
			t.Errorf("per device %v: slow device %v, want 2", perDevice, got)
		}
		if perDevice && fast != 1 || !perDevice && fast != 2 {
			t.Errorf("per device %v: fast device %v", perDevice, fast)
		}
	}
	// Bad per-device times are refused; the rest of the batch applies.
	e, _ := variability.NewEstimator(c, nil, variability.Options{Window: 1})
	short, zero := gang, gang
	short.DeviceSteps = []time.Duration{base}
	zero.DeviceSteps = []time.Duration{base, 0, base, base}
	err := e.Observe(short, zero, report("k", 3, b1))
	var re *variability.ReportError
	if !errors.Is(err, variability.ErrBadReport) || !errors.As(err, &re) || re.Index != 0 {
		t.Errorf("bad device steps: %v, want ErrBadReport for report 0 and 1", err)
	}
	if !strings.Contains(err.Error(), "report 1") || !strings.Contains(err.Error(), a1) {
		t.Errorf("error %q should name report 1 and device %s", err, a1)
	}
	if got := e.Slowdown(b1, ""); got != 3 {
		t.Errorf("good report after bad ones: %v, want 3", got)
	}
	if got := e.Slowdown(a0, ""); got != 1 {
		t.Errorf("a refused report moved an estimate: %v", got)
	}
}

// TestEstimatorForget: with Options.Forget, a device no gang reports on
// for that many Observe calls returns to its prior; one in use keeps its
// estimate; without Forget nothing is forgotten.
func TestEstimatorForget(t *testing.T) {
	c := cluster(t, "2x2:v100-32gb")
	a0, a1 := c.Nodes[0].Devices[0].ID, c.Nodes[0].Devices[1].ID
	b0, b1 := c.Nodes[1].Devices[0].ID, c.Nodes[1].Devices[1].ID
	for _, forget := range []int{0, 4} {
		e, err := variability.NewEstimator(c, nil, variability.Options{Forget: forget})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // both nodes 2× slower
			_ = e.Observe(report("j1", 2, a0, a1), report("j2", 2, b0, b1))
		}
		for k := 1; k <= 6; k++ { // node 0 idle, node 1 still reporting
			_ = e.Observe(report("j2", 2, b0, b1))
			want := 2.0
			if forget > 0 && k >= forget {
				want = 1
			}
			if got := e.Slowdown(a0, ""); got != want {
				t.Fatalf("Forget %d, %d calls without a report: estimate %v, want %v", forget, k, got, want)
			}
			if got := e.Slowdown(b0, ""); got != 2 {
				t.Fatalf("Forget %d: the device in use forgot its estimate: %v", forget, got)
			}
		}
	}
	if _, err := variability.NewEstimator(c, nil, variability.Options{Forget: -1}); !errors.Is(err, variability.ErrInvalid) {
		t.Errorf("Forget −1: %v, want ErrInvalid", err)
	}
}

// TestEstimatorOverlap: gangs spanning a slow and a fast node at first
// blame both; gangs on the fast node alone clear it.
func TestEstimatorOverlap(t *testing.T) {
	c := cluster(t, "2x1:v100-32gb")
	e, _ := variability.NewEstimator(c, nil, variability.Options{LocalityPenalty: 1.5})
	a, b := c.Nodes[0].Devices[0].ID, c.Nodes[1].Devices[0].ID
	for range 3 {
		_ = e.Observe(report("j", 2*1.5, a, b)) // spans nodes: pays 1.5
	}
	if e.Slowdown(a, "") != 2 || e.Slowdown(b, "") != 2 {
		t.Fatalf("both devices should be suspects: %v %v", e.Slowdown(a, ""), e.Slowdown(b, ""))
	}
	for range 3 {
		_ = e.Observe(report("k", 1, b))
	}
	if e.Slowdown(a, "") != 2 || e.Slowdown(b, "") != 1 {
		t.Errorf("after gangs on b alone: a %v (want 2), b %v (want 1)", e.Slowdown(a, ""), e.Slowdown(b, ""))
	}
}

func TestEstimatorPrior(t *testing.T) {
	c := cluster(t, "1x2:v100-32gb")
	d0, d1 := c.Nodes[0].Devices[0].ID, c.Nodes[0].Devices[1].ID
	prior := variability.NewTable("classA")
	_ = prior.Set(d1, "classA", 1.2)
	e, _ := variability.NewEstimator(c, prior, variability.Options{})
	// A gang on both runs at the prior's 1.2: nothing changes.
	for range 5 {
		r := report("j", 1.2, d0, d1)
		r.Class = "classA"
		_ = e.Observe(r)
	}
	if e.Slowdown(d0, "classA") != 1 || e.Slowdown(d1, "classA") != 1.2 {
		t.Errorf("consistent reports moved estimates: %v %v", e.Slowdown(d0, "classA"), e.Slowdown(d1, "classA"))
	}
	sp := e.Speeds(map[string]string{"job": "classA"})
	if sp.Slowdown("job", d1) != 1.2 || sp.Slowdown("other", d1) != 1 || sp.LocalityPenalty("job") != 1 {
		t.Error("Speeds snapshot disagrees with the estimator")
	}
}

func TestEstimatorBadReports(t *testing.T) {
	c := cluster(t, "1x2:v100-32gb")
	d0, d1 := c.Nodes[0].Devices[0].ID, c.Nodes[0].Devices[1].ID
	e, _ := variability.NewEstimator(c, nil, variability.Options{Window: 1})
	good := report("good", 1.5, d0)
	err := e.Observe(
		report("zero", 0, d0),
		variability.Report{Job: "neg", Devices: []string{d0}, Step: -time.Second, Base: base},
		variability.Report{Job: "nobase", Devices: []string{d0}, Step: base},
		report("unknown", 1, "nope"),
		report("twice", 1, d1, d1),
		report("none", 1),
		good,
	)
	var re *variability.ReportError
	if !errors.As(err, &re) || re.Index != 0 || re.Job != "zero" {
		t.Fatalf("err %v, want a ReportError for report 0", err)
	}
	if !errors.Is(err, variability.ErrBadReport) || !errors.Is(err, variability.ErrUnknownDevice) {
		t.Errorf("err %v should wrap ErrBadReport and ErrUnknownDevice", err)
	}
	if n := strings.Count(err.Error(), "report "); n != 6 {
		t.Errorf("%d refused reports in %q, want 6", n, err)
	}
	if got := e.Slowdown(d0, ""); got != 1.5 {
		t.Errorf("the good report did not apply: %v", got)
	}
	if got := e.Slowdown(d1, ""); got != 1 {
		t.Errorf("a refused report changed d1: %v", got)
	}
	for _, o := range []variability.Options{{Window: -1}, {LocalityPenalty: 0.5}, {Tolerance: 2}} {
		if _, err := variability.NewEstimator(c, nil, o); !errors.Is(err, variability.ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", o, err)
		}
	}
	bad := variability.NewTable("a")
	_ = bad.Set("ghost", "a", 1.1)
	if _, err := variability.NewEstimator(c, bad, variability.Options{}); !errors.Is(err, variability.ErrUnknownDevice) {
		t.Errorf("prior with an unknown device: err %v", err)
	}
}

func TestEstimatorConcurrent(t *testing.T) {
	c := cluster(t, "2x2:v100-32gb")
	e, _ := variability.NewEstimator(c, nil, variability.Options{})
	d := c.Nodes[0].Devices[0].ID
	done := make(chan struct{})
	go func() {
		for range 100 {
			_ = e.Observe(report("j", 1.3, d))
		}
		close(done)
	}()
	for range 100 {
		_ = e.Speeds(nil).Slowdown("j", d)
	}
	<-done
}

func FuzzReadTable(f *testing.F) {
	f.Add("GPU_ID,Node_ID,PerfVar_classA\n0,0,1.01\n1,0,0.99\n")
	f.Add("GPU_ID,Node_ID,PerfVar_a,PerfVar_b\n0,x,1,NaN\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := variability.ReadTable(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, variability.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, c := range m.Classes {
			for _, d := range m.Devices[c] {
				if !(d.Factor > 0) || math.IsInf(d.Factor, 0) {
					t.Fatalf("accepted factor %v", d.Factor)
				}
			}
		}
	})
}

func FuzzReadAggregated(f *testing.F) {
	f.Add("uuid,cabinet,node,perf\na,c1,1,400\nb,c1,1,420\n")
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := variability.ReadAggregated(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, variability.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, d := range ds {
			if !(d.Factor > 0) || math.IsInf(d.Factor, 0) {
				t.Fatalf("accepted factor %v", d.Factor)
			}
		}
	})
}

func TestReadEpisodes(t *testing.T) {
	eps, err := variability.ReadEpisodes(strings.NewReader("node,start,end,factor\nn1,0,1800,2\nn2,60.5,120,1.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || eps[0].End != 30*time.Minute || eps[1].Start != 60500*time.Millisecond || eps[1].Factor != 1.5 {
		t.Errorf("episodes %+v", eps)
	}
	for _, c := range []struct{ csv, want string }{
		{"node,start,end\nn,0,1\n", `"factor"`},
		{"node,start,end,factor\nn,0,1,0\n", "row 2"},
		{"node,start,end,factor\nn,0,1,NaN\n", "row 2"},
		{"node,start,end,factor\nn,0,1,2\nn,-1,1,2\n", "row 3"},
		{"node,start,end,factor\nn,5,1,2\n", "before"},
		{"node,start,end,factor\n,0,1,2\n", "empty node"},
	} {
		if _, err := variability.ReadEpisodes(strings.NewReader(c.csv)); !errors.Is(err, variability.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want ErrInvalid naming %s", c.csv, err, c.want)
		}
	}
}

func FuzzReadEpisodes(f *testing.F) {
	f.Add("node,start,end,factor\nn1,0,1800,2\n")
	f.Fuzz(func(t *testing.T, s string) {
		eps, err := variability.ReadEpisodes(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, variability.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, e := range eps {
			if e.End < e.Start || e.Start < 0 || !(e.Factor > 0) || math.IsInf(e.Factor, 0) {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}
