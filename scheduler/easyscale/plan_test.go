package easyscale

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// inverse turns EasyScale's relative speeds (perf) into worker times.
func inverse(perf []float64) []float64 {
	out := make([]float64, len(perf))
	for i, p := range perf {
		out[i] = 1 / p
	}
	return out
}

// The artifact's intra-job proposals for 8 workers on V100, P100 and T4
// (relative speeds 3.1, 2.4, 1, two of each; Intrajob.get_proposals in
// simulator/easy_policy.py run on that input): devices per type, the
// artifact's speedup (over one T4) and waste. Split never rates a device
// set below the artifact, and matches it where the artifact's thread grid
// holds the best split.
func TestSplitAgainstArtifact(t *testing.T) {
	times := inverse([]float64{3.1, 2.4, 1})
	for _, c := range []struct {
		devices       []int
		artSpeedup    float64
		artWaste      float64 // mixed types only; NaN: single type (the artifact says 0)
		speedup, wast float64 // Split's, by hand
	}{
		{[]int{1, 2, 1}, 8.0, 0.1011, 8.0, 1 - 8/8.9},
		{[]int{2, 0, 2}, 8.0, 0.0244, 8.0, 1 - 8/8.2},
		{[]int{2, 1, 0}, 6.4, 0.2558, 8 / (3 / 3.1), 1 - 8/(3/3.1)/8.6},
		{[]int{1, 1, 0}, 3.5429, 0.3558, 8 / (5 / 3.1), 1 - 8/(5/3.1)/5.5},
		{[]int{0, 2, 2}, 6.4, 0.0588, 6.4, 1 - 6.4/6.8},
		{[]int{1, 1, 1}, 6.2, 0.0462, 6.2, 1 - 6.2/6.5},
		{[]int{2, 0, 0}, 6.2, math.NaN(), 6.2, 0},
		{[]int{0, 2, 0}, 4.8, math.NaN(), 4.8, 0},
		{[]int{1, 0, 0}, 3.1, math.NaN(), 3.1, 0},
		{[]int{0, 0, 2}, 2.0, math.NaN(), 2.0, 0},
		{[]int{0, 1, 2}, 3.84, 0.1273, 4.0, 1 - 4/4.4},
	} {
		perType, busiest, ok := Split(8, c.devices, times)
		if !ok {
			t.Fatalf("%v: no split", c.devices)
		}
		s := 8 / busiest // over one T4 (1 s per worker)
		if s < c.artSpeedup-1e-3 {
			t.Errorf("%v: speedup %.4f below the artifact's %.4f", c.devices, s, c.artSpeedup)
		}
		if math.Abs(s-c.speedup) > 1e-9 {
			t.Errorf("%v: speedup %.6f, want %.6f (split %v)", c.devices, s, c.speedup, perType)
		}
		w := Waste(8, c.devices, perType, times)
		if !math.IsNaN(c.wast) && math.Abs(w-c.wast) > 1e-9 {
			t.Errorf("%v: waste %.6f, want %.6f", c.devices, w, c.wast)
		}
		if math.Abs(s-c.artSpeedup) < 1e-3 && !math.IsNaN(c.artWaste) && math.Abs(w-c.artWaste) > 1e-4 {
			t.Errorf("%v: same split as the artifact but waste %.4f, artifact %.4f", c.devices, w, c.artWaste)
		}
	}
}

// bruteBusiest is the least busiest-device time over every assignment
// of workers to the devices with at least one each.
func bruteBusiest(workers int, devices []int, times []float64) float64 {
	var per []float64
	for t, d := range devices {
		for range d {
			per = append(per, times[t])
		}
	}
	if len(per) == 0 || len(per) > workers {
		return math.Inf(1)
	}
	best := math.Inf(1)
	load := make([]int, len(per))
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == len(per)-1 {
			load[i] = left
			b := 0.0
			for k, l := range load {
				b = max(b, float64(l)*per[k])
			}
			best = min(best, b)
			return
		}
		for l := 1; l <= left-(len(per)-1-i); l++ {
			load[i] = l
			rec(i+1, left-l)
		}
	}
	rec(0, workers)
	return best
}

// Split's busiest time is the least possible: brute force over every
// assignment of workers to devices on random small instances.
func TestSplitIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 400 {
		nt := 1 + r.IntN(3)
		devices := make([]int, nt)
		times := make([]float64, nt)
		for i := range nt {
			devices[i] = r.IntN(3)
			times[i] = 0.2 + r.Float64()
		}
		workers := 1 + r.IntN(9)
		perType, got, ok := Split(workers, devices, times)
		want := bruteBusiest(workers, devices, times)
		if !ok {
			if !math.IsInf(want, 1) {
				t.Fatalf("Split(%d, %v, %v) refused; brute force %v", workers, devices, times, want)
			}
			continue
		}
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("Split(%d, %v, %v) = %v (%v), brute force %v", workers, devices, times, got, perType, want)
		}
		n := 0
		for i, w := range perType {
			n += w
			if w < devices[i] || (devices[i] == 0 && w != 0) {
				t.Fatalf("split %v leaves a device idle on %v", perType, devices)
			}
		}
		if n != workers {
			t.Fatalf("split %v sums to %d, want %d", perType, n, workers)
		}
	}
}

