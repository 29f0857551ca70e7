// Package location decides where delay-tolerant work runs among regions
// whose grids differ (CarbonFlex's location dimension, Hanafy et al.,
// arXiv 2505.18357; the Carbon Aware SDK's "best location and time"): each
// job goes to one region, at a scale that may change every hour, inside
// its window, within each region's capacity, paying a migration cost
// (energy and a delay) when it leaves the region it was submitted in.
//
// Plan is the online planner: jobs in arrival order, each planned in
// every region at least carbon over the intensity of its window (the
// forecast), and placed where its plan, plus the migration, emits least.
// PlanHome is single-region planning (the same, at home only), Agnostic
// the carbon-agnostic reference (at home, as early as capacity allows),
// and Oracle the offline optimum that knows every job in advance: an
// exact min-cost flow over jobs, hours and regions (a lower bound on the
// carbon of any plan of the problem).
//
// The package imports carbon only.
package location

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// ErrInvalid reports a bad problem, wrapped with the field at fault.
var ErrInvalid = errors.New("location: invalid input")

// Region is one region's grid and capacity.
type Region struct {
	// Name names the region in errors.
	Name string
	// Intensity is the grid's carbon intensity, hourly, covering every
	// slot of the problem (g/kWh or a unit carbon converts to g/kWh).
	Intensity carbon.Series
	// Devices is how many devices the region's cluster has.
	Devices int
}

// Job is one delay-tolerant job. Slots are hours from Problem.Start.
type Job struct {
	// Home is the index of the region it was submitted in.
	Home int
	// Arrival is the first slot it may run in at home; it must finish by
	// the end of slot Deadline−1.
	Arrival, Deadline int
	// Work is its device-hours (linear in devices: d devices for an hour
	// do d device-hours), MaxDevices the most it may run on at once.
	Work, MaxDevices int
	// Watts is the draw of one of its devices, PUE included.
	Watts float64
}

// Migration is what moving a job out of its home region costs.
type Migration struct {
	// KWh is the energy of moving its data and checkpoint, charged at the
	// destination's intensity in the arrival slot.
	KWh float64
	// Delay is how long the move takes: the job may run abroad from
	// Arrival + ⌈Delay⌉ hours.
	Delay time.Duration
}

// Problem is a set of jobs to place over regions.
type Problem struct {
	// Start is slot 0; Slots how many hourly slots there are (every
	// Deadline ≤ Slots).
	Start time.Time
	Slots int
	// Regions and Jobs; Migration applies to every job moved.
	Regions   []Region
	Jobs      []Job
	Migration Migration
}

// Placement is where and how one job runs.
type Placement struct {
	// Region is the index of the region it runs in (home when it fits
	// nowhere).
	Region int
	// Devices[t] is how many devices it runs on in slot t (nil when it
	// does not run).
	Devices []int
	// Missed is the device-hours that did not fit before the deadline.
	Missed int
	// CarbonG is the emissions of its devices and its migration.
	CarbonG float64
}

// Result is a plan of a Problem.
type Result struct {
	// Placements holds each job's placement, indexed as Problem.Jobs.
	Placements []Placement
	// CarbonG is the emissions of every job's devices and migrations;
	// MissedWork the device-hours that did not fit; Moved how many jobs
	// left home.
	CarbonG    float64
	MissedWork int
	Moved      int
}

// instance is a validated problem: intensities per region and slot.
type instance struct {
	p     Problem
	ci    [][]float64 // g/kWh
	delay int
}

