package location

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

var t0 = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

func series(v ...float64) carbon.Series {
	return carbon.Series{Start: t0, Step: time.Hour, Values: v, Unit: carbon.GPerKWh}
}

func randomProblem(rng *rand.Rand, regions, slots, jobs, maxDev, maxWork int) Problem {
	p := Problem{Start: t0, Slots: slots, Migration: Migration{KWh: rng.Float64() * 0.5, Delay: time.Duration(rng.IntN(2)) * time.Hour}}
	for r := range regions {
		v := make([]float64, slots+2)
		for t := range v {
			v[t] = 10 + 400*rng.Float64()
		}
		p.Regions = append(p.Regions, Region{Name: string(rune('A' + r)), Intensity: series(v...), Devices: rng.IntN(3)})
	}
	for range jobs {
		a := rng.IntN(slots)
		p.Jobs = append(p.Jobs, Job{Home: rng.IntN(regions), Arrival: a, Deadline: a + 1 + rng.IntN(slots-a),
			Work: 1 + rng.IntN(maxWork), MaxDevices: 1 + rng.IntN(maxDev), Watts: 100 + 300*rng.Float64()})
	}
	return p
}

// bruteOracle enumerates every integer number of devices of every job in
// every (region, slot) of its window (splits allowed, the migration
// charged per device-hour as the oracle's flow does) and returns the
// least missed work and, for it, the least carbon.
func bruteOracle(p Problem) (int, float64) {
	in, err := newInstance(p)
	if err != nil {
		panic(err)
	}
	type cell struct{ job, r, t int }
	var cells []cell
	for i, j := range p.Jobs {
		for r := range p.Regions {
			for t := in.first(j, r); t < j.Deadline; t++ {
				cells = append(cells, cell{i, r, t})
			}
		}
	}
	used := make([][]int, len(p.Regions))
	for r := range used {
		used[r] = make([]int, p.Slots)
	}
	done := make([]int, len(p.Jobs))
	bestMiss, bestG := math.MaxInt, math.Inf(1)
	var walk func(k int, g float64)
	walk = func(k int, g float64) {
		if k == len(cells) {
			miss := 0
			for i, j := range p.Jobs {
				miss += j.Work - done[i]
			}
			if miss < bestMiss || (miss == bestMiss && g < bestG) {
				bestMiss, bestG = miss, g
			}
			return
		}
		c := cells[k]
		j := p.Jobs[c.job]
		for d := 0; d <= j.MaxDevices; d++ {
			if done[c.job]+d > j.Work || used[c.r][c.t]+d > p.Regions[c.r].Devices {
				break
			}
			done[c.job] += d
			used[c.r][c.t] += d
			walk(k+1, g+float64(d)*(in.gramsPerDeviceHour(j, c.r, c.t)+in.migrationG(j, c.r)/float64(j.Work)))
			done[c.job] -= d
			used[c.r][c.t] -= d
		}
	}
	walk(0, 0)
	return bestMiss, bestG
}

// TestOracleBruteForce: the min-cost flow equals exhaustive enumeration
// on 150 random instances of up to 2 regions, 3 slots and 2 jobs.
func TestOracleBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 3))
	for trial := range 150 {
		p := randomProblem(rng, 1+rng.IntN(2), 1+rng.IntN(3), 1+rng.IntN(2), 2, 3)
		got, err := Oracle(p)
		if err != nil {
			t.Fatal(err)
		}
		miss, g := bruteOracle(p)
		if got.MissedWork != miss || math.Abs(got.CarbonG-g) > 1e-9*max(1, g) {
			t.Fatalf("trial %d %+v: flow missed %d, %v g; brute force %d, %v g", trial, p, got.MissedWork, got.CarbonG, miss, g)
		}
	}
}

// TestPlannersAboveOracle: on 200 random instances, every planner's plan
// respects windows, capacities and MaxDevices, does its work or counts
// what is missed, and emits no less than the oracle when it misses no
// more; Plan never emits more than PlanHome when neither misses work
// and jobs cannot crowd each other out (one job).
func TestPlannersAboveOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 4))
	for trial := range 200 {
		p := randomProblem(rng, 1+rng.IntN(3), 2+rng.IntN(10), 1+rng.IntN(6), 3, 8)
		for r := range p.Regions {
			p.Regions[r].Devices = 1 + rng.IntN(4)
		}
		orc, err := Oracle(p)
		if err != nil {
			t.Fatal(err)
		}
		in, _ := newInstance(p)
		for name, f := range map[string]func(Problem) (Result, error){"Plan": Plan, "PlanHome": PlanHome, "Agnostic": Agnostic} {
			res, err := f(p)
			if err != nil {
				t.Fatal(err)
			}
			used := make([][]int, len(p.Regions))
			for r := range used {
				used[r] = make([]int, p.Slots)
			}
			g, missed := 0.0, 0
			for i, pl := range res.Placements {
				j := p.Jobs[i]
				work := 0
				for s, d := range pl.Devices {
					if d == 0 {
						continue
					}
					if d > j.MaxDevices || s < in.first(j, pl.Region) || s >= j.Deadline {
						t.Fatalf("trial %d %s job %d: %d devices in slot %d of region %d", trial, name, i, d, s, pl.Region)
					}
					used[pl.Region][s] += d
					work += d
					g += float64(d) * in.gramsPerDeviceHour(j, pl.Region, s)
				}
				if pl.Devices != nil {
					g += in.migrationG(j, pl.Region)
				}
				if work+pl.Missed != j.Work {
					t.Fatalf("trial %d %s job %d: %d done + %d missed of %d", trial, name, i, work, pl.Missed, j.Work)
				}
				missed += pl.Missed
			}
			for r := range used {
				for s, u := range used[r] {
					if u > p.Regions[r].Devices {
						t.Fatalf("trial %d %s: region %d slot %d: %d devices of %d", trial, name, r, s, u, p.Regions[r].Devices)
					}
				}
			}
			if math.Abs(g-res.CarbonG) > 1e-9*max(1, g) || missed != res.MissedWork {
				t.Fatalf("trial %d %s: reported %v g %d missed, recomputed %v g %d", trial, name, res.CarbonG, res.MissedWork, g, missed)
			}
			if res.MissedWork < orc.MissedWork {
				t.Fatalf("trial %d %s: missed %d, less than the oracle's %d", trial, name, res.MissedWork, orc.MissedWork)
			}
			if res.MissedWork == orc.MissedWork && res.CarbonG < orc.CarbonG*(1-1e-9) {
				t.Fatalf("trial %d %s: %v g below the oracle's %v g", trial, name, res.CarbonG, orc.CarbonG)
			}
		}
		if len(p.Jobs) == 1 {
			a, _ := Plan(p)
			h, _ := PlanHome(p)
			if a.MissedWork == 0 && h.MissedWork == 0 && a.CarbonG > h.CarbonG*(1+1e-9) {
				t.Fatalf("trial %d: Plan %v g above PlanHome %v g", trial, a.CarbonG, h.CarbonG)
			}
		}
	}
}

