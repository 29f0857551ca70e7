package env

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
)

// Observation is one round's view, schema version 1 (see the package
// documentation for the meaning of each field).
type Observation struct {
	// Schema is "goodsched.env/v1".
	Schema string `json:"schema"`
	// Step counts the decisions made so far in the episode.
	Step int `json:"step"`
	// TimeSeconds is the virtual time since the workload's start.
	TimeSeconds float64 `json:"time_s"`
	// Types, Devices and Jobs are the round's cluster and jobs.
	Types   []TypeView   `json:"types"`
	Devices []DeviceView `json:"devices"`
	Jobs    []JobView    `json:"jobs"`
}

// TypeView is one device type's capacity in a round.
type TypeView struct {
	Type string `json:"type"`
	// Devices counts the type's devices; Usable the healthy ones; Free
	// the usable ones no job holds.
	Devices int `json:"devices"`
	Usable  int `json:"usable"`
	Free    int `json:"free"`
	// PerNode is the most usable devices of the type on one node, Nodes
	// the nodes that have some.
	PerNode int `json:"per_node"`
	Nodes   int `json:"nodes"`
}

// DeviceView is one device in a round.
type DeviceView struct {
	ID      string `json:"id"`
	Node    string `json:"node"`
	Type    string `json:"type"`
	Healthy bool   `json:"healthy"`
	// Job holds the device ("" when free).
	Job string `json:"job,omitempty"`
}

// JobView is one arrived, unfinished job in a round.
type JobView struct {
	ID string `json:"id"`
	// Kind is "rigid", "elastic" or "adaptive".
	Kind string `json:"kind"`
	// SubmittedSeconds is the arrival time since the workload's start,
	// AgeSeconds the time since then.
	SubmittedSeconds float64 `json:"submitted_s"`
	AgeSeconds       float64 `json:"age_s"`
	Priority         int     `json:"priority"`
	// Weight is the job's weight (1 when unset).
	Weight float64 `json:"weight"`
	// Min and Max bound the count of a target with devices; Requested
	// is the count the job asks for (what rigid baselines give it).
	Min       int `json:"min"`
	Max       int `json:"max"`
	Requested int `json:"requested"`
	// AttainedSeconds is the device time the job has held.
	AttainedSeconds float64 `json:"attained_s"`
	Restarts        int     `json:"restarts"`
	// Pinned jobs (non-preemptible and running) keep their devices
	// whatever the action says.
	Pinned bool `json:"pinned,omitempty"`
	// Type, Count and Nodes describe what the job holds now (Count 0:
	// waiting).
	Type  string `json:"type,omitempty"`
	Count int    `json:"count"`
	Nodes int    `json:"nodes"`
	// Speedups holds, per allowed type, the predicted speedups.
	Speedups []SpeedupView `json:"speedups"`
}

// SpeedupView is a job's predicted speedup on one type: Values[k] on
// From+k devices packed on the fewest nodes.
type SpeedupView struct {
	Type   string    `json:"type"`
	From   int       `json:"from"`
	Values []float64 `json:"values"`
}

var kindNames = [...]string{scheduler.Rigid: "rigid", scheduler.Elastic: "elastic", scheduler.Adaptive: "adaptive"}

func kindName(k scheduler.Kind) string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("kind-%d", int(k))
	}
	return kindNames[k]
}

