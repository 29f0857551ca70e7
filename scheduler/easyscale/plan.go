package easyscale

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// DefaultMaxWaste is EasyScale's cap on a proposal's load-imbalance waste
// (EasyPolicy._max_waste in the artifact's simulator/easy_policy.py).
const DefaultMaxWaste = 0.30

// growth is how much a running job's device count may grow in one round:
// at most to twice what it holds (submit_proposals in the artifact's
// simulator.py).
const growth = 2

// ErrInvalid reports malformed input to Split, Waste or Plan: mismatched
// lengths, negative counts, a worker count below one, NaN or negative
// times.
var ErrInvalid = errors.New("easyscale: invalid input")

// Split assigns workers logical workers to devices[τ] devices of each type
// τ, where one worker takes workerSeconds[τ] on a device of type τ: every
// device hosts at least one worker, and the rest go, a level at a time, to
// the type whose devices would finish their next worker soonest, so the
// busiest device's time is the least possible (EasyScale's intra-job split
// in proportion to speed, made exact). perType[τ] workers go to type τ,
// spread evenly (the busiest of its devices hosts
// ceil(perType[τ]/devices[τ])); seconds is the busiest device's time.
// ok is false when the devices outnumber the workers, there is no device,
// or a type with devices has no positive time.
func Split(workers int, devices []int, workerSeconds []float64) (perType []int, seconds float64, ok bool) {
	if len(devices) != len(workerSeconds) || workers < 1 {
		return nil, 0, false
	}
	perType = make([]int, len(devices))
	level := make([]int, len(devices))
	left := workers
	for i, d := range devices {
		if d < 0 {
			return nil, 0, false
		}
		if d == 0 {
			continue
		}
		if !(workerSeconds[i] > 0) || math.IsInf(workerSeconds[i], 0) {
			return nil, 0, false
		}
		perType[i], level[i] = d, 1
		left -= d
		seconds = max(seconds, workerSeconds[i])
	}
	if left < 0 || seconds == 0 {
		return nil, 0, false
	}
	for left > 0 {
		best := -1
		for i, d := range devices {
			if d > 0 && (best < 0 || float64(level[i]+1)*workerSeconds[i] < float64(level[best]+1)*workerSeconds[best]) {
				best = i
			}
		}
		add := min(left, devices[best])
		perType[best] += add
		left -= add
		level[best]++
		seconds = max(seconds, float64(level[best])*workerSeconds[best])
	}
	return perType, seconds, true
}

// Waste is EasyScale's load-imbalance waste of running workers logical
// workers as perType[τ] on devices[τ] devices of each type: the share of
// the devices' capacity left idle while the busiest device works,
//
//	waste = 1 − (workers / T) / Σ_τ devices[τ] / workerSeconds[τ],
//
// T = max_τ ceil(perType[τ]/devices[τ]) · workerSeconds[τ]. It is what the
// artifact's Intrajob.waste computes for mixed-type proposals (its
// theory − ref terms plus the surplus thread slots over the largest
// scale, divided by the theoretical capacity, reduce to this); the
// artifact reports 0 for single-type proposals instead, which this
// function does not (4 workers on 3 devices waste 1/3 of them). NaN for
// input Split would reject.
func Waste(workers int, devices, perType []int, workerSeconds []float64) float64 {
	if len(devices) != len(perType) || len(devices) != len(workerSeconds) || workers < 1 {
		return math.NaN()
	}
	busiest, capacity, sum := 0.0, 0.0, 0
	for i, d := range devices {
		if d == 0 {
			if perType[i] != 0 {
				return math.NaN()
			}
			continue
		}
		if d < 0 || perType[i] < d || !(workerSeconds[i] > 0) {
			return math.NaN()
		}
		k := (perType[i] + d - 1) / d
		busiest = max(busiest, float64(k)*workerSeconds[i])
		capacity += float64(d) / workerSeconds[i]
		sum += perType[i]
	}
	if sum != workers || capacity == 0 {
		return math.NaN()
	}
	return max(0, 1-float64(workers)/busiest/capacity)
}

// Options configure Plan. The zero value is EasyScale's heterogeneous
// policy with its 0.30 waste cap.
type Options struct {
	// MaxWaste rejects proposals whose Waste exceeds it; 0 means
	// DefaultMaxWaste.
	MaxWaste float64
	// Homogeneous keeps every job on one device type (EasyScale-homo):
	// the type it starts on.
	Homogeneous bool
}

// Job is one job as the inter-job policy sees it.
type Job struct {
	// Workers is the job's logical worker count W (≥ 1).
	Workers int
	// Current is how many devices of each type the job holds now; all
	// zero (or nil) for a job that waits.
	Current []int
	// WorkerSeconds is one worker's time on each type; 0 where the job
	// cannot run (no model, or a type it may not use).
	WorkerSeconds []float64
	// OneType keeps the job on one device type (as Options.Homogeneous
	// does for every job).
	OneType bool
	// MaxDevices is the most devices the job may hold (its MaxReplicas);
	// 0 means Workers. A running job that holds more gives up devices of
	// its slowest types until it fits.
	MaxDevices int
	// Speedup rates running perType workers on devices (both per type),
	// as the job's throughput model predicts; 0 = unusable. nil rates by
	// the split alone: the slowest usable type's worker time × Workers over
	// the busiest device's time (the artifact's speedup, relative to one
	// device of that type).
	Speedup func(devices, perType []int) float64
}

