package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
	"github.com/goodsched/goodsched/scheduler/quota"
	"github.com/goodsched/goodsched/scheduler/sim"
)

// topTenants is how many virtual clusters -tenants vc turns into queues
// (the Philly trace's 11 large tenants); the others share otherTenant.
const topTenants = 11

// otherTenant is the queue of the jobs of every smaller virtual cluster
// (and of jobs with none) under -tenants vc.
const otherTenant = "other"

// tenancyModes are the three ways -tenants runs the workload, in output
// order.
var tenancyModes = []string{"static", "shared", "borrow"}

// tenancy is what -tenants sets up: the queue tree of the "borrow" mode
// and where each job goes.
type tenancy struct {
	// queues is the tree as the "borrow" mode runs it.
	queues []quota.Queue
	// at is each mode's position in the run list (addModes).
	at map[string]int
	// leaf maps a job's trace tenant (JobSpec.Queue as read) to its leaf
	// queue.
	leaf func(tenant string) (string, error)
}

// tenantShare is one tenant's GPU-time in the workload.
type tenantShare struct {
	Name       string
	GPUSeconds float64
}

// gpuShares sums TraceDuration × Replicas per JobSpec.Queue ("" counts as
// its own tenant), largest first, ties by name.
func gpuShares(jobs []sim.JobSpec) []tenantShare {
	by := map[string]float64{}
	for _, j := range jobs {
		by[j.Queue] += j.TraceDuration.Seconds() * float64(j.Replicas)
	}
	var out []tenantShare
	for n, s := range by {
		out = append(out, tenantShare{n, s})
	}
	slices.SortFunc(out, func(a, b tenantShare) int {
		return cmp.Or(cmp.Compare(b.GPUSeconds, a.GPUSeconds), strings.Compare(a.Name, b.Name))
	})
	return out
}

// apportion splits devices among tenants in proportion to weights, in
// integers that sum to devices: when there are at least as many devices
// as tenants, each first gets one (so that a static partition can run
// every tenant's jobs) and the rest are split by largest remainder
// (Hamilton's method: floors of the exact shares, then one more each to
// the largest fractional parts, ties to the larger weight, then to the
// earlier tenant); with fewer devices than tenants, all of them are split
// that way. Zero weights share equally.
func apportion(devices int, weights []float64) []int {
	out := make([]int, len(weights))
	if len(weights) == 0 || devices <= 0 {
		return out
	}
	rest := devices
	if devices >= len(weights) {
		for i := range out {
			out[i] = 1
		}
		rest -= len(weights)
	}
	total := 0.0
	for _, w := range weights {
		total += w
	}
	exact := make([]float64, len(weights))
	for i, w := range weights {
		if total > 0 {
			exact[i] = float64(rest) * w / total
		} else {
			exact[i] = float64(rest) / float64(len(weights))
		}
	}
	given := 0
	order := make([]int, len(weights))
	for i := range weights {
		fl := int(exact[i])
		out[i] += fl
		given += fl
		exact[i] -= float64(fl)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(exact[b], exact[a]), cmp.Compare(weights[b], weights[a]))
	})
	for k := 0; given < rest; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

// vcTenancy builds -tenants vc: the topTenants virtual clusters with the
// most GPU-time in the workload are queues named after them, and the
// others share otherTenant. Every queue is a root (the cluster is their
// cohort) with weight 1 and, per device type, a nominal quota of the
// type's devices in proportion to its GPU-time (apportion), with no
// borrowing or lending limit.
func vcTenancy(jobs []sim.JobSpec, cluster accel.Cluster) (*tenancy, error) {
	shares := gpuShares(jobs)
	total := 0.0
	for _, s := range shares {
		total += s.GPUSeconds
	}
	if len(shares) == 1 && shares[0].Name == "" || !(total > 0) {
		return nil, usage("-tenants vc: the workload has no virtual clusters with GPU-time (use -philly with a trace that has the cluster column)")
	}
	var names []string
	var weights []float64
	other := 0.0
	hasOther := false
	for _, s := range shares {
		if len(names) < topTenants && s.Name != "" && s.Name != otherTenant {
			names = append(names, s.Name)
			weights = append(weights, s.GPUSeconds)
		} else {
			other += s.GPUSeconds
			hasOther = true
		}
	}
	if hasOther {
		names = append(names, otherTenant)
		weights = append(weights, other)
	}
	queues := make([]quota.Queue, len(names))
	for i, n := range names {
		queues[i] = quota.Queue{Name: n, Weight: 1}
	}
	for _, t := range cluster.Types() {
		for i, q := range apportion(cluster.Count(t), weights) {
			queues[i].Quotas = append(queues[i].Quotas, quota.Quota{Type: t, Nominal: q})
		}
	}
	own := map[string]bool{}
	for _, n := range names {
		own[n] = n != otherTenant
	}
	return &tenancy{queues: queues, leaf: func(vc string) (string, error) {
		if own[vc] {
			return vc, nil
		}
		return otherTenant, nil
	}}, nil
}

