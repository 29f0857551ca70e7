package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

// Service is work that shares the cluster with the workload and takes its
// devices first, such as an inference service whose replica count an
// autoscaler decides (package serving). At the start of every round the
// simulator gives it Replicas(now) replicas, each GPUsPerReplica devices of
// Type on one node, before the policy runs: a new replica takes free
// devices when a node has enough, else the node whose training jobs hold
// the fewest devices in all (the least work restarted); those jobs are
// preempted from their last checkpoint and the policy places them again,
// in the same round, on what is left. Replicas beyond the count are
// released (the newest first) and the policy may grow jobs onto them.
//
// The policy sees each service holding devices as a job of its own,
// ServiceJobID(Name): rigid, non-preemptible, on exactly its devices, so
// it works around them and never moves them. Its decisions for them are
// not applied (the service's own count rules); the workload's results do
// not include them.
type Service struct {
	// Name identifies the service; ServiceJobID(Name) must differ from
	// every workload job's name.
	Name string
	// Type is the device type of every replica (it must be in the cluster).
	Type accel.TypeKey
	// GPUsPerReplica is the devices of one replica, on one node (0 = 1).
	GPUsPerReplica int
	// Replicas is the replica count the service holds during the round
	// that starts at now (virtual time since the workload's start); a
	// negative count is 0. It is called once per round, in time order.
	Replicas func(now time.Duration) int
}

// ServiceJobID is the job ID under which the policy sees service name.
func ServiceJobID(name string) string { return "service/" + name }

// service is the simulator's state of one Service.
type service struct {
	spec     Service
	id       string
	replicas [][]string // devices of each replica, oldest first
}

func (s *service) devices() []string {
	var out []string
	for _, r := range s.replicas {
		out = append(out, r...)
	}
	return out
}

func (c *Config) validateServices() error {
	seen := map[string]bool{}
	for _, j := range c.Jobs {
		seen[j.Name] = true
	}
	for i, s := range c.Services {
		switch {
		case s.Name == "" || seen[ServiceJobID(s.Name)]:
			return fmt.Errorf("%w: Services[%d]: empty name, or %q is taken", ErrInvalid, i, ServiceJobID(s.Name))
		case s.Replicas == nil:
			return fmt.Errorf("%w: Services[%d] (%s): Replicas is nil", ErrInvalid, i, s.Name)
		case s.GPUsPerReplica < 0:
			return fmt.Errorf("%w: Services[%d] (%s): GPUsPerReplica %d is negative", ErrInvalid, i, s.Name, s.GPUsPerReplica)
		case c.Cluster.Count(s.Type) == 0:
			return fmt.Errorf("%w: Services[%d] (%s): the cluster has no %q devices", ErrInvalid, i, s.Name, s.Type)
		case len(c.Queues) > 0:
			return fmt.Errorf("%w: Services[%d] (%s): services with Queues are not supported", ErrInvalid, i, s.Name)
		case c.Faults.MTBF > 0:
			return fmt.Errorf("%w: Services[%d] (%s): services with Faults are not supported", ErrInvalid, i, s.Name)
		case c.Provision != nil:
			return fmt.Errorf("%w: Services[%d] (%s): services with Provision are not supported", ErrInvalid, i, s.Name)
		}
		seen[ServiceJobID(s.Name)] = true
	}
	return nil
}

// reserveServices gives every service its replicas for the round that
// starts now, taking devices from the workload's jobs where it must.
func (e *engine) reserveServices() {
	if len(e.cfg.Services) == 0 {
		return
	}
	if e.svcs == nil {
		for _, s := range e.cfg.Services {
			e.svcs = append(e.svcs, &service{spec: s, id: ServiceJobID(s.Name)})
		}
	}
	taken := map[string]bool{}
	for _, s := range e.svcs {
		for _, d := range s.devices() {
			taken[d] = true
		}
	}
	holder := map[string]*job{}
	for _, j := range e.live {
		for _, d := range j.devs {
			holder[d] = j
		}
	}
	for _, s := range e.svcs {
		want := max(0, s.spec.Replicas(dur(e.now)))
		for len(s.replicas) > want {
			last := s.replicas[len(s.replicas)-1]
			for _, d := range last {
				delete(taken, d)
			}
			s.replicas = s.replicas[:len(s.replicas)-1]
			e.changed = true
		}
		for len(s.replicas) < want {
			devs, victims := e.replicaSpot(s, taken, holder)
			if devs == nil {
				e.serviceShortfall += want - len(s.replicas)
				break
			}
			for _, v := range victims {
				for _, d := range v.devs {
					delete(holder, d)
				}
				e.reallocate(v, "", nil, goodput.BatchPlan{})
			}
			for _, d := range devs {
				taken[d] = true
			}
			s.replicas = append(s.replicas, devs)
			e.changed = true
		}
	}
}

// replicaSpot picks the devices of one new replica of s: on one node, of
// its type, not taken by a service; free ones first. The node is the one
// whose jobs to preempt hold the fewest devices in all (ties: the node
// with the fewest free devices left over, keeping larger free blocks
// whole; then the first). nil when no node has room.
func (e *engine) replicaSpot(s *service, taken map[string]bool, holder map[string]*job) ([]string, []*job) {
	g := max(1, s.spec.GPUsPerReplica)
	var best []string
	var bestVictims []*job
	bestCost, bestSpare := -1, 0
	for _, n := range e.cluster.Nodes {
		var free, held []string
		for _, d := range n.Devices {
			if d.Type != s.spec.Type || !d.Healthy || taken[d.ID] {
				continue
			}
			if holder[d.ID] == nil {
				free = append(free, d.ID)
			} else {
				held = append(held, d.ID)
			}
		}
		if len(free)+len(held) < g {
			continue
		}
		devs := append(free, held...)[:g]
		var victims []*job
		cost := 0
		for _, d := range devs {
			if j := holder[d]; j != nil && !slices.Contains(victims, j) {
				victims = append(victims, j)
				cost += len(j.devs)
			}
		}
		spare := len(free) - min(len(free), g)
		if bestCost < 0 || cost < bestCost || cost == bestCost && spare < bestSpare {
			best, bestVictims, bestCost, bestSpare = slices.Clone(devs), victims, cost, spare
		}
	}
	return best, bestVictims
}

// serviceInput adds the services holding devices to a round's Input.
func (e *engine) serviceInput(in *scheduler.Input) {
	for _, s := range e.svcs {
		devs := s.devices()
		if len(devs) == 0 {
			continue
		}
		in.Jobs = append(in.Jobs, scheduler.Job{
			ID: s.id, Submitted: e.cfg.Start, Kind: scheduler.Rigid, Requested: len(devs),
			MinReplicas: len(devs), MaxReplicas: len(devs), NonPreemptible: true,
			Types: []accel.TypeKey{s.spec.Type},
		})
		in.Current = append(in.Current, placement.Assignment{Job: s.id, Devices: devs})
	}
}

// isService reports whether id is a service's job ID this run.
func (e *engine) isService(id string) bool {
	for _, s := range e.svcs {
		if s.id == id {
			return true
		}
	}
	return false
}
