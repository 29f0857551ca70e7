package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/goodput"
	"github.com/goodsched/goodsched/scheduler"
)

// group is n nodes of per devices of one type.
type group struct {
	n, per int
	typ    accel.TypeKey
}

// shape is a generated instance's size.
type shape struct {
	groups []group
	jobs   int
}

func (s shape) name() string {
	return fmt.Sprintf("%dx%d(%d types)", s.jobs, s.devices(), len(s.groups))
}

// devices is the shape's device count.
func (s shape) devices() int {
	devs := 0
	for _, g := range s.groups {
		devs += g.n * g.per
	}
	return devs
}

// size is the "JOBSxDEVICES" part of a key, so that -quick's smaller
// instances are reported under their own names.
func (s shape) size() string { return fmt.Sprintf("%dx%d", s.jobs, s.devices()) }

func cluster(groups []group) accel.Cluster {
	var c accel.Cluster
	for gi, g := range groups {
		for i := range g.n {
			name := fmt.Sprintf("%s-%d-%04d", g.typ, gi, i)
			n := accel.Node{Name: name}
			for d := range g.per {
				n.Devices = append(n.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, d), Node: name, Index: d, Type: g.typ, Healthy: true, NUMANode: -1})
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	return c
}

// randomParams returns plausible throughput parameters (Pollux's
// ranges), compute scaled by speed (1 = a T4).
func randomParams(rng *rand.Rand, speed float64) goodput.Params {
	u := func(lo, hi float64) float64 { return lo + rng.Float64()*(hi-lo) }
	return goodput.Params{
		Form:   goodput.FormPollux,
		AlphaC: u(0.005, 0.05) / speed, BetaC: u(1e-4, 6e-4) / speed,
		AlphaR: u(0.005, 0.03), BetaR: u(1e-4, 2e-3),
		AlphaN: u(0.03, 0.15), BetaN: u(1e-3, 1e-2),
		Gamma: u(1.2, 3),
	}
}

// typeSpeed is each type's compute speed relative to a T4.
var typeSpeed = map[accel.TypeKey]float64{"t4": 1, "v100": 2.2, "a100": 4, "h100": 7}

// instance builds a random round: adaptive, elastic and rigid jobs with
// goodput speedup curves per type, and a current placement produced by
// two earlier Pollux-policy rounds over two thirds of the jobs.
func instance(rng *rand.Rand, sh shape) (scheduler.Input, error) {
	return instanceWarm(rng, sh, 2)
}

// instanceWarm is instance with warm earlier rounds (0 = no current
// placement: a cold round).
func instanceWarm(rng *rand.Rand, sh shape, warmRounds int) (scheduler.Input, error) {
	cl := cluster(sh.groups)
	types := cl.Types()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	in := scheduler.Input{Cluster: cl, Now: now}
	for i := range sh.jobs {
		j, err := randomJob(rng, i, types, now)
		if err != nil {
			return in, err
		}
		in.Jobs = append(in.Jobs, j)
	}
	if warmRounds == 0 {
		return in, nil
	}
	n := len(in.Jobs) * 2 / 3
	warm := scheduler.Input{Cluster: cl, Jobs: in.Jobs[:n:n], Now: now.Add(-time.Duration(warmRounds) * time.Minute)}
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		return in, err
	}
	for range warmRounds {
		plan, err := s.Schedule(context.Background(), warm)
		if err != nil {
			return in, err
		}
		warm.Current = plan.Assignments()
		warm.Now = warm.Now.Add(time.Minute)
	}
	in.Current = warm.Current
	running := make(map[string]bool)
	for _, a := range in.Current {
		running[a.Job] = true
	}
	for i := range in.Jobs {
		if running[in.Jobs[i].ID] {
			in.Jobs[i].Restarts = 1 + rng.IntN(2)
			in.Jobs[i].NonPreemptible = rng.IntN(20) == 0
		}
	}
	return in, nil
}

// randomJob draws job number i: adaptive, elastic or rigid, with a
// goodput speedup curve per type, submitted before now.
func randomJob(rng *rand.Rand, i int, types []accel.TypeKey, now time.Time) (scheduler.Job, error) {
	base := randomParams(rng, 1)
	lim := goodput.Limits{InitBatch: 64 << rng.IntN(3), MaxBatch: 4096, MinLocal: 16, MaxLocal: 256, Accumulation: true}
	models := make(map[string]goodput.CurveModel, len(types))
	for _, t := range types {
		p := base
		s := typeSpeed[t] * (0.7 + 0.6*rng.Float64())
		if s == 0 {
			s = 1
		}
		p.AlphaC /= s
		p.BetaC /= s
		models[string(t)] = goodput.CurveModel{Model: goodput.Model{Params: p,
			Grad: goodput.GradStats{Sqr: 0.05 + rng.Float64(), Var: 1 + 10*rng.Float64()}, Limits: lim}}
	}
	curve, err := goodput.NewCurve(models, goodput.CurveOptions{MaxReplicas: 64})
	if err != nil {
		return scheduler.Job{}, err
	}
	j := scheduler.Job{
		ID:        fmt.Sprintf("job-%05d", i),
		Submitted: now.Add(-time.Duration(60+rng.IntN(4*3600)) * time.Second),
		Kind:      scheduler.Adaptive,
		Speedup:   curve,
		Weight:    1,
		Attained:  time.Duration(rng.IntN(30)) * time.Hour,
	}
	j.MinReplicas = 1
	j.MaxReplicas = 1 << (2 + rng.IntN(4))
	switch rng.IntN(5) {
	case 0:
		j.Kind, j.Requested = scheduler.Rigid, 1<<rng.IntN(3)
	case 1:
		j.Kind = scheduler.Elastic
	}
	if len(types) > 1 && rng.IntN(4) == 0 {
		j.Types = []accel.TypeKey{types[rng.IntN(len(types))]}
	}
	return j, nil
}
