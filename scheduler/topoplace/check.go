package topoplace

import (
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/topology"
	"github.com/goodsched/goodsched/placement"
)

// Check returns how many assignments break their job's required level or
// slices (a device outside the cluster's usable devices counts as outside
// every domain). Errors: no topology (ErrInvalid), a constraint naming an
// unknown level (topology.ErrUnknownLevel, naming the job).
func Check(x *placement.Index, top *topology.Topology, assignments []placement.Assignment, constraint func(job string) Constraint) (int, error) {
	if top == nil {
		return 0, fmt.Errorf("%w: no topology", ErrInvalid)
	}
	if constraint == nil {
		return 0, nil
	}
	m := modelFor(x, top)
	w := &work{m: m}
	bad := 0
	for _, a := range assignments {
		c, err := constraint(a.Job).resolve(m.levels)
		if err != nil {
			return 0, fmt.Errorf("job %q: %w", a.Job, err)
		}
		if c.required < 0 && c.slices == nil {
			continue
		}
		devs := make([]int32, 0, len(a.Devices))
		known := true
		for _, id := range a.Devices {
			g, ok := m.devNum[id]
			known = known && ok
			devs = append(devs, g)
		}
		if !known || w.violates(devs, &c) {
			bad++
		}
	}
	return bad, nil
}

// Stranded returns the free usable devices of type typ in domains of the
// named level that hold some but fewer than minGang free devices: capacity
// no gang of minGang devices that needs one such domain can use. current
// holds the assignments in effect. minGang <= 1 strands nothing. Errors:
// no topology (ErrInvalid), an unknown level.
func Stranded(x *placement.Index, top *topology.Topology, current []placement.Assignment, typ accel.TypeKey, level string, minGang int) (int, error) {
	if top == nil {
		return 0, fmt.Errorf("%w: no topology", ErrInvalid)
	}
	m := modelFor(x, top)
	d, err := levelOf(m.levels, level)
	if err != nil {
		return 0, err
	}
	t, ok := m.types[string(typ)]
	if !ok || minGang <= 1 {
		return 0, nil
	}
	w := newWork(m)
	defer putWork(w)
	for i, a := range current {
		for _, id := range a.Devices {
			if g, ok := m.devNum[id]; ok && w.owner[g] == 0 {
				w.take(g, i)
			}
		}
	}
	total := 0
	for _, v := range m.atLvl[d] {
		if f := int(w.free[t][v]); f > 0 && f < minGang {
			total += f
		}
	}
	return total, nil
}
