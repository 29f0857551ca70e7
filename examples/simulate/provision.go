package main

import (
	"github.com/goodsched/goodsched/energy"
	"github.com/goodsched/goodsched/provision"
	"github.com/goodsched/goodsched/scheduler/sim"
)

// provisioned is the policy -provision powers nodes down for: the
// carbon-aware one; carbon-agnostic policies keep every node on.
const provisioned = "goodput-carbon"

// checkProvision checks -provision against the other flags.
func checkProvision(o options) error {
	if !o.provision {
		return nil
	}
	if o.carbon == "" || o.slack <= 0 {
		return usage("-provision needs -carbon and -slack (nodes are powered down for work that can wait)")
	}
	if o.carbonWeight != 1 {
		return usage("-provision plans with carbon weight 1; -carbon-weight %v is not supported with it", o.carbonWeight)
	}
	return nil
}

// provisionerFor returns the run's Provisioner: package provision's
// Planner for goodput-carbon under -provision, the Planner with the
// learned rule for the learned row, nil otherwise.
func provisionerFor(o options, policy string, power energy.PowerModel) sim.Provisioner {
	if policy == learnedName {
		return o.learned.Planner(planner(power))
	}
	if !o.provision || policy != provisioned {
		return nil
	}
	return planner(power)
}

// planner is the Planner of a provisioned run: it plans the jobs jointly,
// as the provisioned goodput-carbon policy does (the nodes it keeps on
// are those the plans can share).
func planner(power energy.PowerModel) provision.Planner {
	return provision.Planner{Power: power, Joint: true}
}
