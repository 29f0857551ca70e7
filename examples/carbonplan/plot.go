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

	"github.com/goodsched/goodsched/carbon"
)

// plotWeek writes two panels over the first week's window: the intensity,
// and the scale chosen by the planner and by the carbon-agnostic baseline.
func plotWeek(path string, s carbon.Series, w week) error {
	hours := func(i int) float64 { return float64(i) * w.plan.Step.Hours() }
	top := plot.New()
	top.Title.Text = fmt.Sprintf("%s carbon intensity from %s", s.Zone, w.Start.Format("2006-01-02 15:04 MST"))
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
	bottom.Legend.Top = true
	for k, sch := range []struct {
		name string
		s    carbon.Schedule
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
	img := vgsvg.New(wd, 2*ht)
	dc := draw.New(img)
	tiles := plot.Align([][]*plot.Plot{{top}, {bottom}}, draw.Tiles{Rows: 2, Cols: 1}, dc)
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
