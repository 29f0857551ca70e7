package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// dumpState renders everything a State holds, in a canonical order, so
// that States built different ways can be compared.
func dumpState(s *State) string {
	var b strings.Builder
	for ni := range s.ix.nodes {
		u := s.node(int32(ni))
		fmt.Fprintf(&b, "node %d owner %q used %x bad %x dist %q\n", ni, u.owner, u.used, u.bad, u.dist)
	}
	s.jobs.Ascend(func(j jobUse) bool {
		fmt.Fprintf(&b, "job %s %v %d\n", j.job, j.devs, j.nodes)
		return true
	})
	for t, tr := range s.free {
		tr.Ascend(func(k freeKey) bool {
			fmt.Fprintf(&b, "free %d %d@%d\n", t, k.free, k.node)
			return true
		})
	}
	fmt.Fprintf(&b, "totals %v %v %v %v %v\n", s.freeTotal, s.usedTotal, s.badTotal, s.partial, s.idle)
	return b.String()
}

// sparseCluster is a random cluster of 40 nodes of 1–8 devices of three
// types, some unhealthy and some MIG parents, some nodes NVLinked.
func sparseCluster(rng *rand.Rand) accel.Cluster {
	types := []accel.TypeKey{"a100", "t4", "v100"}
	specs := make([]nodeSpec, 40)
	for i := range specs {
		specs[i] = nodeSpec{fmt.Sprintf("n%02d", rng.IntN(1000)*100+i), types[rng.IntN(3)], 1 + rng.IntN(8), nil}
		if rng.IntN(2) == 0 {
			specs[i].links = fullMesh(12)
		}
	}
	c := testCluster(specs...)
	for ni := range c.Nodes {
		for di := range c.Nodes[ni].Devices {
			switch d := &c.Nodes[ni].Devices[di]; rng.IntN(20) {
			case 0:
				d.Healthy = false
			case 1:
				d.MIGEnabled = true
			}
		}
	}
	return c
}