// Grant is Plan's decision for one job: the devices of each type it holds
// after the round, with the workers of each type, and Note, a short
// account in words (empty when nothing changed).
type Grant struct {
	Devices, Workers []int
	Note             string
}

type increment struct {
	job, typ, add int
	gain          float64
	devices       []int // the job's devices per type after it
}

// Plan is EasyScale's inter-job policy (optimize_v3 in the artifact's
// simulator/easy_policy.py), given free[τ] devices of each type that no
// job holds. Running jobs keep what they hold. Waiting jobs, in order,
// each get their smallest proposal that fits: one device, of the type
// they run fastest on among those with a device free. Then every running
// job (not one started this round) proposes, per type it may use, the
// increment of that type that maximises EasyScale's incremental speedup
// (S_new/S_now − 1)/added + 1, among increments that keep its waste within
// MaxWaste, its speedup at least what it is, and its devices within twice
// what it holds and within its workers; the increments are granted in
// decreasing order of that gain (ties: job order, then type order), at
// most one per job per round, while they fit. Homogeneous jobs propose
// only their current type. Jobs never shrink.
//
// The artifact builds its proposals from a grid of integer thread counts
// proportional to speed and evaluates an increment by the proposal it came
// from; here every increment is the job's current devices plus the added
// ones, split exactly by Split, so a proposal is never rated below what its
// devices can do. The artifact starts a waiting job only on its single
// smallest proposal (the slowest type) and nowhere else when that type is
// full; here the job starts on a free device of its best type.
func Plan(free []int, jobs []Job, opts Options) ([]Grant, error) {
	maxWaste := opts.MaxWaste
	if maxWaste == 0 {
		maxWaste = DefaultMaxWaste
	}
	if !(maxWaste > 0) || math.IsInf(maxWaste, 0) {
		return nil, fmt.Errorf("%w: MaxWaste = %v", ErrInvalid, opts.MaxWaste)
	}
	nt := len(free)
	avail := slices.Clone(free)
	for t, f := range free {
		if f < 0 {
			return nil, fmt.Errorf("%w: free[%d] = %d", ErrInvalid, t, f)
		}
	}
	out := make([]Grant, len(jobs))
	started := make([]bool, len(jobs))
	var incs []increment
	for i := range jobs {
		j := &jobs[i]
		if j.Workers < 1 || len(j.WorkerSeconds) != nt || (j.Current != nil && len(j.Current) != nt) {
			return nil, fmt.Errorf("%w: job %d: %d workers, %d worker times, %d current counts for %d types", ErrInvalid, i, j.Workers, len(j.WorkerSeconds), len(j.Current), nt)
		}
		cur := make([]int, nt)
		if j.Current != nil {
			copy(cur, j.Current)
		}
		for t, s := range j.WorkerSeconds {
			if math.IsNaN(s) || s < 0 || cur[t] < 0 {
				return nil, fmt.Errorf("%w: job %d, type %d: worker time %v, %d devices", ErrInvalid, i, t, s, cur[t])
			}
		}
		if j.MaxDevices < 0 {
			return nil, fmt.Errorf("%w: job %d: MaxDevices = %d", ErrInvalid, i, j.MaxDevices)
		}
		if over := sum(cur) - maxDevices(j); over > 0 {
			// Its bound fell below what it holds: it gives up devices of
			// its slowest types first (those it cannot use before all).
			released := 0
			for over > 0 {
				slow := -1
				for t := range nt {
					if cur[t] > 0 && (slow < 0 || j.WorkerSeconds[slow] > 0 && (j.WorkerSeconds[t] <= 0 || j.WorkerSeconds[t] > j.WorkerSeconds[slow])) {
						slow = t
					}
				}
				d := min(cur[slow], over)
				cur[slow] -= d
				avail[slow] += d
				over -= d
				released += d
			}
			out[i].Note = fmt.Sprintf("%d→%d devices: at most %d", sum(cur)+released, sum(cur), maxDevices(j))
		}
		out[i].Devices = cur
		if sum(cur) == 0 {
			continue
		}
		out[i].Workers, _, _ = Split(j.Workers, cur, j.WorkerSeconds)
	}
	for i := range jobs {
		j := &jobs[i]
		if sum(out[i].Devices) > 0 {
			continue
		}
		// The smallest proposal: one device, of the slowest type with one
		// free (the artifact's proposals[-1], the least speedup); one type
		// per job: of its fastest.
		homo := opts.Homogeneous || j.OneType
		best := -1
		for t := range nt {
			if avail[t] == 0 || j.WorkerSeconds[t] <= 0 {
				continue
			}
			if best < 0 || (homo && j.WorkerSeconds[t] < j.WorkerSeconds[best]) || (!homo && j.WorkerSeconds[t] > j.WorkerSeconds[best]) {
				best = t
			}
		}
		if best < 0 {
			continue
		}
		avail[best]--
		out[i].Devices[best] = 1
		out[i].Workers = make([]int, nt)
		out[i].Workers[best] = j.Workers
		out[i].Note = "start on 1 device"
		started[i] = true
	}
	for i := range jobs {
		if started[i] || sum(out[i].Devices) == 0 {
			continue
		}
		incs = append(incs, proposeIncrements(i, &jobs[i], out[i].Devices, avail, maxWaste, opts.Homogeneous || jobs[i].OneType)...)
	}
	slices.SortStableFunc(incs, func(a, b increment) int {
		return cmp.Or(cmp.Compare(b.gain, a.gain), cmp.Compare(a.job, b.job), cmp.Compare(a.typ, b.typ))
	})
	grown := make([]bool, len(jobs))
	for _, in := range incs {
		if grown[in.job] || avail[in.typ] < in.add {
			continue
		}
		grown[in.job] = true
		g := &out[in.job]
		before := sum(g.Devices)
		for t, d := range in.devices {
			avail[t] -= d - g.Devices[t]
		}
		g.Devices = in.devices
		g.Workers, _, _ = Split(jobs[in.job].Workers, g.Devices, jobs[in.job].WorkerSeconds)
		g.Note = fmt.Sprintf("%d→%d devices (+%d of type %d), incremental speedup %.3f", before, sum(g.Devices), in.add, in.typ, in.gain)
	}
	return out, nil
}