// quotasFile is the format of -tenants FILE (JSON):
//
//	{
//	  "queues": [                          // the quota tree (scheduler.Queue)
//	    {"name": "research", "weight": 1},  // a cohort: it has children
//	    {"name": "vision", "parent": "research", "weight": 2,
//	     "quotas": [{"type": "t4", "nominal": 512,
//	                 "borrowing_limit": 256, "lending_limit": 128}]},
//	    {"name": "speech", "parent": "research",
//	     "quotas": [{"type": "t4", "nominal": 256}]},
//	    {"name": "other", "quotas": [{"type": "t4", "nominal": 64}]}
//	  ],
//	  "tenants": {"ee9e8c": "vision", "7f04ca": "speech"},
//	  "default": "other"
//	}
//
// "queues" uses scheduler.Queue's fields: name, parent ("" or absent =
// a root), weight (absent = 1), quotas per type with nominal and the
// optional borrowing_limit and lending_limit (absent = no limit). A job
// goes to the leaf queue "tenants" maps its trace tenant to (its Philly
// virtual cluster, or a workload's queue column), else to the leaf queue
// named like its tenant, else to "default"; a job with none of these is
// an error. The "borrow" mode runs the tree as written; "static" sets
// every quota's borrowing and lending limits to 0.
type quotasFile struct {
	Queues  []quota.Queue     `json:"queues"`
	Tenants map[string]string `json:"tenants"`
	Default string            `json:"default"`
}

// parseQuotasFile reads a quotas file and checks that its queue tree is
// valid for the cluster (the scheduler's own validation).
func parseQuotasFile(data []byte, cluster accel.Cluster) (*tenancy, error) {
	var f quotasFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("quotas file: %v", err)
	}
	if len(f.Queues) == 0 {
		return nil, fmt.Errorf("quotas file: no queues")
	}
	if err := checkQueues(f.Queues, cluster); err != nil {
		return nil, fmt.Errorf("quotas file: %v", err)
	}
	parent := map[string]bool{}
	for _, q := range f.Queues {
		parent[q.Parent] = true
	}
	isLeaf := map[string]bool{}
	for _, q := range f.Queues {
		isLeaf[q.Name] = !parent[q.Name]
	}
	for _, tn := range slices.Sorted(maps.Keys(f.Tenants)) {
		if !isLeaf[f.Tenants[tn]] {
			return nil, fmt.Errorf("quotas file: tenants: %q maps to %q, which is not a leaf queue", tn, f.Tenants[tn])
		}
	}
	if f.Default != "" && !isLeaf[f.Default] {
		return nil, fmt.Errorf("quotas file: default %q is not a leaf queue", f.Default)
	}
	return &tenancy{queues: f.Queues, leaf: func(tn string) (string, error) {
		if q, ok := f.Tenants[tn]; ok {
			return q, nil
		}
		if isLeaf[tn] {
			return tn, nil
		}
		if f.Default != "" {
			return f.Default, nil
		}
		return "", fmt.Errorf("tenant %q has no queue (map it under \"tenants\" or set \"default\")", tn)
	}}, nil
}

