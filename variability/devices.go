package variability

import "github.com/goodsched/goodsched/accel"

// AddDevices adds the devices of c the estimator does not know yet, each
// at its prior (dynamic factor 1), so that a host whose cluster grows
// (a node joins) keeps what it learned about the others. A known device
// keeps its estimate; one c lists on another node than before is
// recorded on its new node. Devices missing from c are kept.
func (e *Estimator) AddDevices(c accel.Cluster) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if _, ok := e.dyn[d.ID]; !ok {
				e.dyn[d.ID] = 1
			}
			e.node[d.ID] = n.Name
		}
	}
}
