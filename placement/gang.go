package placement

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goodsched/goodsched/accel"
)

// This file holds what placing a gang of several device types needs (a
// job with a fixed number of logical workers whose devices may mix types):
// each type's part is placed as a gang of its own, under an ID of its own
// (GangPart), and the parts are joined again (JoinGangs); the workers
// spread over the devices by type (Share, CheckWorkers, Workers).

// Share is the part of a gang on one device type, for a job with a fixed
// number of logical workers (EasyScale's W-job, whose devices may mix
// types): Count devices of Type that host Workers of its workers between
// them.
type Share struct {
	Type    accel.TypeKey `json:"type"`
	Count   int           `json:"count"`
	Workers int           `json:"workers"`
}

// Shares returns devs (IDs of the cluster) per type, in type order, with
// the sum of workers (one count per device, by position; nil: none) that
// each type's devices host; nil if one of devs is not in the cluster.
func (x *Index) Shares(devs []string, workers []int) []Share {
	dev, per := x.CountByType(devs, workers)
	var out []Share
	for t := range dev {
		if dev[t] > 0 {
			out = append(out, Share{Type: x.ix.types[t], Count: dev[t], Workers: per[t]})
		}
	}
	return out
}

// CheckWorkers validates a as the assignment of a job with w ≥ 1 logical
// workers (its devices in the cluster): at most w devices and, when
// a.Workers is set, one count ≥ 1 per device, summing to w. It returns
// the gang's shares, in type order; without a.Workers the workers spread
// evenly over the types (SpreadWorkers). Errors wrap ErrInvalid.
func (x *Index) CheckWorkers(a Assignment, w int) ([]Share, error) {
	n := len(a.Devices)
	switch {
	case n > w:
		return nil, fmt.Errorf("%w: job %q holds %d devices but has %d logical workers", ErrInvalid, a.Job, n, w)
	case a.Workers == nil:
		sh := x.Shares(a.Devices, nil)
		dev := make([]int, len(sh))
		for k := range sh {
			dev[k] = sh[k].Count
		}
		for k, c := range SpreadWorkers(w, dev) {
			sh[k].Workers = c
		}
		return sh, nil
	case len(a.Workers) != n:
		return nil, fmt.Errorf("%w: job %q: %d worker counts for %d devices", ErrInvalid, a.Job, len(a.Workers), n)
	}
	sum := 0
	for p, c := range a.Workers {
		if c < 1 {
			return nil, fmt.Errorf("%w: job %q: device %q hosts %d workers, want ≥ 1", ErrInvalid, a.Job, a.Devices[p], c)
		}
		sum += c
	}
	if sum != w {
		return nil, fmt.Errorf("%w: job %q: its devices host %d workers, want %d", ErrInvalid, a.Job, sum, w)
	}
	return x.Shares(a.Devices, a.Workers), nil
}

// Workers returns how many of a job's w logical workers each of devs
// hosts when its gang is split as shares: per type what shares say when
// they match the devices of devs per type and sum to w, else spread
// evenly over the types (SpreadWorkers); within a type the first devices
// take the remainder (DeviceWorkers).
func (x *Index) Workers(devs []string, w int, shares []Share) []int {
	dev, _ := x.CountByType(devs, nil)
	per := make([]int, len(dev))
	matched := 0
	for _, s := range shares {
		if t, ok := x.TypeIndex(s.Type); ok && dev[t] == s.Count {
			per[t] = s.Workers
			matched += s.Workers
		}
	}
	if matched != w {
		per = SpreadWorkers(w, dev)
	}
	return x.DeviceWorkers(devs, per)
}

// gangSep joins a job's ID and a type key into a part's ID; it does not
// occur in job IDs that hosts write.
const gangSep = "\x1f"

// GangPart returns the ID under which a placer sees the part on devices
// of type t of job's gang.
func GangPart(job string, t accel.TypeKey) string { return job + gangSep + string(t) }

