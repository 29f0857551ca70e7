// Command location back-tests package location over a year of the three
// embedded grids (Electricity Maps 2022, hourly: California, Spain,
// Norway; package carbondata, ODbL): a cluster in each region, a stream
// of delay-tolerant jobs submitted in each, and four ways to run them:
//
//   - agnostic: at home, from arrival, as fast as capacity allows;
//   - single-region: carbon-aware planning at home (location.PlanHome);
//   - location: the location planner (location.Plan): each job, in
//     arrival order, goes to the region and hours of least carbon,
//     migration included;
//   - oracle: the offline optimum (location.Oracle, a min-cost flow that
//     knows every job in advance; a lower bound).
//
// The year is 52 weekly problems from 2022-01-01: the jobs submitted in a
// week, on clusters that start the week empty, each problem 9 days long
// (deadlines past the data's end are clipped to it). Savings are against
// agnostic. It prints the carbon of each, the location planner's share of
// the oracle's savings, its savings over single-region planning's, and
// the same per home region (single-region planning's savings there,
// against the location planner's on the same jobs).
//
//	go run ./examples/location
//	go run ./examples/location -json
//
// Jobs (deterministic, -seed): per region, arrivals with exponential
// gaps of mean -gap; each runs for 2–12 h on 1–4 devices (uniform), may
// scale to twice that, and is due its run time plus -slack after
// arrival; a device draws 300 W (PUE included). Moving a job costs
// -migration-kwh at the destination's intensity and -migration-delay.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"text/tabwriter"
	"time"

	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/carbon/carbondata"
	"github.com/goodsched/goodsched/location"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	devices        int
	gap, slack     time.Duration
	migrationKWh   float64
	migrationDelay time.Duration
	seed           uint64
	json           bool
}

// report is the -json output.
type report struct {
	AgnosticKg     float64 `json:"agnostic_kg"`
	SingleRegionKg float64 `json:"single_region_kg"`
	LocationKg     float64 `json:"location_kg"`
	OracleKg       float64 `json:"oracle_kg"`
	// LocationOfOracleSavings is (agnostic − location) / (agnostic −
	// oracle); LocationOverSingleRegion is (agnostic − location) /
	// (agnostic − single-region).
	LocationOfOracleSavings  float64        `json:"location_of_oracle_savings"`
	LocationOverSingleRegion float64        `json:"location_over_single_region_savings"`
	MissedDeviceHours        [4]int         `json:"missed_device_hours"` // agnostic, single-region, location, oracle
	Moved                    int            `json:"jobs_moved"`
	Jobs                     int            `json:"jobs"`
	Regions                  []regionReport `json:"regions"`
}

// regionReport is the jobs submitted in one region.
type regionReport struct {
	Name           string  `json:"name"`
	Jobs           int     `json:"jobs"`
	AgnosticKg     float64 `json:"agnostic_kg"`
	SingleRegionKg float64 `json:"single_region_kg"`
	LocationKg     float64 `json:"location_kg"`
	// LocationOverSingleRegion is the location planner's savings on these
	// jobs over single-region planning's.
	LocationOverSingleRegion float64 `json:"location_over_single_region_savings"`
}

