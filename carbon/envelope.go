package carbon

import (
	"fmt"
	"math"
	"time"
)

// Envelope is a per-slot capacity envelope: how many devices elastic work
// may use in each slot (Google's virtual capacity curves, CarbonFlex's
// provisioning). A host honours it by capping its delay-tolerant jobs'
// allocations at Devices[i] during slot i: with goodsched's scheduler,
// pass the cap in force as scheduler.Input.Envelope (per device type) and
// schedule with scheduler/carbonaware.Policy. It is a plain value.
type Envelope struct {
	// Start and Step locate the slots.
	Start time.Time
	Step  time.Duration
	// Devices is the cap per slot.
	Devices []int
}

// At returns the cap in force at t, and false outside the envelope (the
// host decides what applies then; usually no cap).
func (e Envelope) At(t time.Time) (int, bool) {
	if e.Step <= 0 || t.Before(e.Start) {
		return 0, false
	}
	i := int(t.Sub(e.Start) / e.Step)
	if i >= len(e.Devices) {
		return 0, false
	}
	return e.Devices[i], true
}

// EnvelopeOf turns a job's Plan into an envelope of devicesPerScale
// devices per unit of scale (for example 8 GPUs per node).
func EnvelopeOf(s Plan, devicesPerScale int) (Envelope, error) {
	if devicesPerScale < 1 {
		return Envelope{}, fmt.Errorf("%w: devicesPerScale %d", ErrInvalid, devicesPerScale)
	}
	e := Envelope{Start: s.Start, Step: s.Step, Devices: make([]int, len(s.Slots))}
	for i, sl := range s.Slots {
		e.Devices[i] = sl.Scale * devicesPerScale
	}
	return e, nil
}

// ClusterDemand describes a cluster's elastic, delay-tolerant work for
// ClusterEnvelope.
type ClusterDemand struct {
	// DeviceSeconds is the elastic work to place before the deadline, in
	// device-seconds.
	DeviceSeconds float64
	// MinDevices is kept for elastic work in every slot (a floor that
	// keeps progress and warm caches); zero allows none.
	MinDevices int
	// MaxDevices is the most devices elastic work may use in a slot.
	MaxDevices int
	// WattsPerDevice is the power of one busy device.
	WattsPerDevice float64
}

// ClusterEnvelope plans how many devices a cluster's elastic work may use
// in each slot so that DeviceSeconds of work finish by deadline at the
// least forecast carbon, keeping at least MinDevices in every slot. Each
// device is taken to add the same work and power (elastic work spread
// over many jobs); the result rounds each slot up to whole devices.
func ClusterEnvelope(forecast Series, d ClusterDemand, deadline time.Time, opts ScheduleOptions) (Envelope, Plan, error) {
	if d.MaxDevices < 1 || d.MaxDevices > 1_000_000 || d.MinDevices < 0 || d.MinDevices > d.MaxDevices {
		return Envelope{}, Plan{}, fmt.Errorf("%w: ClusterDemand.MinDevices %d, MaxDevices %d", ErrInvalid, d.MinDevices, d.MaxDevices)
	}
	if !(d.WattsPerDevice > 0) || math.IsInf(d.WattsPerDevice, 0) {
		return Envelope{}, Plan{}, fmt.Errorf("%w: ClusterDemand.WattsPerDevice %v", ErrInvalid, d.WattsPerDevice)
	}
	if !(d.DeviceSeconds > 0) || math.IsInf(d.DeviceSeconds, 0) {
		return Envelope{}, Plan{}, fmt.Errorf("%w: ClusterDemand.DeviceSeconds %v", ErrInvalid, d.DeviceSeconds)
	}
	// A linear curve: one work unit per device-second.
	c := Curve{WorkPerSecond: make([]float64, d.MaxDevices+1), Watts: make([]float64, d.MaxDevices+1)}
	for k := 1; k <= d.MaxDevices; k++ {
		c.WorkPerSecond[k] = float64(k)
		c.Watts[k] = float64(k) * d.WattsPerDevice
	}
	if err := opts.scheduleOnly(); err != nil {
		return Envelope{}, Plan{}, err
	}
	opts.MaxScale = d.MaxDevices
	opts.MinScale = 1
	opts.Method = Greedy
	// The floor is planned first; the rest goes where carbon is lowest.
	p, err := newProblem(forecast, c, d.DeviceSeconds, deadline, opts)
	if err != nil {
		return Envelope{}, Plan{}, err
	}
	floor := float64(d.MinDevices) * p.sec * float64(len(p.ci))
	var a []alloc
	if floor >= d.DeviceSeconds {
		a = make([]alloc, len(p.ci))
	} else {
		extra := *p
		extra.need = d.DeviceSeconds - floor
		keep := len(p.levels) - d.MinDevices
		extra.work, extra.kwh, extra.levels = p.work[:keep], p.kwh[:keep], p.levels[:keep]
		if a, err = extra.greedy(extra.allLevels()); err != nil {
			return Envelope{}, Plan{}, err
		}
	}
	for t := range a {
		// Shift each slot up by the floor: level j becomes j+MinDevices.
		if d.MinDevices > 0 {
			if a[t].j == 0 {
				a[t] = alloc{j: d.MinDevices, f: 1}
			} else {
				a[t].j += d.MinDevices
			}
		}
	}
	s := p.plan(a)
	s.Method, s.Concave = Greedy, true
	e, _ := EnvelopeOf(s, 1)
	return e, s, nil
}

// allLevels returns 0, 1, ..., len(levels)-1.
func (p *problem) allLevels() []int {
	idx := make([]int, len(p.levels))
	for i := range idx {
		idx[i] = i
	}
	return idx
}
