package client

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Shape is the configuration a step ran in.
type Shape struct {
	Nodes, Replicas, Local, Accum int
}

// Meter accumulates measured pass times per Shape between reports. It is
// safe for concurrent use; the zero value is ready.
type Meter struct {
	mu  sync.Mutex
	acc map[Shape]*meterAcc
}

type meterAcc struct {
	optimN, accumN     int
	optimSum, accumSum float64
	syncSum            float64
	syncN              int
}

func (m *Meter) get(s Shape) *meterAcc {
	if m.acc == nil {
		m.acc = map[Shape]*meterAcc{}
	}
	a := m.acc[s]
	if a == nil {
		a = &meterAcc{}
		m.acc[s] = a
	}
	return a
}

// Optim records one optimizer step (its synchronising pass included) that
// took d; sync, if positive, is the part spent synchronising gradients.
func (m *Meter) Optim(s Shape, d, sync time.Duration) {
	if d <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.get(s)
	a.optimN++
	a.optimSum += d.Seconds()
	if sync > 0 {
		a.syncN++
		a.syncSum += sync.Seconds()
	}
}

// Accum records one accumulation pass (no synchronisation) that took d.
func (m *Meter) Accum(s Shape, d time.Duration) {
	if d <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.get(s).accumN++
	m.get(s).accumSum += d.Seconds()
}

// Take returns the measurements since the last Take, sorted by shape, and
// forgets them. Shapes without an optimizer step are kept for later.
func (m *Meter) Take() []Steps {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Steps
	for s, a := range m.acc {
		if a.optimN == 0 {
			continue
		}
		st := Steps{Nodes: s.Nodes, Replicas: s.Replicas, Local: s.Local, Accum: s.Accum,
			Count: a.optimN, OptimSeconds: a.optimSum / float64(a.optimN)}
		if a.accumN > 0 {
			st.AccumCount, st.AccumSeconds = a.accumN, a.accumSum/float64(a.accumN)
		}
		if a.syncN > 0 {
			st.SyncSeconds, st.SyncCount = a.syncSum/float64(a.syncN), a.syncN
		}
		out = append(out, st)
		delete(m.acc, s)
	}
	slices.SortFunc(out, func(a, b Steps) int {
		return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Local, b.Local), cmp.Compare(a.Accum, b.Accum))
	})
	return out
}

// Restore puts back what Take returned when the report carrying it
// failed (a network error, a 429 or 503), so that the next report sends
// it: no measurement is lost to a refused report.
func (m *Meter) Restore(steps []Steps) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range steps {
		a := m.get(Shape{Nodes: st.Nodes, Replicas: st.Replicas, Local: st.Local, Accum: st.Accum})
		a.optimN += st.Count
		a.optimSum += st.OptimSeconds * float64(st.Count)
		a.accumN += st.AccumCount
		a.accumSum += st.AccumSeconds * float64(st.AccumCount)
		a.syncN += st.SyncCount
		a.syncSum += st.SyncSeconds * float64(st.SyncCount)
	}
}