func TestSplitRefuses(t *testing.T) {
	for _, c := range []struct {
		w int
		d []int
		s []float64
	}{
		{0, []int{1}, []float64{1}},
		{2, []int{3}, []float64{1}},
		{2, []int{0, 0}, []float64{1, 1}},
		{2, []int{1}, []float64{0}},
		{2, []int{1}, []float64{math.NaN()}},
		{2, []int{-1, 2}, []float64{1, 1}},
		{2, []int{1}, []float64{1, 1}},
	} {
		if _, _, ok := Split(c.w, c.d, c.s); ok {
			t.Errorf("Split(%d, %v, %v) accepted", c.w, c.d, c.s)
		}
	}
}

func TestPlanByHand(t *testing.T) {
	times := []float64{0.5, 1} // fast, slow
	t.Run("increment of the other type", func(t *testing.T) {
		// Job 0 (4 workers) holds one slow device; one fast and one slow
		// are free. Adding the fast device: workers 3 fast + 1 slow,
		// busiest 1.5 s, speedup 4/1.5 over 4 s now: gain 2.667; adding a
		// slow one: 2 + 2, busiest 2 s, gain 2. The fast one wins.
		g, err := Plan([]int{1, 1}, []Job{{Workers: 4, Current: []int{0, 1}, WorkerSeconds: times}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g[0].Devices, []int{1, 1}) || !slices.Equal(g[0].Workers, []int{3, 1}) {
			t.Fatalf("got %+v, want devices [1 1], workers [3 1]", g[0])
		}
		// EasyScale-homo grows it on its own type only.
		g, err = Plan([]int{1, 1}, []Job{{Workers: 4, Current: []int{0, 1}, WorkerSeconds: times}}, Options{Homogeneous: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g[0].Devices, []int{0, 2}) || !slices.Equal(g[0].Workers, []int{0, 4}) {
			t.Fatalf("homo: got %+v, want devices [0 2], workers [0 4]", g[0])
		}
	})
	t.Run("largest incremental speedup first", func(t *testing.T) {
		// One slow device free. Job 0 holds 2 slow (4 workers, 2 s):
		// 3 devices give 2+1+1, still 2 s: no gain. Job 1 holds 1 slow
		// with 2 workers: 2 devices halve its step, gain 2. Job 1 gets it.
		g, err := Plan([]int{0, 1}, []Job{
			{Workers: 4, Current: []int{0, 2}, WorkerSeconds: times},
			{Workers: 2, Current: []int{0, 1}, WorkerSeconds: times},
		}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g[0].Devices, []int{0, 2}) || !slices.Equal(g[1].Devices, []int{0, 2}) {
			t.Fatalf("got %+v", g)
		}
	})
	t.Run("waste cap", func(t *testing.T) {
		// 2 workers on a device 10× faster than the free one: 1 + 1
		// wastes 1 − (2/1)/(10 + 1) = 82% of the pair: rejected.
		g, err := Plan([]int{0, 1}, []Job{{Workers: 2, Current: []int{1, 0}, WorkerSeconds: []float64{0.1, 1}}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g[0].Devices, []int{1, 0}) {
			t.Fatalf("got %+v, want no growth", g[0])
		}
		// A looser cap does not let it through either: 1 s a step is slower
		// than 0.2 s on the fast device alone.
		g, _ = Plan([]int{0, 1}, []Job{{Workers: 2, Current: []int{1, 0}, WorkerSeconds: []float64{0.1, 1}}}, Options{MaxWaste: 0.9})
		if slices.Equal(g[0].Devices, []int{1, 1}) {
			t.Fatalf("grew onto a device that slows it: %+v", g[0])
		}
	})
	t.Run("start, wait, and at most doubling", func(t *testing.T) {
		// Jobs 0 and 1 wait (8 workers each); 1 fast and 4 slow free.
		// Each starts on one device of the slowest type (EasyScale's
		// smallest proposal), job 3 on the fast one, the only type it can
		// use; a job started this round does not grow in it. Job 2 holds 1
		// slow device with 8 workers and may only double: 2 devices.
		g, err := Plan([]int{1, 4}, []Job{
			{Workers: 8, WorkerSeconds: times},
			{Workers: 8, WorkerSeconds: times},
			{Workers: 8, Current: []int{0, 1}, WorkerSeconds: times},
			{Workers: 1, WorkerSeconds: []float64{0.5, 0}},
		}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := [][]int{{0, 1}, {0, 1}, {0, 2}, {1, 0}}
		for i := range want {
			if !slices.Equal(g[i].Devices, want[i]) {
				t.Fatalf("job %d: got %v, want %v", i, g[i].Devices, want[i])
			}
		}
	})
}

// Plan never hands out more than is free, never slows a job down (it may
// trade devices of other types for more of one), never gives a job more
// devices than workers, and keeps the homogeneous variant on one type.
func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for it := range 300 {
		nt := 1 + r.IntN(3)
		free := make([]int, nt)
		for i := range free {
			free[i] = r.IntN(6)
		}
		var jobs []Job
		for range 1 + r.IntN(6) {
			j := Job{Workers: 1 + r.IntN(8), WorkerSeconds: make([]float64, nt), Current: make([]int, nt)}
			for k := range nt {
				if r.IntN(4) > 0 {
					j.WorkerSeconds[k] = 0.1 + r.Float64()
				}
			}
			if r.IntN(2) == 0 {
				k := r.IntN(nt)
				if j.WorkerSeconds[k] > 0 {
					j.Current[k] = 1 + r.IntN(j.Workers)
				}
			}
			jobs = append(jobs, j)
		}
		homo := it%2 == 1
		g, err := Plan(free, jobs, Options{Homogeneous: homo})
		if err != nil {
			t.Fatal(err)
		}
		used := make([]int, nt)
		for i, gr := range g {
			types, n, w := 0, 0, 0
			for k := range nt {
				used[k] += gr.Devices[k] - jobs[i].Current[k]
				if gr.Devices[k] > 0 {
					types++
					if jobs[i].WorkerSeconds[k] == 0 && jobs[i].Current[k] == 0 {
						t.Fatalf("job %d got a type it cannot use", i)
					}
				}
				n += gr.Devices[k]
			}
			for _, x := range gr.Workers {
				w += x
			}
			if sum(jobs[i].Current) > 0 && rate(&jobs[i], gr.Devices) < rate(&jobs[i], jobs[i].Current)-1e-12 {
				t.Fatalf("job %d slowed down: %v → %v", i, jobs[i].Current, gr.Devices)
			}
			if n > jobs[i].Workers || (n > 0 && w != jobs[i].Workers) {
				t.Fatalf("job %d: %d devices, %d workers for W=%d", i, n, w, jobs[i].Workers)
			}
			if homo && types > 1 {
				t.Fatalf("homogeneous job %d on %d types", i, types)
			}
		}
		for k := range nt {
			if used[k] > free[k] {
				t.Fatalf("type %d: handed out %d of %d free", k, used[k], free[k])
			}
		}
	}
}

func TestPlanRejects(t *testing.T) {
	for _, c := range []struct {
		free []int
		jobs []Job
		opts Options
	}{
		{[]int{1}, []Job{{Workers: 0, WorkerSeconds: []float64{1}}}, Options{}},
		{[]int{1}, []Job{{Workers: 1, WorkerSeconds: []float64{1, 1}}}, Options{}},
		{[]int{-1}, []Job{{Workers: 1, WorkerSeconds: []float64{1}}}, Options{}},
		{[]int{1}, []Job{{Workers: 1, WorkerSeconds: []float64{math.NaN()}}}, Options{}},
		{[]int{1}, []Job{{Workers: 1, WorkerSeconds: []float64{1}}}, Options{MaxWaste: -1}},
	} {
		if _, err := Plan(c.free, c.jobs, c.opts); !errors.Is(err, ErrInvalid) {
			t.Errorf("Plan(%v, %+v) = %v, want ErrInvalid", c.free, c.jobs, err)
		}
	}
}

// TestPlanHonoursMaxDevices: a job never grows beyond MaxDevices, and a
// running job whose bound fell below what it holds gives up devices of its
// slowest type first, which others may then take.
func TestPlanHonoursMaxDevices(t *testing.T) {
	times := inverse([]float64{3.1, 1})
	g, err := Plan([]int{4, 4}, []Job{{Workers: 8, Current: []int{1, 0}, WorkerSeconds: times, MaxDevices: 1}}, Options{})
	if err != nil || !slices.Equal(g[0].Devices, []int{1, 0}) {
		t.Errorf("MaxDevices 1: %+v, %v", g, err)
	}
	g, err = Plan([]int{0, 0}, []Job{
		{Workers: 8, Current: []int{2, 2}, WorkerSeconds: times, MaxDevices: 3},
		{Workers: 4, WorkerSeconds: times},
	}, Options{})
	if err != nil || !slices.Equal(g[0].Devices, []int{2, 1}) || sum(g[0].Workers) != 8 || !slices.Equal(g[1].Devices, []int{0, 1}) {
		t.Errorf("trimmed to 3: %+v, %v", g, err)
	}
	if _, err := Plan([]int{1}, []Job{{Workers: 2, WorkerSeconds: []float64{1}, MaxDevices: -1}}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("MaxDevices -1: %v", err)
	}
}
