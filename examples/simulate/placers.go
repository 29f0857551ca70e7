package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/variability/palplace"
)

// placerRegistry is the name → placer map behind -placers, built by the
// program as a value. "default" is each policy's own placer (the
// Scheduler's RoundPlacer, or Packer for the rigid baselines).
func placerRegistry() map[string]placement.Placer {
	return map[string]placement.Placer{
		"default":       nil,
		"packed-sticky": palplace.PackedSticky{},
		"pm-first":      palplace.PMFirst{Evict: evictAt},
		"pal":           palplace.PAL{Evict: evictAt},
	}
}

// withPlacers runs every policy with every placer of the comma-separated
// list: it registers POLICY/PLACER in reg for each pair and returns those
// names, policy by policy. Under -topology (tr not nil) the topology's
// placers (kueue-bestfit, kai-binpack, and its default) are offered too,
// ahead of placerRegistry's, and an empty list means all three, as
// -topology compares them; otherwise an empty list leaves names as they
// are.
func withPlacers(list string, reg map[string]policySpec, names []string, tr *topoRun) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		if tr != nil {
			return tr.expand(names, reg), nil
		}
		return names, nil
	}
	placers := placerRegistry()
	lookup := func(name string) (placement.Placer, bool) {
		if tr != nil {
			if pl, ok := tr.topologyPlacer(name); ok {
				return pl, true
			}
		}
		pl, ok := placers[name]
		return pl, ok
	}
	var picked []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if _, ok := lookup(p); !ok {
			have := slices.Sorted(maps.Keys(placers))
			if tr != nil {
				have = append(have, topologyPlacers[:len(topologyPlacers)-1]...)
			}
			return nil, usage("-placers: unknown placer %q (have %s)", p, strings.Join(have, ", "))
		}
		if slices.Contains(picked, p) {
			return nil, usage("-placers: %q listed twice", p)
		}
		picked = append(picked, p)
	}
	var out []string
	for _, n := range names {
		for _, p := range picked {
			spec := reg[n]
			if pl, _ := lookup(p); pl != nil {
				spec.placer = pl
				spec.about = fmt.Sprintf("%s, placed by %s", spec.about, p)
			}
			reg[n+"/"+p] = spec
			out = append(out, n+"/"+p)
		}
	}
	return out, nil
}

// evictAt is the gang slowdown at which pal and pm-first move a running
// job (an interference episode began under it): 1.5, far above the
// measured spread between healthy GPUs (≤ 1.12 on Longhorn), so only
// episodes trigger it.
const evictAt = 1.5