// proposeIncrements returns job i's best proposal per type it may grow
// on, given avail free devices: more devices of that type, and of every
// other type at most what it holds (the artifact's condition on a
// proposal's placement; the devices it no longer uses are released).
func proposeIncrements(i int, j *Job, cur, avail []int, maxWaste float64, homo bool) []increment {
	nt := len(cur)
	held := sum(cur)
	now := rate(j, cur)
	if !(now > 0) {
		return nil
	}
	var out []increment
	next := make([]int, nt)
	for t := range nt {
		if j.WorkerSeconds[t] <= 0 || (homo && cur[t] != held) {
			continue
		}
		best := increment{job: i, typ: t}
		room := min(avail[t], growth*held-cur[t], j.Workers)
		// Every way to keep 0..cur[o] of each other type o (only all or
		// none of each when that would be many).
		full := 1
		for o := range nt {
			if o != t {
				full *= cur[o] + 1
			}
		}
		coarse := full > maxKeeps
		copy(next, cur)
		for {
			kept := sum(next) - next[t]
			for add := 1; add <= room && kept+cur[t]+add <= min(growth*held, maxDevices(j)); add++ {
				next[t] = cur[t] + add
				perType, _, ok := Split(j.Workers, next, j.WorkerSeconds)
				if !ok || Waste(j.Workers, next, perType, j.WorkerSeconds) > maxWaste {
					continue
				}
				s := speedupOf(j, next, perType)
				if !(s >= now) {
					continue
				}
				if gain := (s/now-1)/float64(add) + 1; gain > best.gain {
					best.add, best.gain, best.devices = add, gain, slices.Clone(next)
				}
			}
			next[t] = cur[t]
			// Next combination of kept counts (odometer over o ≠ t).
			o := 0
			for ; o < nt; o++ {
				if o == t || cur[o] == 0 {
					continue
				}
				step := 1
				if coarse {
					step = cur[o]
				}
				if next[o] >= step {
					next[o] -= step
					break
				}
				next[o] = cur[o]
			}
			if o == nt {
				break
			}
		}
		if best.add > 0 {
			out = append(out, best)
		}
	}
	return out
}

// maxDevices is the most devices j may hold.
func maxDevices(j *Job) int {
	if j.MaxDevices > 0 {
		return min(j.MaxDevices, j.Workers)
	}
	return j.Workers
}

// maxKeeps bounds the combinations of kept devices of other types that
// proposeIncrements tries per type; above it, only all or none of each.
const maxKeeps = 256

// rate is the job's speedup on devices with Split's assignment.
func rate(j *Job, devices []int) float64 {
	perType, _, ok := Split(j.Workers, devices, j.WorkerSeconds)
	if !ok {
		return 0
	}
	return speedupOf(j, devices, perType)
}

func speedupOf(j *Job, devices, perType []int) float64 {
	if j.Speedup != nil {
		s := j.Speedup(devices, perType)
		if math.IsNaN(s) || s < 0 {
			return 0
		}
		return s
	}
	slowest, busiest := 0.0, 0.0
	for t, d := range devices {
		if j.WorkerSeconds[t] > 0 {
			slowest = max(slowest, j.WorkerSeconds[t])
		}
		if d > 0 {
			busiest = max(busiest, float64((perType[t]+d-1)/d)*j.WorkerSeconds[t])
		}
	}
	if busiest == 0 {
		return 0
	}
	return float64(j.Workers) * slowest / busiest
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