// observe builds round r's observation; start is the workload's time 0;
// devPos, the position of each device in cluster order, is built on first
// use and reused (the simulator's cluster keeps its devices, only their
// health changes).
func observe(r *scheduler.Round, start time.Time, step int, devPos *map[string]int) (Observation, error) {
	in := r.Input()
	ix := r.Cluster()
	obs := Observation{Schema: Schema, Step: step, TimeSeconds: in.Now.Sub(start).Seconds()}
	if len(*devPos) != in.Cluster.Size() {
		*devPos = make(map[string]int, in.Cluster.Size())
		for _, n := range in.Cluster.Nodes {
			for _, d := range n.Devices {
				(*devPos)[d.ID] = len(*devPos)
			}
		}
	}
	types := ix.Types()
	perType := make(map[accel.TypeKey]*TypeView, len(types))
	obs.Types = make([]TypeView, len(types))
	for i, t := range types {
		usable, perNode, nodes := ix.Usable(t)
		obs.Types[i] = TypeView{Type: string(t), Usable: usable, PerNode: perNode, Nodes: nodes}
		perType[t] = &obs.Types[i]
	}
	obs.Devices = make([]DeviceView, 0, in.Cluster.Size())
	for _, n := range in.Cluster.Nodes {
		for _, d := range n.Devices {
			obs.Devices = append(obs.Devices, DeviceView{ID: d.ID, Node: n.Name, Type: string(d.Type), Healthy: d.Healthy})
		}
	}
	for _, a := range in.Current {
		for _, d := range a.Devices {
			if k, ok := (*devPos)[d]; ok && k < len(obs.Devices) && obs.Devices[k].ID == d {
				obs.Devices[k].Job = a.Job
			}
		}
	}
	for i := range obs.Devices {
		d := &obs.Devices[i]
		if tv := perType[accel.TypeKey(d.Type)]; tv != nil {
			tv.Devices++
			if d.Job == "" && d.Healthy {
				tv.Free++
			}
		}
	}
	// One backing array for every job's speedup views and one for
	// their values: two allocations per round instead of two per job.
	nViews, nValues := 0, 0
	for i := range in.Jobs {
		j, _ := r.Job(in.Jobs[i].ID)
		nViews += len(j.Types)
		for _, t := range j.Types {
			usable, _, _ := ix.Usable(t)
			nValues += max(min(j.Max, usable)-j.Min+1, 0)
		}
	}
	views := make([]SpeedupView, 0, nViews)
	values := make([]float64, 0, nValues)
	obs.Jobs = make([]JobView, len(in.Jobs))
	for i := range in.Jobs {
		j, _ := r.Job(in.Jobs[i].ID)
		jv := JobView{
			ID: j.Job.ID, Kind: kindName(j.Job.Kind),
			SubmittedSeconds: j.Job.Submitted.Sub(start).Seconds(), AgeSeconds: j.Age.Seconds(),
			Priority: j.Job.Priority, Weight: j.Weight, Min: j.Min, Max: j.Max,
			AttainedSeconds: j.Job.Attained.Seconds(), Restarts: j.Job.Restarts, Pinned: j.Pinned,
			Count: len(j.Current), Nodes: j.CurrentNodes,
		}
		jv.Requested = cmp.Or(j.Job.Requested, j.Job.MinReplicas, 1)
		if jv.Count > 0 {
			jv.Type = string(j.CurrentType)
		}
		v0 := len(views)
		for _, t := range j.Types {
			usable, perNode, _ := ix.Usable(t)
			hi := min(j.Max, usable)
			k0 := len(values)
			for c := j.Min; c <= hi; c++ {
				v, err := r.Speedup(j.Job.ID, t, (c+perNode-1)/max(perNode, 1), c)
				if err != nil {
					return Observation{}, err
				}
				values = append(values, v)
			}
			views = append(views, SpeedupView{Type: string(t), From: j.Min, Values: values[k0:len(values):len(values)]})
		}
		jv.Speedups = views[v0:len(views):len(views)]
		obs.Jobs[i] = jv
	}
	return obs, nil
}

// check validates action against round r and returns its targets for
// the scheduler; errors wrap ErrBadAction.
func check(r *scheduler.Round, action Action) ([]scheduler.Target, error) {
	ix := r.Cluster()
	seen := make(map[string]bool, len(action.Targets))
	sum := make(map[accel.TypeKey]int, 2)
	out := make([]scheduler.Target, 0, len(action.Targets))
	for k, t := range action.Targets {
		j, ok := r.Job(t.Job)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: targets[%d]: unknown job %q", ErrBadAction, k, t.Job)
		case seen[t.Job]:
			return nil, fmt.Errorf("%w: targets[%d]: job %q appears twice", ErrBadAction, k, t.Job)
		case t.Count < 0:
			return nil, fmt.Errorf("%w: targets[%d] (job %q): negative count %d", ErrBadAction, k, t.Job, t.Count)
		case t.MaxNodes < 0:
			return nil, fmt.Errorf("%w: targets[%d] (job %q): negative max_nodes %d", ErrBadAction, k, t.Job, t.MaxNodes)
		}
		seen[t.Job] = true
		typ := accel.TypeKey(t.Type)
		if j.Pinned {
			// The scheduler keeps a pinned job on its devices, whatever
			// its target says.
			typ, t.Type, t.Count = j.CurrentType, string(j.CurrentType), len(j.Current)
		} else if t.Count > 0 {
			usable, _, _ := ix.Usable(typ)
			if _, ok := ix.TypeIndex(typ); !ok {
				return nil, fmt.Errorf("%w: targets[%d] (job %q): type %q is not in the cluster", ErrBadAction, k, t.Job, t.Type)
			}
			if !slices.Contains(j.Types, typ) {
				return nil, fmt.Errorf("%w: targets[%d] (job %q): type %q is not allowed for the job (allowed: %v)", ErrBadAction, k, t.Job, t.Type, j.Types)
			}
			if t.Count < j.Min || t.Count > j.Max {
				return nil, fmt.Errorf("%w: targets[%d] (job %q): count %d is outside the job's [%d, %d]", ErrBadAction, k, t.Job, t.Count, j.Min, j.Max)
			}
			if t.Count > usable {
				return nil, fmt.Errorf("%w: targets[%d] (job %q): %d %s devices, %d are usable", ErrBadAction, k, t.Job, t.Count, t.Type, usable)
			}
		}
		if t.Count > 0 {
			sum[typ] += t.Count
			if usable, _, _ := ix.Usable(typ); sum[typ] > usable {
				return nil, fmt.Errorf("%w: targets[0..%d] ask for %d %s devices in all, %d are usable", ErrBadAction, k, sum[typ], typ, usable)
			}
		}
		out = append(out, scheduler.Target{Job: t.Job, Type: accel.TypeKey(t.Type), Count: t.Count, MaxNodes: t.MaxNodes})
	}
	return out, nil
}
