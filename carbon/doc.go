// Package carbon runs delay-tolerant, elastic work when, and as wide as,
// the grid is clean: carbon-intensity series and their readers,
// forecasters, planners that decide how much of a job to run in each time
// slot to meet its deadline at least carbon, a per-slot capacity envelope
// for a cluster's elastic work, and energy and emission accounting.
//
// It imports none of goodsched's other packages; hosts and the examples
// connect it to goodput speedup curves (CurveFromSpeedup) and to accel's
// energy counters (EnergyFromCounters).
//
// # Host contract
//
//  1. Load intensity with a reader (ReadElectricityMaps with an explicit
//     Basis, ReadElectricityMapsLegacy, ReadTwoColumn, ReadWattTimeCSV,
//     ReadWattTimeJSON, ReadCarbonAwareSDK). Gaps and off-grid points are
//     errors unless ReadOptions.Grid.Fill says how to fill them; filled
//     values are flagged Estimated. Every Series carries its Unit, Signal
//     (average or marginal) and Basis (direct or life-cycle): convert with
//     Series.Convert (lbs/MWh × 0.45359237 = g/kWh) and do not compare
//     average with marginal signals. Resample to the slot length you plan
//     on with Series.Resample.
//  2. Wrap the data in a Forecaster: Perfect (replay), Persistence (same
//     time yesterday), Noisy (seeded Gaussian error as a fraction of the
//     mean), or your own provider through ForecasterFunc, and add Fallback
//     and Cache (with a TTL for live providers) as needed. carbon/live has
//     clients of Electricity Maps, WattTime and the Carbon Aware SDK, a
//     History over the embedded year that always answers, and Replay of
//     forecasts as they were issued.
//  3. Describe the job as a Curve (work per second and watts per scale),
//     from a CarbonScaler profile (ReadProfile) or a speedup curve
//     (CurveFromSpeedup), and its remaining work in the curve's units.
//  4. Schedule: Schedule is CarbonScaler's marginal planner (greedy by work per
//     gram, exact for concave curves, dynamic programming otherwise);
//     ScheduleWindow, ScheduleLowest, ScheduleStatic and ScheduleNow are the
//     non-interruptible, suspend-resume, best-static-scale and
//     carbon-agnostic baselines; LowerBound is an LP bound for checking.
//     An impossible deadline returns an *InfeasibleError that says how
//     much work fits.
//  5. Apply the first slot, and at the next slot boundary call
//     Replanner.Next again with the remaining work; for a whole cluster,
//     ClusterEnvelope gives the devices per slot that flexible work may
//     use. The scheduler package reads both: hand it the forecast as
//     scheduler.Input.Carbon and the envelope's current cap as
//     scheduler.Input.Envelope, and scheduler/carbonaware's policy plans
//     each delay-tolerant job with a deadline (Schedule, on the job's goodput
//     speedup curve) and caps it per round, any policy (Pollux's goodput
//     objective by default) deciding among the jobs that run;
//     energy.PowerModel.Account
//     charges each round's busy and idle devices through Emissions.
//  6. Account what ran: EnergyFromPower or EnergyFromCounters (wraps and
//     resets handled explicitly), then Emissions with the true intensity
//     and PUE: g = Σ P·Δt·CI / 3.6e6 × PUE, plus a per-unit-of-work
//     intensity.
//
// All functions are pure: values in, values out; no goroutines, no clock
// (except Cache with a TTL, which reads Cache.Now), randomness only from
// explicit seeds. Series, Curve, Plan and Envelope are plain values;
// Cache is the only type with internal state and it is safe for
// concurrent use.
package carbon
