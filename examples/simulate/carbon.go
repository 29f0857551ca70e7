package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/carbondata"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
)

// loadCarbon reads -carbon: "embedded" (California 2022, Electricity
// Maps, ODbL: package carbondata) or a file (optionally gzip) in any
// format carbon.Read reads; Electricity Maps portal files give their
// direct (operational) column.
func loadCarbon(name string) (carbon.Series, error) {
	var f io.ReadCloser
	var err error
	if name == "embedded" {
		f, err = carbondata.FS.Open(carbondata.California2022)
	} else {
		f, err = os.Open(name)
	}
	if err != nil {
		return carbon.Series{}, err
	}
	defer f.Close()
	s, err := carbon.Read(f, carbon.ReadOptions{Basis: carbon.Direct})
	if err != nil {
		return carbon.Series{}, err
	}
	if s.Unit == "" {
		s.Unit = carbon.GPerKWh // a two-column file says nothing: g/kWh, as the portal's
	}
	if s.Unit != carbon.GPerKWh {
		return s.Convert(carbon.GPerKWh)
	}
	return s, nil
}

// parseStart reads -start: RFC 3339 or a date (midnight UTC).
func parseStart(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02", v)
}

// parseWeights reads -sweep: comma-separated carbon weights in (0, 1].
func parseWeights(v string) ([]float64, error) {
	var ws []float64
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		w, err := strconv.ParseFloat(f, 64)
		if err != nil || !(w > 0 && w <= 1) {
			return nil, fmt.Errorf("weight %q: want a number in (0, 1]", f)
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("no weights")
	}
	return ws, nil
}

// carbonSpec is the goodput-carbon policy at carbon weight w, planning
// its jobs jointly (carbonaware.Policy.Joint) when joint is set, as it
// does under -provision.
func carbonSpec(w float64, joint bool) policySpec {
	return policySpec{
		about: fmt.Sprintf("goodput policy made carbon-aware (weight %g): delay-tolerant jobs with deadlines run in clean hours", w),
		build: func() (scheduler.Policy, error) { return carbonaware.Policy{CarbonWeight: w, Joint: joint}, nil },
		kind:  scheduler.Adaptive, perType: true,
	}
}

// sweepName is the policy name of the sweep's run at weight w.
func sweepName(w float64) string { return "goodput-carbon@" + strconv.FormatFloat(w, 'g', -1, 64) }

// plotTradeoff writes carbon-tradeoff.svg: average JCT against carbon, one
// point per policy (the sweep's weights and the carbon-agnostic goodput
// policy, marked apart).
func plotTradeoff(path string, sums []summary) error {
	p := plot.New()
	p.Title.Text = "Carbon against average JCT (mean over workloads)"
	p.X.Label.Text = "carbon (kg CO2eq per workload)"
	p.Y.Label.Text = "average JCT (hours)"
	p.Legend.Top = true
	var sweep, agnostic plotter.XYs
	var labels []string
	for _, s := range sums {
		if s.CarbonKg == nil {
			continue
		}
		pt := plotter.XY{X: *s.CarbonKg, Y: s.AvgJCT / 3600}
		if s.Name == "goodput" {
			agnostic = append(agnostic, pt)
			continue
		}
		sweep = append(sweep, pt)
		labels = append(labels, strings.TrimPrefix(s.Name, "goodput-carbon@"))
	}
	if len(sweep) > 0 {
		line, pts, err := plotter.NewLinePoints(sweep)
		if err != nil {
			return err
		}
		line.Color, pts.Color = palette[0], palette[0]
		pts.Shape = draw.CircleGlyph{}
		p.Add(line, pts)
		p.Legend.Add("goodput-carbon, by carbon weight", line, pts)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: sweep, Labels: labels})
		if err != nil {
			return err
		}
		lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(4)}
		p.Add(lb)
	}
	if len(agnostic) > 0 {
		sc, err := plotter.NewScatter(agnostic)
		if err != nil {
			return err
		}
		sc.Color, sc.Shape, sc.Radius = palette[1], draw.CrossGlyph{}, vg.Points(6)
		p.Add(sc)
		p.Legend.Add("goodput (carbon-agnostic)", sc)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// gridSettings are the carbon flags, resolved.
type gridSettings struct {
	series carbon.Series
	start  time.Time // zero: the simulator's default
}

// gridOptions checks the carbon flags, loads -carbon and adds the -sweep
// runs to names (and reg).
func gridOptions(o options, reg map[string]policySpec, names *[]string) (gridSettings, error) {
	var g gridSettings
	if o.slack < 0 {
		return g, usage("-slack %v is negative", o.slack)
	}
	if !(o.pue >= 1) || o.pue > 10 {
		return g, usage("-pue %v is outside [1, 10]", o.pue)
	}
	if o.carbon == "" {
		if o.start != "" || o.sweep != "" {
			return g, usage("-start and -sweep need -carbon")
		}
		return g, nil
	}
	s, err := loadCarbon(o.carbon)
	if err != nil {
		return g, usage("-carbon %s: %v", o.carbon, err)
	}
	g.series, g.start = s, s.Start
	if o.start != "" {
		t, err := parseStart(o.start)
		if err != nil {
			return g, usage("-start %q: want RFC 3339 or YYYY-MM-DD", o.start)
		}
		if _, ok := s.Index(t); !ok {
			return g, usage("-start %s is outside the -carbon series [%s, %s)", o.start, s.Start.Format(time.RFC3339), s.End().Format(time.RFC3339))
		}
		g.start = t
	}
	if o.sweep != "" {
		ws, err := parseWeights(o.sweep)
		if err != nil {
			return g, usage("-sweep: %v", err)
		}
		for _, w := range ws {
			n := sweepName(w)
			reg[n] = carbonSpec(w, false)
			if !containsName(*names, n) {
				*names = append(*names, n)
			}
		}
		if !containsName(*names, "goodput") {
			*names = append(*names, "goodput") // the carbon-agnostic point
		}
	}
	return g, nil
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// addCarbon sets the summary's carbon figures, averaged over its
// workloads.
func addCarbon(s *summary) {
	var kwh, kg, miss float64
	for _, r := range s.results {
		kwh += r.EnergyKWh
		kg += r.CarbonKg
		s.busyKg += r.BusyCarbonKg / float64(len(s.results))
		miss += float64(r.DeadlineMisses)
	}
	f := float64(len(s.results))
	kwh, kg, miss = kwh/f, kg/f, miss/f
	s.EnergyKWh, s.CarbonKg, s.DeadlineMisses = &kwh, &kg, &miss
}
