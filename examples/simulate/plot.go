package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/goodsched/goodsched/scheduler/sim"
)

var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// writeOutputs writes jct-cdf.svg (JCT distribution per policy, all
// workloads pooled), gpus-in-use.svg (devices busy over time on the first
// workload) and one per-job CSV per policy and workload.
func writeOutputs(dir string, names []string, workloads []sim.Workload, sums []summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range sums {
		for w, r := range s.results {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s.csv", s.Name, workloads[w].Name)))
			if err != nil {
				return err
			}
			err = r.WriteCSV(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	cdf := plot.New()
	cdf.Title.Text = fmt.Sprintf("Job completion time, %d workload(s)", len(workloads))
	cdf.X.Label.Text = "JCT (hours, log scale)"
	cdf.Y.Label.Text = "fraction of jobs"
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	cdf.Legend.Top, cdf.Legend.Left = true, true
	for k, s := range sums {
		var jcts []float64
		for _, r := range s.results {
			for _, j := range r.Jobs {
				if j.Completed && j.JCT > 0 {
					jcts = append(jcts, j.JCT.Hours())
				}
			}
		}
		if len(jcts) == 0 {
			continue
		}
		slices.Sort(jcts)
		pts := make(plotter.XYs, len(jcts))
		for i, v := range jcts {
			pts[i].X, pts[i].Y = v, float64(i+1)/float64(len(jcts))
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[k%len(palette)]
		l.Width = vg.Points(1.5)
		cdf.Add(l)
		cdf.Legend.Add(s.Name, l)
	}
	if cdf.X.Min >= cdf.X.Max && cdf.X.Min > 0 {
		// One distinct JCT: widen the axis, a log scale needs a range.
		cdf.X.Min, cdf.X.Max = cdf.X.Min/2, cdf.X.Max*2
	}
	cdf.Add(plotter.NewGrid())
	if err := cdf.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, "jct-cdf.svg")); err != nil {
		return err
	}

	use := plot.New()
	use.Title.Text = "Devices in use, " + workloads[0].Name
	use.X.Label.Text = "time (hours)"
	use.Y.Label.Text = "devices"
	use.Legend.Top = true
	for k, s := range sums {
		u := s.results[0].Utilization
		if len(u) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(u))
		for i, x := range u {
			pts[i].X, pts[i].Y = x.Time.Hours(), float64(x.Busy)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[k%len(palette)]
		use.Add(l)
		use.Legend.Add(s.Name, l)
	}
	use.Add(plotter.NewGrid())
	return use.Save(9*vg.Inch, 4*vg.Inch, filepath.Join(dir, "gpus-in-use.svg"))
}