var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fl := flag.NewFlagSet("location", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.IntVar(&o.devices, "devices", 16, "devices of each region's cluster")
	fl.DurationVar(&o.gap, "gap", 4*time.Hour, "mean time between job submissions in each region")
	fl.DurationVar(&o.slack, "slack", 24*time.Hour, "each job is due its run time plus this after arrival")
	fl.Float64Var(&o.migrationKWh, "migration-kwh", 5, "energy of moving a job to another region (kWh)")
	fl.DurationVar(&o.migrationDelay, "migration-delay", time.Hour, "time a move takes before the job may run abroad")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the job stream")
	fl.BoolVar(&o.json, "json", false, "print one JSON object")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := backtest(o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "location: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func backtest(o options, stdout, stderr io.Writer) error {
	if o.devices < 1 || o.gap <= 0 || o.slack < 0 || !(o.migrationKWh >= 0) || o.migrationDelay < 0 {
		return fmt.Errorf("%w: -devices ≥ 1, -gap > 0, -slack, -migration-kwh and -migration-delay ≥ 0", errUsage)
	}
	names := []string{"California", "Spain", "Norway"}
	var regions []location.Region
	for i, f := range []string{carbondata.California2022, carbondata.Spain2022, carbondata.Norway2022} {
		r, err := carbondata.FS.Open(f)
		if err != nil {
			return err
		}
		s, err := carbon.Read(r, carbon.ReadOptions{Basis: carbon.Direct})
		r.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		regions = append(regions, location.Region{Name: names[i], Intensity: s, Devices: o.devices})
	}
	rng := rand.New(rand.NewPCG(o.seed, 49))
	start := regions[0].Intensity.Start
	end := regions[0].Intensity.End()
	var rep report
	rep.Regions = make([]regionReport, len(regions))
	for r := range regions {
		rep.Regions[r].Name = names[r]
	}
	week := 7 * 24
	for w := range 52 {
		ws := start.Add(time.Duration(w*week) * time.Hour)
		slots := min(week+48, int(end.Sub(ws)/time.Hour))
		p := location.Problem{Start: ws, Slots: slots, Regions: regions,
			Migration: location.Migration{KWh: o.migrationKWh, Delay: o.migrationDelay}}
		for h := range regions {
			at := 0.0
			for {
				at += rng.ExpFloat64() * o.gap.Hours()
				if at >= float64(week) {
					break
				}
				a := int(at)
				hours, devs := 2+rng.IntN(11), 1+rng.IntN(4)
				due := min(slots, a+hours+int(math.Ceil(o.slack.Hours())))
				p.Jobs = append(p.Jobs, location.Job{Home: h, Arrival: a, Deadline: due,
					Work: hours * devs, MaxDevices: 2 * devs, Watts: 300})
			}
		}
		var plans [3]location.Result // agnostic, single-region, location
		for k, plan := range []func(location.Problem) (location.Result, error){location.Agnostic, location.PlanHome, location.Plan} {
			var err error
			if plans[k], err = plan(p); err != nil {
				return err
			}
		}
		ag, home, loc := plans[0], plans[1], plans[2]
		orc, err := location.Oracle(p)
		if err != nil {
			return err
		}
		rep.AgnosticKg += ag.CarbonG / 1000
		rep.SingleRegionKg += home.CarbonG / 1000
		rep.LocationKg += loc.CarbonG / 1000
		rep.OracleKg += orc.CarbonG / 1000
		for k, m := range []int{ag.MissedWork, home.MissedWork, loc.MissedWork, orc.MissedWork} {
			rep.MissedDeviceHours[k] += m
		}
		rep.Moved += loc.Moved
		rep.Jobs += len(p.Jobs)
		for i, j := range p.Jobs {
			rr := &rep.Regions[j.Home]
			rr.Jobs++
			rr.AgnosticKg += ag.Placements[i].CarbonG / 1000
			rr.SingleRegionKg += home.Placements[i].CarbonG / 1000
			rr.LocationKg += loc.Placements[i].CarbonG / 1000
		}
		if w%13 == 12 {
			fmt.Fprintf(stderr, "  %d/52 weeks\n", w+1)
		}
	}
	rep.LocationOfOracleSavings = (rep.AgnosticKg - rep.LocationKg) / (rep.AgnosticKg - rep.OracleKg)
	rep.LocationOverSingleRegion = (rep.AgnosticKg - rep.LocationKg) / (rep.AgnosticKg - rep.SingleRegionKg)
	for r := range rep.Regions {
		rr := &rep.Regions[r]
		rr.LocationOverSingleRegion = (rr.AgnosticKg - rr.LocationKg) / (rr.AgnosticKg - rr.SingleRegionKg)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "a year (52 weeks of 2022) of %d jobs, %d devices per region; savings against agnostic\n", rep.Jobs, o.devices)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tCO2 (kg)\tsaving\tmissed device-hours\t")
	for k, row := range []struct {
		name string
		kg   float64
	}{{"agnostic", rep.AgnosticKg}, {"single-region", rep.SingleRegionKg}, {"location", rep.LocationKg}, {"oracle", rep.OracleKg}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f%%\t%d\t\n", row.name, row.kg, 100*(1-row.kg/rep.AgnosticKg), rep.MissedDeviceHours[k])
	}
	tw.Flush()
	fmt.Fprintf(stdout, "location: %.1f%% of the oracle's savings; %.2f× single-region planning's savings (%d of %d jobs moved)\n",
		100*rep.LocationOfOracleSavings, rep.LocationOverSingleRegion, rep.Moved, rep.Jobs)
	for _, rr := range rep.Regions {
		fmt.Fprintf(stdout, "  submitted in %-10s %5d jobs: single-region saves %5.1f%%, location %5.1f%% (%.2f×)\n", rr.Name, rr.Jobs,
			100*(1-rr.SingleRegionKg/rr.AgnosticKg), 100*(1-rr.LocationKg/rr.AgnosticKg), rr.LocationOverSingleRegion)
	}
	return nil
}