// sparseCurrent draws current assignments holding about share of the
// devices that may be held (any but MIG parents, unhealthy ones
// included), as gangs of 1–12 devices of one type, some across nodes.
func sparseCurrent(rng *rand.Rand, c accel.Cluster, share float64) []Assignment {
	byType := map[accel.TypeKey][]string{}
	total := 0
	for _, n := range c.Nodes {
		for _, d := range n.Devices {
			if !d.MIGEnabled {
				byType[d.Type] = append(byType[d.Type], d.ID)
				total++
			}
		}
	}
	var out []Assignment
	held := 0
	for t := range byType {
		rng.Shuffle(len(byType[t]), func(i, j int) { byType[t][i], byType[t][j] = byType[t][j], byType[t][i] })
	}
	for k := 0; float64(held) < share*float64(total) && k < 1000; k++ {
		t := []accel.TypeKey{"a100", "t4", "v100"}[rng.IntN(3)]
		n := min(1+rng.IntN(12), len(byType[t]))
		if n == 0 {
			continue
		}
		out = append(out, Assignment{Job: fmt.Sprintf("job-%03d", rng.IntN(1000)*1000+k), Devices: byType[t][:n]})
		byType[t] = byType[t][n:]
		held += n
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// A State built from the index's State of no job is the State built from
// scratch: every node's usage, the jobs, the free index and the counters,
// and it places and changes alike; building it leaves the State of no job
// as it was.
func TestIndexNewStateSparseSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	for trial := range 60 {
		c := sparseCluster(rng)
		x, err := NewIndex(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, share := range []float64{0, 0.05, 0.3, 0.6, 1} {
			cur := sparseCurrent(rng, c, share)
			want, err := newState(x.ix, cur)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.ix.fromEmpty(cur)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := x.NewState(cur)
			if err != nil {
				t.Fatal(err)
			}
			w := dumpState(want)
			if g := dumpState(got); g != w {
				t.Fatalf("trial %d share %v: from the empty State\n%s\nfrom scratch\n%s", trial, share, g, w)
			}
			if g := dumpState(pub); g != w {
				t.Fatalf("trial %d share %v: Index.NewState differs from scratch", trial, share)
			}
			// The same round on both.
			var targets []Target
			for _, a := range cur {
				tk, _ := want.TypeOf(a)
				targets = append(targets, Target{Job: a.Job, Type: tk, Count: max(0, len(a.Devices)+rng.IntN(5)-2)})
			}
			for k := range 5 {
				targets = append(targets, Target{Job: fmt.Sprintf("new-%d", k), Type: []accel.TypeKey{"a100", "t4", "v100"}[rng.IntN(3)], Count: 1 + rng.IntN(6)})
			}
			var p Chooser
			rw, errW := p.Round(want, targets)
			rg, errG := p.Round(got, targets)
			if fmt.Sprint(errW) != fmt.Sprint(errG) || !reflect.DeepEqual(rw.Decisions, rg.Decisions) ||
				!reflect.DeepEqual(rw.Unplaced, rg.Unplaced) || (errW == nil && dumpState(rw.State) != dumpState(rg.State)) {
				t.Fatalf("trial %d share %v: rounds differ:\n%+v %v\n%+v %v", trial, share, rg, errG, rw, errW)
			}
			// The same changes on both (writes to shared nodes copy them).
			for _, s := range []*State{want, got} {
				for _, d := range rw.Decisions {
					s.Release(d.Job)
					_ = s.Assign(Assignment{Job: d.Job, Devices: d.Devices})
				}
				if len(cur) > 0 {
					s.Release(cur[0].Job)
				}
				_, _ = s.Fault([]string{c.Nodes[0].Devices[0].ID})
			}
			if g, w := dumpState(got), dumpState(want); g != w {
				t.Fatalf("trial %d share %v: after the same changes\n%s\nwant\n%s", trial, share, g, w)
			}
		}
		empty, _ := newState(x.ix, nil)
		if x.ix.empty != nil && dumpState(x.ix.empty) != dumpState(empty) {
			t.Fatalf("trial %d: the index's State of no job was written", trial)
		}
	}
}

// Bad current assignments fail alike both ways, with the same message.
func TestIndexNewStateSparseErrors(t *testing.T) {
	c := testCluster(nodeSpec{"a", "t4", 4, nil}, nodeSpec{"b", "a100", 4, nil})
	c.Nodes[1].Devices[2].MIGEnabled = true
	c.Nodes[0].Devices[3].Healthy = false
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	for name, cur := range map[string][]Assignment{
		"conflict":   {{Job: "j1", Devices: []string{"a/0", "a/1"}}, {Job: "j2", Devices: []string{"a/2", "a/1"}}},
		"MIG parent": {{Job: "j1", Devices: []string{"b/0", "b/2"}}},
		"empty job":  {{Job: "j1", Devices: []string{"a/0"}}, {Devices: []string{"a/1"}}},
		"repeated":   {{Job: "j1", Devices: []string{"a/0"}}, {Job: "j1", Devices: []string{"a/1"}}},
		"unknown":    {{Job: "j1", Devices: []string{"a/0", "z/9"}}},
		"twice":      {{Job: "j1", Devices: []string{"a/0", "a/0"}}},
	} {
		_, errW := newState(x.ix, cur)
		_, errG := x.ix.fromEmpty(cur)
		_, errP := x.NewState(cur)
		if errW == nil || fmt.Sprint(errG) != errW.Error() || fmt.Sprint(errP) != errW.Error() {
			t.Errorf("%s: from scratch %v, from the empty State %v, Index.NewState %v", name, errW, errG, errP)
		}
	}
	// An unhealthy device may be held.
	if _, err := x.NewState([]Assignment{{Job: "j1", Devices: []string{"a/3"}}}); err != nil {
		t.Errorf("unhealthy current device: %v", err)
	}
}

// Goroutines may build and change States from one Index at once: the
// State of no job they all start from is shared copy-on-write (CI runs
// this under -race).
func TestIndexNewStateSparseConcurrent(t *testing.T) {
	c := sparseCluster(rand.New(rand.NewPCG(3, 4)))
	x, err := NewIndex(c)
	if err != nil {
		t.Fatal(err)
	}
	cur := sparseCurrent(rand.New(rand.NewPCG(5, 6)), c, 0.2)
	want, err := newState(x.ix, cur)
	if err != nil {
		t.Fatal(err)
	}
	w := dumpState(want)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p Chooser
			for range 50 {
				s, err := x.NewState(cur)
				if err != nil {
					errs <- err.Error()
					return
				}
				if dumpState(s) != w {
					errs <- "a State differs"
					return
				}
				a, err := p.Place(s, Request{Job: fmt.Sprintf("g%d", g), Count: 2})
				if err == nil {
					_ = s.Assign(a)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