// SplitGangs returns current with the assignment of every job for which
// split reports true cut into one part per device type, under GangPart
// IDs, in type order; other assignments are kept as they are. Devices
// not in the cluster are dropped from the parts.
func (x *Index) SplitGangs(current []Assignment, split func(job string) bool) []Assignment {
	var out []Assignment
	var refs []DeviceRef
	for _, a := range current {
		if !split(a.Job) {
			out = append(out, a)
			continue
		}
		refs, _ = x.AppendRefs(refs[:0], a.Devices)
		byType := map[int][]string{}
		for p, d := range refs {
			byType[d.Type] = append(byType[d.Type], a.Devices[p])
		}
		for _, t := range slices.Sorted(maps.Keys(byType)) {
			out = append(out, Assignment{Job: GangPart(a.Job, x.ix.types[t]), Devices: byType[t]})
		}
	}
	return out
}

// JoinGangs joins the parts (GangPart IDs) in a placer's assignments and
// unplaced targets into one entry per job; other entries pass through
// first, in their order. The joined assignments follow, in the order of
// each job's first part. A job one of whose parts was not placed gets
// the first such part's Unplaced entry, under the job's ID (these follow,
// sorted by job), and keeps held(job) if the placer's parts hold exactly
// those devices (and they are not none); otherwise it gets no
// assignment.
func JoinGangs(assigned []Assignment, unplaced []Unplaced, held func(job string) []string) ([]Assignment, []Unplaced) {
	var outA []Assignment
	var outU []Unplaced
	joined := map[string]*Assignment{}
	var order []string
	for _, a := range assigned {
		job, _, isPart := strings.Cut(a.Job, gangSep)
		if !isPart {
			outA = append(outA, a)
			continue
		}
		if joined[job] == nil {
			joined[job] = &Assignment{Job: job}
			order = append(order, job)
		}
		joined[job].Devices = append(joined[job].Devices, a.Devices...)
	}
	failed := map[string]Unplaced{}
	for _, u := range unplaced {
		job, _, isPart := strings.Cut(u.Target.Job, gangSep)
		if !isPart {
			outU = append(outU, u)
			continue
		}
		if _, seen := failed[job]; !seen {
			u.Target.Job = job
			failed[job] = u
		}
	}
	for _, job := range order {
		a := joined[job]
		if _, bad := failed[job]; bad {
			h := held(job)
			if !SameDevices(a.Devices, h) || len(h) == 0 {
				continue // the job does not run
			}
			a.Devices = h
		}
		outA = append(outA, *a)
	}
	for _, job := range slices.Sorted(maps.Keys(failed)) {
		outU = append(outU, failed[job])
	}
	return outA, outU
}

// SpreadWorkers splits w workers over device types in proportion to the
// devices per type (dev, by type position), the remainder one each to
// the first types with devices.
func SpreadWorkers(w int, dev []int) []int {
	total := 0
	for _, d := range dev {
		total += d
	}
	out := make([]int, len(dev))
	if total == 0 {
		return out
	}
	left := w
	for t, d := range dev {
		out[t] = w * d / total
		left -= out[t]
	}
	for t := 0; left > 0; t = (t + 1) % len(dev) {
		if dev[t] > 0 {
			out[t]++
			left--
		}
	}
	return out
}

// CountByType returns how many of devs (IDs) are of each type (by
// position in Types), and per type the sum of weights over them (nil
// weights: none; a missing weight counts 0); nil, nil if one of devs is
// not in the cluster.
func (x *Index) CountByType(devs []string, weights []int) (count, weight []int) {
	refs, ok := x.AppendRefs(nil, devs)
	if !ok {
		return nil, nil
	}
	count, weight = make([]int, len(x.ix.types)), make([]int, len(x.ix.types))
	for p, d := range refs {
		count[d.Type]++
		if p < len(weights) {
			weight[d.Type] += weights[p]
		}
	}
	return count, weight
}

// DeviceWorkers returns how many workers each of devs hosts when per[t]
// workers share the devices of type t (by position in Types) evenly, the
// first of them taking the remainder.
func (x *Index) DeviceWorkers(devs []string, per []int) []int {
	refs, _ := x.AppendRefs(nil, devs)
	dev := make([]int, len(x.ix.types))
	for _, d := range refs {
		dev[d.Type]++
	}
	out := make([]int, len(refs))
	seen := make([]int, len(x.ix.types))
	for p, d := range refs {
		k := seen[d.Type]
		seen[d.Type]++
		out[p] = per[d.Type] / dev[d.Type]
		if k < per[d.Type]%dev[d.Type] {
			out[p]++
		}
	}
	return out
}