// TestShiftsToCleanRegion: a job at home in a dirty region moves to a
// clean one when the move pays, and stays when it does not.
func TestShiftsToCleanRegion(t *testing.T) {
	p := Problem{Start: t0, Slots: 4, Regions: []Region{
		{Name: "dirty", Intensity: series(400, 400, 400, 400), Devices: 4},
		{Name: "clean", Intensity: series(20, 20, 20, 20), Devices: 4},
	}, Jobs: []Job{{Home: 0, Arrival: 0, Deadline: 4, Work: 4, MaxDevices: 2, Watts: 250}},
		Migration: Migration{KWh: 0.5, Delay: time.Hour}}
	r, err := Plan(p)
	if err != nil {
		t.Fatal(err)
	}
	// Abroad: 4 device-hours × 0.25 kW × 20 g + 0.5 kWh × 20 g = 30 g;
	// at home 400 g.
	if r.Placements[0].Region != 1 || math.Abs(r.CarbonG-30) > 1e-9 || r.Moved != 1 {
		t.Fatalf("%+v", r)
	}
	p.Migration.KWh = 100 // 2,000 g to move, 400 g at home
	if r, _ = Plan(p); r.Placements[0].Region != 0 || r.Moved != 0 {
		t.Fatalf("costly move: %+v", r)
	}
}

// TestBadInput: a region with no data (or not covering the problem), bad
// jobs and bad migration are ErrInvalid.
func TestBadInput(t *testing.T) {
	ok := Problem{Start: t0, Slots: 2, Regions: []Region{{Name: "a", Intensity: series(1, 2), Devices: 1}},
		Jobs: []Job{{Arrival: 0, Deadline: 2, Work: 1, MaxDevices: 1, Watts: 100}}}
	if _, err := Oracle(ok); err != nil {
		t.Fatal(err)
	}
	mut := func(f func(*Problem)) Problem {
		p := ok
		p.Regions = append([]Region(nil), ok.Regions...)
		p.Jobs = append([]Job(nil), ok.Jobs...)
		f(&p)
		return p
	}
	for name, p := range map[string]Problem{
		"no data":      mut(func(p *Problem) { p.Regions[0].Intensity = carbon.Series{} }),
		"short data":   mut(func(p *Problem) { p.Slots = 3; p.Jobs[0].Deadline = 3 }),
		"no regions":   mut(func(p *Problem) { p.Regions = nil }),
		"home":         mut(func(p *Problem) { p.Jobs[0].Home = 1 }),
		"window":       mut(func(p *Problem) { p.Jobs[0].Deadline = 0 }),
		"work":         mut(func(p *Problem) { p.Jobs[0].Work = 0 }),
		"watts":        mut(func(p *Problem) { p.Jobs[0].Watts = math.NaN() }),
		"migration":    mut(func(p *Problem) { p.Migration.KWh = -1 }),
		"devices":      mut(func(p *Problem) { p.Regions[0].Devices = -1 }),
		"negative ci":  mut(func(p *Problem) { p.Regions[0].Intensity = series(1, -2) }),
		"not on hour":  mut(func(p *Problem) { p.Start = t0.Add(time.Minute) }),
		"hourly step":  mut(func(p *Problem) { p.Regions[0].Intensity.Step = time.Minute }),
		"zero slots":   mut(func(p *Problem) { p.Slots = 0 }),
		"bad unit":     mut(func(p *Problem) { p.Regions[0].Intensity.Unit = "furlongs" }),
		"arrival late": mut(func(p *Problem) { p.Jobs[0].Arrival = 2 }),
	} {
		for fname, f := range map[string]func(Problem) error{
			"Plan":   func(p Problem) error { _, err := Plan(p); return err },
			"Oracle": func(p Problem) error { _, err := Oracle(p); return err },
		} {
			if err := f(p); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s %s: %v, want ErrInvalid", name, fname, err)
			}
		}
	}
}
