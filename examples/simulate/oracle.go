package main

import (
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/carbon"
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/location"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler/sim"
)

// oracleName is the row -oracle adds.
const oracleName = "oracle"

// checkOracle checks -oracle against the other flags and the cluster, and
// makes sure goodput-carbon runs (the oracle provisions its schedule).
func checkOracle(o options, cluster accel.Cluster, names *[]string) error {
	if !o.oracle {
		return nil
	}
	if o.carbon == "" || o.slack <= 0 {
		return usage("-oracle needs -carbon and -slack")
	}
	types := cluster.Types()
	per := len(cluster.Nodes[0].Devices)
	for _, n := range cluster.Nodes {
		if len(n.Devices) != per {
			return usage("-oracle needs identical nodes (-cluster %s mixes node sizes)", o.cluster)
		}
	}
	if len(types) != 1 || len(cluster.Nodes) > provision.MaxOracleNodes {
		return usage("-oracle needs one device type and at most %d nodes", provision.MaxOracleNodes)
	}
	if !containsName(*names, provisioned) {
		*names = append(*names, provisioned)
	}
	return nil
}

// oracleSummary is the oracle row: each workload's goodput-carbon run
// (its jobs, as they ran) with the node states of least carbon for the
// devices it held, from provision.Oracle over the run's rounds to the
// latest deadline: the nodes on in each round are its busy devices packed
// onto as few nodes as possible, every state change is instantaneous, and
// the oracle knows the whole future. Its carbon is a lower bound for
// provisioning that schedule; JCT and deadline figures are the run's.
func oracleSummary(o options, g gridSettings, cluster accel.Cluster, base summary) (summary, error) {
	s := base
	s.Name = oracleName
	s.results, s.busyKg = nil, 0
	var kwh, kg float64
	for _, r := range base.results {
		in, busyJ, busyG, activeG, err := oracleInput(o, g.series, g.start, cluster, r)
		if err != nil {
			return s, err
		}
		res, err := provision.Oracle(in)
		if err != nil {
			return s, fmt.Errorf("oracle: %w", err)
		}
		kwh += res.KWh + busyJ*max(o.pue, 1)/carbon.JoulesPerKWh
		kg += (res.CarbonG + busyG) / 1000
		s.busyKg += activeG / 1000 / float64(len(base.results))
	}
	f := float64(len(base.results))
	kwh, kg = kwh/f, kg/f
	s.EnergyKWh, s.CarbonKg = &kwh, &kg
	return s, nil
}

// withOracle appends the oracle row to sums when -oracle is set.
func withOracle(o options, g gridSettings, cluster accel.Cluster, sums []summary) ([]summary, error) {
	if !o.oracle {
		return sums, nil
	}
	for _, s := range sums {
		if s.Name == provisioned {
			row, err := oracleSummary(o, g, cluster, s)
			if err != nil {
				return nil, err
			}
			return append(sums, row), nil
		}
	}
	return sums, nil
}

// oracleInput is provision.Oracle's problem for one run r that started
// at start: its busy devices in each round, packed onto as few nodes as
// possible, over the run's rounds to the latest deadline, at the series'
// intensity. busyJ is the busy devices' joules beyond the idle watts
// OnWatts charges, busyG their grams, activeG the busy devices' grams at
// active watts.
func oracleInput(o options, series carbon.Series, start time.Time, cluster accel.Cluster, r sim.Result) (in provision.OracleInput, busyJ, busyG, activeG float64, err error) {
	power := energy.PowerModel{PUE: o.pue}
	typ := cluster.Types()[0]
	pw, err := power.Power(typ)
	if err != nil {
		return in, 0, 0, 0, err
	}
	per := len(cluster.Nodes[0].Devices)
	step := o.interval
	if step == 0 {
		step = time.Minute // sim's default round, goodput-carbon's
	}
	end := time.Duration(0)
	for _, j := range r.Jobs {
		end = max(end, j.Submit+j.Isolated+o.slack)
	}
	if k := len(r.Utilization); k > 0 {
		end = max(end, r.Utilization[k-1].Time)
	}
	slots := int((end + step - 1) / step)
	in = provision.OracleInput{Nodes: len(cluster.Nodes), Step: step, OnWatts: float64(per) * pw.IdleWatts, PUE: o.pue,
		Need: make([]int, slots), IntensityGPerKWh: make([]float64, slots)}
	busy := make([]int, slots)
	for _, u := range r.Utilization {
		if k := int(u.Time / step); k < slots {
			busy[k] = u.Busy
		}
	}
	for k := range slots {
		at := start.Add(time.Duration(k) * step)
		i, ok := series.Index(at)
		if !ok {
			return in, 0, 0, 0, fmt.Errorf("oracle: %v is outside the -carbon series", at)
		}
		ci := series.Values[i]
		in.IntensityGPerKWh[k] = ci
		in.Need[k] = (busy[k] + per - 1) / per
		// A busy device draws active watts instead of the idle
		// watts OnWatts charges it.
		j := float64(busy[k]) * (pw.ActiveWatts - pw.IdleWatts) * step.Seconds()
		busyJ += j
		busyG += j * max(o.pue, 1) / carbon.JoulesPerKWh * ci
		activeG += float64(busy[k]) * pw.ActiveWatts * step.Seconds() * max(o.pue, 1) / carbon.JoulesPerKWh * ci
	}
	return in, busyJ, busyG, activeG, nil
}

