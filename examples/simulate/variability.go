package main

import (
	"os"
	"path/filepath"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler/sim"
	"github.com/goodsched/goodsched/variability"
)

// variabilityConfig builds the runs' per-device speed model from
// -variability, -slowdowns and -locality-penalty (nil when none is set:
// every device of a type equally fast, as before).
//
// -variability PATH is a directory laid out as PAL's artifact (its root:
// profiles.json maps each application class to an aggregated CSV), one
// aggregated CSV, or a per-GPU PerfVar table; the measured GPUs are mapped
// onto the cluster's devices deterministically (variability.Measurements.
// Assign). That is the ground truth; the scheduler starts from PAL's
// k-means binning of it (variability.Bin, PAL's offline profile) and
// learns the rest, episodes included, from the step times jobs report.
func variabilityConfig(o options, c accel.Cluster) (*sim.Variability, error) {
	if o.variability == "" && o.slowdowns == "" && o.localityPenalty == 1 {
		if o.deviceSteps {
			return nil, usage("-device-steps needs -variability, -slowdowns or -locality-penalty (there are no device speeds to report)")
		}
		return nil, nil
	}
	if !(o.localityPenalty >= 1 && o.localityPenalty <= 100) {
		return nil, usage("-locality-penalty %v is outside [1, 100]", o.localityPenalty)
	}
	v := &sim.Variability{LocalityPenalty: o.localityPenalty, DeviceSteps: o.deviceSteps}
	if o.variability != "" {
		p := filepath.Clean(o.variability)
		m, err := variability.Load(os.DirFS(filepath.Dir(p)), filepath.Base(p))
		if err != nil {
			return nil, usage("-variability: %v", err)
		}
		if v.Truth, err = m.Assign(c); err != nil {
			return nil, usage("-variability: %v", err)
		}
		v.Prior = variability.Bin(v.Truth)
		if len(m.Classes) == 1 { // one aggregated CSV: every application alike
			only := m.Classes[0]
			v.ClassOf = func(string) string { return only }
		}
	}
	if o.slowdowns != "" {
		f, err := os.Open(o.slowdowns)
		if err != nil {
			return nil, usage("-slowdowns: %v", err)
		}
		defer f.Close()
		if v.Episodes, err = variability.ReadEpisodes(f); err != nil {
			return nil, usage("-slowdowns: %s: %v", o.slowdowns, err)
		}
		nodes := map[string]bool{}
		for _, n := range c.Nodes {
			nodes[n.Name] = true
		}
		for i, ep := range v.Episodes {
			if !nodes[ep.Node] {
				return nil, usage("-slowdowns: %s: row %d: %v: node %q is not in the cluster", o.slowdowns, i+2, variability.ErrUnknownDevice, ep.Node)
			}
		}
	}
	return v, nil
}