// checkQueues validates a queue tree with the scheduler: one round with
// no jobs.
func checkQueues(qs []quota.Queue, cluster accel.Cluster) error {
	s, err := scheduler.New(scheduler.Config{Policy: baselines.FIFO{}})
	if err != nil {
		return err
	}
	_, err = s.Schedule(context.Background(), scheduler.Input{Cluster: cluster, Queues: qs})
	return err
}

// loadTenancy resolves -tenants: "vc" or a quotas file.
func loadTenancy(spec string, jobs []sim.JobSpec, cluster accel.Cluster) (*tenancy, error) {
	if spec == "vc" {
		return vcTenancy(jobs, cluster)
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		return nil, usage("-tenants: %v (want vc or a quotas file)", err)
	}
	t, err := parseQuotasFile(data, cluster)
	if err != nil {
		return nil, usage("-tenants %s: %v", spec, err)
	}
	return t, nil
}

// policiesSet reports whether -policies was given.
func policiesSet(fl *flag.FlagSet) bool {
	set := false
	fl.Visit(func(f *flag.Flag) { set = set || f.Name == "policies" })
	return set
}

// setupTenancy resolves -tenants for the run (nil without it) and puts
// every job of the one workload in its leaf queue.
func setupTenancy(o options, names []string, workloads []sim.Workload, cluster accel.Cluster) (*tenancy, error) {
	if o.tenants == "" {
		return nil, nil
	}
	if len(names) != 1 {
		return nil, usage("-tenants compares three modes of one policy; -policies names %d", len(names))
	}
	if len(workloads) != 1 {
		return nil, usage("-tenants needs one workload (-philly, or one -workload file), not %d", len(workloads))
	}
	t, err := loadTenancy(o.tenants, workloads[0].Jobs, cluster)
	if err != nil {
		return nil, err
	}
	if err := checkQueues(t.queues, cluster); err != nil {
		return nil, usage("-tenants: %v", err)
	}
	if err := t.assign(workloads[0].Jobs); err != nil {
		return nil, err
	}
	return t, nil
}

// addModes turns the one run in cfgs (the shared pool) into the three
// modes: the shared run accounts against the quotas, and static and
// borrow runs, each with a fresh policy, are appended.
func (t *tenancy) addModes(cfgs []sim.Config, labels []string, spec policySpec) ([]sim.Config, []string, error) {
	t.at = map[string]int{"shared": 0}
	cfgs[0] = t.mode(cfgs[0], "shared")
	for _, m := range []string{"static", "borrow"} {
		p, err := spec.build()
		if err != nil {
			return nil, nil, err
		}
		c := cfgs[0]
		c.Policy = p
		t.at[m] = len(cfgs)
		cfgs = append(cfgs, t.mode(c, m))
		labels = append(labels, labels[0]+"/"+m)
	}
	return cfgs, labels, nil
}

// modes summarises the three modes from the run results (nil without
// -tenants).
func (t *tenancy) modes(results []sim.Result) []tenancyMode {
	if t == nil {
		return nil
	}
	var out []tenancyMode
	for _, m := range tenancyModes {
		out = append(out, summarizeMode(m, results[t.at[m]]))
	}
	return out
}

// assign sets each job's Queue to its leaf queue (in place).
func (t *tenancy) assign(jobs []sim.JobSpec) error {
	for i := range jobs {
		q, err := t.leaf(jobs[i].Queue)
		if err != nil {
			return usage("-tenants: job %s: %v", jobs[i].Name, err)
		}
		jobs[i].Queue = q
	}
	return nil
}

// mode returns the config of one tenancy mode, built from the shared
// pool's config c.
func (t *tenancy) mode(c sim.Config, mode string) sim.Config {
	switch mode {
	case "shared":
		c.Queues, c.IgnoreQueues = t.queues, true
	case "static":
		c.Queues, c.IgnoreQueues = staticQueues(t.queues), false
	default:
		c.Queues, c.IgnoreQueues = t.queues, false
	}
	return c
}

// staticQueues is qs with every quota's borrowing and lending limits 0:
// each queue only ever has its own quota.
func staticQueues(qs []quota.Queue) []quota.Queue {
	out := slices.Clone(qs)
	for i := range out {
		out[i].Quotas = slices.Clone(out[i].Quotas)
		for k := range out[i].Quotas {
			zero, zero2 := 0, 0
			out[i].Quotas[k].BorrowingLimit, out[i].Quotas[k].LendingLimit = &zero, &zero2
		}
	}
	return out
}