// jointBoundName is the row -joint-bound adds.
const jointBoundName = "joint-bound"

// jointBoundSummary is the joint-bound row: for each workload, every
// job's device time — the least that goodput or goodput-carbon spent on
// it in this run — re-timed by location.Oracle (an exact min-cost flow)
// into the cleanest hours of its window (its submission to its deadline,
// widened to whole hours) on the cluster's devices, at active watts, with
// no idle device and no transition (perfect provisioning). No schedule
// that spends at least that device time on each job and meets the
// deadlines emits less, so it bounds what jointly re-planning jobs and
// nodes can reach with those device-hours; a schedule that runs jobs on
// fewer devices for longer could spend less device time and is not
// bounded by it. JCT and deadline figures are goodput-carbon's.
func jointBoundSummary(o options, g gridSettings, cluster accel.Cluster, sums []summary) (summary, error) {
	var base *summary
	var others [][]sim.Result
	for i := range sums {
		switch sums[i].Name {
		case provisioned:
			base = &sums[i]
			others = append(others, sums[i].results)
		case "goodput":
			others = append(others, sums[i].results)
		}
	}
	s := *base
	s.Name = jointBoundName
	s.results, s.busyKg = nil, 0
	pw, err := energy.PowerModel{PUE: o.pue}.Power(cluster.Types()[0])
	if err != nil {
		return s, err
	}
	const perDevice = 60 // flow units per device: device-minutes in an hour
	start := g.start.Truncate(time.Hour)
	var kg, kwh float64
	for w, r := range base.results {
		var end time.Duration
		p := location.Problem{Start: start, Regions: []location.Region{{Name: o.carbon, Intensity: g.series, Devices: cluster.Size() * perDevice}}}
		for k, j := range r.Jobs {
			secs := j.DeviceSeconds
			for _, rs := range others {
				secs = min(secs, rs[w].Jobs[k].DeviceSeconds)
			}
			due := g.start.Sub(start) + j.Submit + j.Isolated + o.slack
			end = max(end, due)
			if units := int(secs / 60); units > 0 {
				kwh += float64(units) * pw.ActiveWatts * max(o.pue, 1) / perDevice / 1000
				p.Jobs = append(p.Jobs, location.Job{Arrival: int((g.start.Sub(start) + j.Submit) / time.Hour), Deadline: int((due + time.Hour - 1) / time.Hour),
					Work: units, MaxDevices: cluster.Size() * perDevice, Watts: pw.ActiveWatts * max(o.pue, 1) / perDevice})
			}
		}
		p.Slots = int((end + time.Hour - 1) / time.Hour)
		res, err := location.Oracle(p)
		if err != nil {
			return s, fmt.Errorf("joint bound: %w", err)
		}
		if res.MissedWork > 0 {
			return s, fmt.Errorf("joint bound: workload %d: %d device-minutes do not fit before their deadlines", w, res.MissedWork)
		}
		kg += res.CarbonG / 1000
	}
	kg /= float64(len(base.results))
	kwh /= float64(len(base.results))
	s.CarbonKg, s.EnergyKWh, s.busyKg = &kg, &kwh, kg
	return s, nil
}

// withJointBound appends the joint-bound row when -joint-bound is set.
func withJointBound(o options, g gridSettings, cluster accel.Cluster, sums []summary) ([]summary, error) {
	if !o.jointBound {
		return sums, nil
	}
	row, err := jointBoundSummary(o, g, cluster, sums)
	if err != nil {
		return nil, err
	}
	return append(sums, row), nil
}
