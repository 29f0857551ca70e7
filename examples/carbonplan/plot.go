package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/goodsched/goodsched/carbon"
)

// plotWeek writes two panels over the first start's deadline window: the
// intensity, and the scale chosen by the planner and by the
// carbon-agnostic baseline. A path ending in .png writes a PNG, anything
// else an SVG.
func plotWeek(path string, s carbon.Series, w week, maxScale int) error {
	hours := func(i int) float64 { return float64(i) * w.plan.Step.Hours() }
	window := time.Duration(len(w.plan.Slots)) * w.plan.Step
	top := plot.New()
	top.Title.Text = fmt.Sprintf("%s carbon intensity, first start %s, %g h deadline window", s.Zone, w.Start.Format("2006-01-02 15:04 MST"), window.Hours())
	top.X.Label.Text = "hours from start"
	top.Y.Label.Text = "g CO2eq/kWh"
	var ci plotter.XYs
	for i, sl := range w.plan.Slots {
		ci = append(ci, plotter.XY{X: hours(i), Y: sl.IntensityGPerKWh}, plotter.XY{X: hours(i + 1), Y: sl.IntensityGPerKWh})
	}
	l, err := plotter.NewLine(ci)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(0)
	top.Add(l)

	bottom := plot.New()
	bottom.Title.Text = "scale per slot"
	bottom.X.Label.Text = "hours from start"
	bottom.Y.Label.Text = "nodes"
	// Headroom above the top scale so the legend (top right, inside the
	// axes) covers no line and is not clipped.
	bottom.Y.Min, bottom.Y.Max = 0, float64(maxScale)*1.45+0.5
	bottom.Legend.Top = true
	bottom.Legend.XOffs = -vg.Millimeter
	bottom.Legend.YOffs = -vg.Millimeter
	for k, sch := range []struct {
		name string
		s    carbon.Plan
	}{{"marginal planner", w.plan}, {"carbon-agnostic", w.agnostic}} {
		var pts plotter.XYs
		for i, sl := range sch.s.Slots {
			// Time-weighted mean scale of the slot.
			v := sl.Fraction*float64(sl.Scale) + (1-sl.Fraction)*float64(sl.Lower)
			pts = append(pts, plotter.XY{X: hours(i), Y: v}, plotter.XY{X: hours(i + 1), Y: v})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(k + 1)
		line.Dashes = plotutil.Dashes(k)
		bottom.Add(line)
		bottom.Legend.Add(sch.name, line)
	}
	const wd, ht = 18 * vg.Centimeter, 9 * vg.Centimeter
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(strings.ToLower(path), ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.New(wd, 2*ht)}
	} else {
		img = vgsvg.New(wd, 2*ht)
	}
	dc := draw.New(img)
	tiles := plot.Align([][]*plot.Plot{{top}, {bottom}}, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter / 2}, dc)
	top.Draw(tiles[0][0])
	bottom.Draw(tiles[1][0])
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
