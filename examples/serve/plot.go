package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// writePlots writes replicas.svg (replicas holding GPUs per minute, per
// autoscaler) and tpot.svg (each window's p90 TPOT against the SLO) to dir.
func writePlots(dir string, out output, tpotSLOms float64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	replicas := plot.New()
	replicas.Title.Text = fmt.Sprintf("Replicas holding GPUs (rate ×%.2f, start-up %s)", out.Scale, out.Startup)
	replicas.X.Label.Text = "minute of the trace"
	replicas.Y.Label.Text = "replicas (starting, serving or draining)"
	replicas.Legend.Top = true
	tpot := plot.New()
	tpot.Title.Text = "p90 time per output token per 1-minute window"
	tpot.X.Label.Text = "minute of the trace"
	tpot.Y.Label.Text = "ms"
	tpot.Legend.Top = true
	for k, a := range out.Autoscalers {
		r := make(plotter.XYs, len(a.windows))
		p := make(plotter.XYs, len(a.windows))
		for i, w := range a.windows {
			x := w.Start.Minutes()
			r[i] = plotter.XY{X: x, Y: w.Replicas}
			p[i] = plotter.XY{X: x, Y: w.TPOTP90.Seconds() * 1000}
		}
		for _, c := range []struct {
			pl  *plot.Plot
			xys plotter.XYs
		}{{replicas, r}, {tpot, p}} {
			line, err := plotter.NewLine(c.xys)
			if err != nil {
				return err
			}
			line.Color = palette[k%len(palette)]
			line.Width = vg.Points(1.5)
			c.pl.Add(line)
			c.pl.Legend.Add(fmt.Sprintf("%s (%.1f%%, %.1f GPU-h)", a.Name, 100*a.SLOAttainment, a.GPUHours), line)
		}
	}
	slo := plotter.NewFunction(func(float64) float64 { return tpotSLOms })
	slo.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	slo.Color = color.Gray{Y: 0x60}
	tpot.Add(slo)
	tpot.Legend.Add("SLO", slo)
	for name, pl := range map[string]*plot.Plot{"replicas.svg": replicas, "tpot.svg": tpot} {
		pl.Add(plotter.NewGrid())
		if err := pl.Save(8*vg.Inch, 4*vg.Inch, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