func newInstance(p Problem) (*instance, error) {
	if p.Slots < 1 {
		return nil, fmt.Errorf("%w: Problem.Slots %d: want at least 1", ErrInvalid, p.Slots)
	}
	if len(p.Regions) == 0 {
		return nil, fmt.Errorf("%w: Problem.Regions is empty", ErrInvalid)
	}
	m := p.Migration
	if !(m.KWh >= 0) || math.IsInf(m.KWh, 0) || m.Delay < 0 {
		return nil, fmt.Errorf("%w: Problem.Migration: KWh %v, Delay %v: want finite and not negative", ErrInvalid, m.KWh, m.Delay)
	}
	in := &instance{p: p, delay: int((m.Delay + time.Hour - 1) / time.Hour)}
	for r, reg := range p.Regions {
		if reg.Devices < 0 {
			return nil, fmt.Errorf("%w: Regions[%d] (%s).Devices %d is negative", ErrInvalid, r, reg.Name, reg.Devices)
		}
		s := reg.Intensity
		if len(s.Values) == 0 {
			return nil, fmt.Errorf("%w: Regions[%d] (%s) has no intensity data", ErrInvalid, r, reg.Name)
		}
		if s.Unit != carbon.GPerKWh && s.Unit != "" {
			c, err := s.Convert(carbon.GPerKWh)
			if err != nil {
				return nil, fmt.Errorf("%w: Regions[%d] (%s): %w", ErrInvalid, r, reg.Name, err)
			}
			s = c
		}
		if s.Step != time.Hour {
			return nil, fmt.Errorf("%w: Regions[%d] (%s): intensity step %v, want 1h", ErrInvalid, r, reg.Name, s.Step)
		}
		k, ok := s.Index(p.Start)
		if !ok || k+p.Slots > len(s.Values) || !s.TimeAt(k).Equal(p.Start) {
			return nil, fmt.Errorf("%w: Regions[%d] (%s) has no data for [%s, +%dh) on the hour", ErrInvalid, r, reg.Name, p.Start.Format(time.RFC3339), p.Slots)
		}
		v := s.Values[k : k+p.Slots]
		for t, x := range v {
			if !(x >= 0) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%w: Regions[%d] (%s): intensity %v at slot %d", ErrInvalid, r, reg.Name, x, t)
			}
		}
		in.ci = append(in.ci, v)
	}
	for i, j := range p.Jobs {
		switch {
		case j.Home < 0 || j.Home >= len(p.Regions):
			return nil, fmt.Errorf("%w: Jobs[%d].Home %d: want 0..%d", ErrInvalid, i, j.Home, len(p.Regions)-1)
		case j.Arrival < 0 || j.Deadline > p.Slots || j.Arrival >= j.Deadline:
			return nil, fmt.Errorf("%w: Jobs[%d]: Arrival %d, Deadline %d: want 0 ≤ Arrival < Deadline ≤ %d", ErrInvalid, i, j.Arrival, j.Deadline, p.Slots)
		case j.Work < 1 || j.MaxDevices < 1:
			return nil, fmt.Errorf("%w: Jobs[%d]: Work %d, MaxDevices %d: want at least 1", ErrInvalid, i, j.Work, j.MaxDevices)
		case !(j.Watts >= 0) || math.IsInf(j.Watts, 0):
			return nil, fmt.Errorf("%w: Jobs[%d].Watts %v", ErrInvalid, i, j.Watts)
		}
	}
	return in, nil
}

// first is the first slot job j may run in region r.
func (in *instance) first(j Job, r int) int {
	if r == j.Home {
		return j.Arrival
	}
	return j.Arrival + in.delay
}

// gramsPerDeviceHour is one device-hour of job j in region r, slot t.
func (in *instance) gramsPerDeviceHour(j Job, r, t int) float64 {
	return j.Watts / 1000 * in.ci[r][t]
}

// migrationG is the carbon of moving job j to region r.
func (in *instance) migrationG(j Job, r int) float64 {
	if r == j.Home {
		return 0
	}
	return in.p.Migration.KWh * in.ci[r][j.Arrival]
}

type mode int

const (
	anywhere mode = iota // Plan
	home                 // PlanHome
	asap                 // Agnostic
)

