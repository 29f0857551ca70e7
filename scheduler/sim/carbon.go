package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// ForecastHorizon is how much of Config.Carbon each round hands the
// policy as its (perfect) forecast, from the slot holding the round's
// time; less where the series ends first.
const ForecastHorizon = 7 * 24 * time.Hour

// grid is the engine's carbon state: deadlines and the running account.
type grid struct {
	deadline map[int]float64 // job index → deadline, seconds on the workload clock
	energy   energy.Totals
}

// checkGrid validates the carbon settings of c.
func (c *Config) checkGrid() error {
	if c.Slack < 0 {
		return fmt.Errorf("%w: Slack %v is negative", ErrInvalid, c.Slack)
	}
	if err := c.Power.Validate(); err != nil {
		return fmt.Errorf("%w: Power: %w", ErrInvalid, err)
	}
	if len(c.Carbon.Values) == 0 {
		if c.Provision != nil {
			return fmt.Errorf("%w: Provision needs Carbon (the series nodes are powered and accounted against)", ErrInvalid)
		}
		return nil
	}
	if err := c.Carbon.Validate(); err != nil {
		return fmt.Errorf("%w: Carbon: %w", ErrInvalid, err)
	}
	if _, ok := c.Carbon.Index(c.Start); !ok {
		return fmt.Errorf("%w: Start %v is outside the Carbon series [%v, %v)", ErrInvalid, c.Start, c.Carbon.Start, c.Carbon.End())
	}
	for _, t := range c.Cluster.Types() {
		if _, err := c.Power.Power(t); err != nil {
			return fmt.Errorf("%w: Power: %w", ErrInvalid, err)
		}
	}
	return nil
}

// gridOf returns the engine's carbon state, creating it on first use.
func (e *engine) gridOf() *grid {
	if e.grid == nil {
		e.grid = &grid{deadline: map[int]float64{}}
	}
	return e.grid
}

// deadlineOf returns job j's deadline (seconds on the workload clock):
// its submission plus its isolated run time plus Config.Slack.
func (e *engine) deadlineOf(j *job) float64 {
	g := e.gridOf()
	d, ok := g.deadline[j.idx]
	if !ok {
		d = j.submit + e.isolated(j) + e.cfg.Slack.Seconds()
		g.deadline[j.idx] = d
	}
	return d
}

// carbonView adds the deadline, the delay tolerance and the remaining
// work (the time its isolated configuration needs from its current
// progress, ground truth, times that configuration's speedup over one
// device) to what the policy sees of job j, when Config.Slack is set.
func (e *engine) carbonView(j *job, sj *scheduler.Job) {
	if e.cfg.Slack <= 0 {
		return
	}
	sj.Deadline = e.cfg.Start.Add(dur(e.deadlineOf(j)))
	sj.DelayTolerant = true
	if sj.RemainingWork == 0 {
		// In one-device units: the isolated configuration's remaining
		// time × its speedup over one device, as the job's own Speedup
		// predicts it (× its device count while the Speedup knows nothing
		// that wide yet).
		r := j.spec.Replicas
		scale := float64(r)
		if sj.Speedup != nil {
			typ := j.app.DefaultType()
			per := max(e.perNode[typ], 1)
			if v := sj.Speedup.Speedup(string(typ), (r+per-1)/per, r); v > 0 && v < scale {
				scale = v
			}
		}
		sj.RemainingWork = e.isolatedFrom(j, j.progress, j.epoch) * scale
	}
}

// forecast returns what the round at Input.Now = now sees of the grid.
func (e *engine) forecast(now time.Time) carbon.Series {
	s := e.cfg.Carbon
	k, ok := s.Index(now)
	if !ok {
		return carbon.Series{}
	}
	n := min(len(s.Values)-k, int(ForecastHorizon/s.Step))
	out := s
	out.Start, out.Values = s.TimeAt(k), s.Values[k:k+n]
	if s.Estimated != nil {
		out.Estimated = s.Estimated[k : k+n]
	}
	return out
}

// account adds the energy and emissions of the next dt seconds, with the
// devices held now, to the run's total.
func (e *engine) account(dt float64) error {
	if len(e.cfg.Carbon.Values) == 0 {
		return nil
	}
	var busy []placement.Assignment
	for _, j := range e.live {
		if !j.done && len(j.devs) > 0 {
			busy = append(busy, placement.Assignment{Job: j.spec.Name, Devices: j.devs})
		}
	}
	from := e.cfg.Start.Add(dur(e.now))
	d := dur(dt)
	s := e.cfg.Carbon
	k, ok := s.Index(from)
	end := from.Add(d)
	if !ok || end.After(s.End()) {
		return fmt.Errorf("%w: the simulation runs past the Carbon series (at %v; it ends %v)", ErrInvalid, from, s.End())
	}
	m := int((end.Sub(s.Start) + s.Step - 1) / s.Step)
	win := s
	win.Start, win.Values, win.Estimated = s.TimeAt(k), s.Values[k:m], nil
	var en energy.Totals
	var err error
	if pw := e.powerOf(); pw != nil {
		en, err = e.cfg.Power.AccountNodes(e.cluster, busy, pw.nodeIntervals(e.now, dt), from, d, win)
	} else {
		en, err = e.cfg.Power.Account(e.cluster, busy, from, d, win)
	}
	if err != nil {
		return fmt.Errorf("sim: energy at %v: %w", dur(e.now), err)
	}
	g := e.gridOf()
	g.energy = g.energy.Add(en)
	return nil
}

// carbonResult fills the Result's energy, carbon and deadline figures.
// With Slack, the account runs on to the latest deadline when the run
// ends earlier (what still holds devices stays busy, the rest idle), so
// that every policy is charged over the same window.
func (e *engine) carbonResult(r *Result) error {
	if e.cfg.Slack > 0 {
		last := 0.0
		for _, j := range e.jobs {
			d := e.deadlineOf(j)
			last = max(last, d)
			if !j.done || j.finish > d+1e-9 {
				r.DeadlineMisses++
			}
		}
		if tail := last - e.now; tail >= 1 {
			e.refreshLive()
			if err := e.provision(context.Background(), nil); err != nil {
				return err
			}
			if err := e.account(tail); err != nil {
				return err
			}
		}
	}
	if len(e.cfg.Carbon.Values) > 0 {
		g := e.gridOf()
		r.EnergyKWh, r.CarbonKg = g.energy.KWh, g.energy.CarbonG/1000
		r.BusyCarbonKg, r.IdleCarbonKg = g.energy.BusyG/1000, g.energy.IdleG/1000
		r.DownCarbonKg, r.TransitionCarbonKg = g.energy.DownG/1000, g.energy.TransitionG/1000
	}
	if e.pow != nil {
		r.Transitions = e.pow.transitions
	}
	return nil
}

// deferrable reports whether a waiting job has a deadline still ahead
// (Config.Slack): a carbon-aware policy may be holding it back for
// cleaner hours, so the run is not stuck yet.
func (e *engine) deferrable() bool {
	if e.cfg.Slack <= 0 {
		return false
	}
	for _, j := range e.live {
		if !j.done && len(j.devs) == 0 && e.deadlineOf(j) > e.now {
			return true
		}
	}
	return false
}
