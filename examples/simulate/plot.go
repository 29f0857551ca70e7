package main

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/goodsched/goodsched/scheduler/sim"
)

var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// writeOutputs writes jct-cdf.svg (JCT distribution per policy, all
// workloads pooled, as a fraction of all jobs so that unfinished ones show
// as a curve that stops short of 1), gpus-in-use.svg (devices busy over
// time, one panel per workload, against the cluster's capacity) and one
// per-job CSV per policy and workload.
func writeOutputs(dir string, names []string, workloads []sim.Workload, sums []summary, capacity int) error {
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
	if err := plotCDF(filepath.Join(dir, "jct-cdf.svg"), workloads, sums); err != nil {
		return err
	}
	return plotUse(filepath.Join(dir, "gpus-in-use.svg"), workloads, sums, capacity)
}

// plotCDF draws each policy's JCT distribution over all its jobs: the
// curve of a policy that left jobs unfinished ends below 1, at its
// completed fraction (the legend gives the count).
func plotCDF(path string, workloads []sim.Workload, sums []summary) error {
	cdf := plot.New()
	cdf.Title.Text = fmt.Sprintf("Job completion time, %d workload(s)", len(workloads))
	cdf.X.Label.Text = "JCT (hours, log scale)"
	cdf.Y.Label.Text = "fraction of all jobs completed"
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	cdf.Y.Min, cdf.Y.Max = 0, 1
	cdf.Legend.Top, cdf.Legend.Left = true, true
	cdf.Legend.XOffs, cdf.Legend.YOffs = vg.Millimeter, -vg.Millimeter
	for k, s := range sums {
		var jcts []float64
		total := 0
		for _, r := range s.results {
			total += len(r.Jobs)
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
			pts[i].X, pts[i].Y = v, float64(i+1)/float64(total)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[k%len(palette)]
		l.Width = vg.Points(1.5)
		cdf.Add(l)
		name := s.Name
		if len(jcts) < total {
			name = fmt.Sprintf("%s (%d/%d done)", s.Name, len(jcts), total)
		}
		cdf.Legend.Add(name, l)
	}
	if cdf.X.Min >= cdf.X.Max && cdf.X.Min > 0 {
		// One distinct JCT: widen the axis, a log scale needs a range.
		cdf.X.Min, cdf.X.Max = cdf.X.Min/2, cdf.X.Max*2
	}
	cdf.Add(plotter.NewGrid())
	return cdf.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// plotUse draws devices in use over time, one panel per workload (two
// columns), every policy in each, with the cluster's capacity as a dashed
// line; one legend above the panels covers no line. A path ending in .png
// writes a PNG, anything else an SVG.
func plotUse(path string, workloads []sim.Workload, sums []summary, capacity int) error {
	n := len(workloads)
	cols := min(n, 2)
	rows := (n + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	leg := plot.NewLegend()
	leg.Top = true
	for w := range n {
		p := plot.New()
		p.Title.Text = "devices in use, " + workloads[w].Name
		p.X.Label.Text = "time (hours)"
		p.Y.Label.Text = "devices"
		p.Y.Min, p.Y.Max = 0, float64(capacity)*1.1
		tmax := 0.0
		for k, s := range sums {
			u := s.results[w].Utilization
			if len(u) == 0 {
				continue
			}
			pts := make(plotter.XYs, len(u))
			for i, x := range u {
				pts[i].X, pts[i].Y = x.Time.Hours(), float64(x.Busy)
			}
			tmax = max(tmax, pts[len(pts)-1].X)
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = palette[k%len(palette)]
			p.Add(l)
			if w == 0 {
				leg.Add(s.Name, l)
			}
		}
		c, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(capacity)}, {X: max(tmax, 1e-3), Y: float64(capacity)}})
		if err != nil {
			return err
		}
		c.Color = color.Gray{Y: 0x60}
		c.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(c)
		if w == 0 {
			leg.Add(fmt.Sprintf("capacity (%d devices)", capacity), c)
		}
		p.Add(plotter.NewGrid())
		if grid[w/cols] == nil {
			grid[w/cols] = make([]*plot.Plot, cols)
		}
		grid[w/cols][w%cols] = p
	}
	for r := range grid {
		for c := range grid[r] {
			if grid[r][c] == nil {
				grid[r][c] = plot.New() // an empty last panel
				grid[r][c].HideAxes()
			}
		}
	}
	legendH := vg.Points(float64(14*(len(sums)+1) + 8))
	wd, ht := vg.Length(cols)*6*vg.Inch, vg.Length(rows)*3*vg.Inch+legendH
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(path, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.New(wd, ht)}
	} else {
		img = vgsvg.New(wd, ht)
	}
	dc := draw.New(img)
	leg.Draw(draw.Crop(dc, 0, -vg.Centimeter/2, ht-legendH, -vg.Points(4)))
	panels := draw.Crop(dc, 0, 0, 0, -legendH)
	tiles := plot.Align(grid, draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter / 2, PadY: vg.Centimeter / 2}, panels)
	for r := range grid {
		for c := range grid[r] {
			grid[r][c].Draw(tiles[r][c])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