// Plan places the jobs one by one in arrival order (ties: input order),
// each where its least-carbon plan emits least with the migration (ties:
// home, then the lower index), within the capacity the jobs placed before
// it left. In a region, a job's plan takes the cleanest hours of its
// window (ties: the earlier) at as many devices as it may and the region
// has free, until its work is done; the window's intensity is known (a
// perfect forecast of the window; the later jobs are not). A job that fits
// nowhere runs at home on what it can get and the rest is MissedWork.
func Plan(p Problem) (Result, error) { return run(p, anywhere) }

// PlanHome is Plan with every job kept in its home region: single-region
// carbon-aware planning.
func PlanHome(p Problem) (Result, error) { return run(p, home) }

// Agnostic runs every job at home from its arrival, as many devices as
// it may and capacity allows, hour after hour: the carbon-agnostic
// reference.
func Agnostic(p Problem) (Result, error) { return run(p, asap) }

func run(p Problem, m mode) (Result, error) {
	in, err := newInstance(p)
	if err != nil {
		return Result{}, err
	}
	free := make([][]int, len(p.Regions))
	for r := range free {
		free[r] = make([]int, p.Slots)
		for t := range free[r] {
			free[r][t] = p.Regions[r].Devices
		}
	}
	order := make([]int, len(p.Jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p.Jobs[order[a]].Arrival < p.Jobs[order[b]].Arrival })
	res := Result{Placements: make([]Placement, len(p.Jobs))}
	var slots []int
	for _, i := range order {
		j := p.Jobs[i]
		best, bestG := -1, math.Inf(1)
		regions := []int{j.Home}
		if m == anywhere {
			for r := range p.Regions {
				if r != j.Home {
					regions = append(regions, r)
				}
			}
		}
		for _, r := range regions {
			g, ok := in.cost(j, r, free[r], m == asap, &slots)
			if ok && g < bestG {
				best, bestG = r, g
			}
		}
		pl := Placement{Region: best}
		if best < 0 {
			pl.Region = j.Home
		}
		r := pl.Region
		if r != regions[len(regions)-1] { // slots holds the last region cost ordered
			in.order(j, r, m == asap, &slots)
		}
		left := j.Work
		for _, t := range slots {
			if left == 0 {
				break
			}
			d := min(j.MaxDevices, free[r][t], left)
			if d == 0 {
				continue
			}
			if pl.Devices == nil {
				pl.Devices = make([]int, p.Slots)
			}
			pl.Devices[t] = d
			free[r][t] -= d
			left -= d
			pl.CarbonG += float64(d) * in.gramsPerDeviceHour(j, r, t)
		}
		if pl.Devices != nil && r != j.Home {
			pl.CarbonG += in.migrationG(j, r)
			res.Moved++
		}
		res.CarbonG += pl.CarbonG
		pl.Missed = left
		res.MissedWork += left
		res.Placements[i] = pl
	}
	return res, nil
}

// order fills slots with job j's usable slots of region r: the cleanest
// first (ties: earlier), or the earliest first when early.
func (in *instance) order(j Job, r int, early bool, slots *[]int) {
	*slots = (*slots)[:0]
	for t := in.first(j, r); t < j.Deadline; t++ {
		*slots = append(*slots, t)
	}
	if !early {
		ci := in.ci[r]
		sort.SliceStable(*slots, func(a, b int) bool { return ci[(*slots)[a]] < ci[(*slots)[b]] })
	}
}

// cost is the carbon of job j's plan in region r with free capacity, and
// whether its work fits.
func (in *instance) cost(j Job, r int, free []int, early bool, slots *[]int) (float64, bool) {
	in.order(j, r, early, slots)
	left, g := j.Work, in.migrationG(j, r)
	for _, t := range *slots {
		d := min(j.MaxDevices, free[t], left)
		left -= d
		g += float64(d) * in.gramsPerDeviceHour(j, r, t)
		if left == 0 {
			return g, true
		}
	}
	return g, false
}