// tenancyMode is one mode's entry of -json's "tenancy".
type tenancyMode struct {
	Mode                 string          `json:"mode"`
	AvgJCT               float64         `json:"avg_jct_s"`
	Utilisation          float64         `json:"utilisation"`
	RoundsBelowGuarantee int             `json:"rounds_below_guarantee"`
	Tenants              []tenantSummary `json:"tenants"`
	res                  sim.Result
}

// tenantSummary is one tenant's entry in a tenancyMode.
type tenantSummary struct {
	Name                 string  `json:"name"`
	AvgJCT               float64 `json:"avg_jct_s"`
	QueueDelay           float64 `json:"queue_delay_s"`
	GPUHours             float64 `json:"gpu_hours"`
	RoundsBelowGuarantee int     `json:"rounds_below_guarantee"`
	guaranteed           int
	reclaims, open       int
	reclaimRounds, maxRR int
}

// utilisation is the busy share of the healthy devices over the rounds.
func utilisation(us []sim.UtilSample) float64 {
	busy, up := 0, 0
	for _, u := range us {
		busy += u.Busy
		up += u.Healthy
	}
	if up == 0 {
		return 0
	}
	return float64(busy) / float64(up)
}

func summarizeMode(mode string, r sim.Result) tenancyMode {
	m := tenancyMode{Mode: mode, AvgJCT: r.AvgJCT.Seconds(), Utilisation: utilisation(r.Utilization), Tenants: []tenantSummary{}, res: r}
	for _, t := range r.Tenants {
		m.RoundsBelowGuarantee += t.RoundsBelowGuarantee
		m.Tenants = append(m.Tenants, tenantSummary{
			Name: t.Name, AvgJCT: t.AvgJCT.Seconds(), QueueDelay: t.AvgQueueDelay.Seconds(), GPUHours: t.GPUHours,
			RoundsBelowGuarantee: t.RoundsBelowGuarantee, guaranteed: t.Guaranteed,
			reclaims: t.Reclaims, open: t.OpenReclaims, reclaimRounds: t.ReclaimRounds, maxRR: t.MaxReclaimRounds,
		})
	}
	return m
}

// printTenancy prints the modes side by side: one line per mode, then one
// row per tenant.
func printTenancy(w io.Writer, modes []tenancyMode) {
	fmt.Fprintf(w, "\ntenancy (JCT and queueing delay in hours; below = rounds below guarantee after the reclaim round)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tavg JCT (s)\tavg JCT (h)\tutilisation\tcompleted\tbelow\treclaims\tavg reclaim rounds\tmax reclaim rounds\t")
	for _, m := range modes {
		rec, rr, mx := 0, 0, 0
		for _, t := range m.Tenants {
			rec += t.reclaims - t.open
			rr += t.reclaimRounds
			mx = max(mx, t.maxRR)
		}
		avg := "-"
		if rec > 0 {
			avg = fmt.Sprintf("%.2f", float64(rr)/float64(rec))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f%%\t%d/%d\t%d\t%d\t%s\t%d\t\n", m.Mode, m.AvgJCT, m.AvgJCT/3600, 100*m.Utilisation, m.res.Completed, len(m.res.Jobs), m.RoundsBelowGuarantee, rec, avg, mx)
	}
	tw.Flush()
	if len(modes) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "tenant\tquota\t"
	for _, m := range modes {
		hdr += m.Mode + " JCT\tdelay\tGPU-h\tbelow\t"
	}
	fmt.Fprintln(tw, hdr)
	for i, t := range modes[0].Tenants {
		row := fmt.Sprintf("%s\t%d\t", t.Name, t.guaranteed)
		for _, m := range modes {
			mt := m.Tenants[i]
			row += fmt.Sprintf("%.2f\t%.2f\t%.0f\t%d\t", mt.AvgJCT/3600, mt.QueueDelay/3600, mt.GPUHours, mt.RoundsBelowGuarantee)
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}
