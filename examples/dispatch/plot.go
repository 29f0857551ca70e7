package main

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// plotP99 writes one panel per service distribution: p99 latency (log
// scale) against primary load, one line per policy.
func plotP99(path string, o options, results []SimResult) error {
	var row []*plot.Plot
	for _, svc := range o.services {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("p99 latency, %s service, %d workers", svc.Name, o.workers)
		p.X.Label.Text = "primary load"
		p.Y.Label.Text = "p99 latency (ms, log)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		p.Legend.Left = true
		for i, pol := range o.policies {
			var pts plotter.XYs
			for _, r := range results {
				if r.Service == svc.Name && r.Policy == pol.String() && r.P99Ms > 0 {
					pts = append(pts, plotter.XY{X: r.Load, Y: r.P99Ms})
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			s.Color = plotutil.Color(i)
			s.Shape = plotutil.Shape(i)
			p.Add(l, s)
			p.Legend.Add(pol.String(), l, s)
		}
		row = append(row, p)
	}
	return writeRow(path, row)
}

// writeRow writes plots side by side to an SVG file.
func writeRow(path string, row []*plot.Plot) error {
	const wPanel, hPanel = 14 * vg.Centimeter, 10 * vg.Centimeter
	img := vgsvg.New(wPanel*vg.Length(len(row)), hPanel)
	dc := draw.New(img)
	canvases := plot.Align([][]*plot.Plot{row}, draw.Tiles{Rows: 1, Cols: len(row)}, dc)
	for i, p := range row {
		p.Draw(canvases[0][i])
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

// plotQueues writes one panel per load: tasks in the system (log scale)
// against arrivals, one line per scan policy.
func plotQueues(path string, o options, results []FaultyResult) error {
	var row []*plot.Plot
	for _, load := range o.loads {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("faulty work, load %.2f, %d workers", load, o.workers)
		p.X.Label.Text = "arrivals (thousands)"
		p.Y.Label.Text = "tasks in system (log)"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		p.Legend.Left = true
		i := 0
		for _, r := range results {
			if r.Load != load || len(r.Series) == 0 {
				continue
			}
			pts := make(plotter.XYs, len(r.Series))
			for k, q := range r.Series {
				pts[k] = plotter.XY{X: float64(q.Arrivals) / 1000, Y: max(1, float64(q.Tasks))}
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i)
			p.Add(l)
			p.Legend.Add(r.Policy, l)
			i++
		}
		row = append(row, p)
	}
	return writeRow(path, row)
}
