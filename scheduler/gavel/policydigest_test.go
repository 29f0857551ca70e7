package gavel

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
)

var digestOut = flag.String("gavel.digest", "", "TestPolicyDigest: write per-instance target digests to this file")

// randomPackCluster is a small random cluster: 1 to 40 nodes of 1 to 16
// devices of up to three types (some nodes mixed), named out of build
// order, one device in 25 unhealthy.
func randomPackCluster(rng *rand.Rand) accel.Cluster {
	types := []accel.TypeKey{"v100-16gb", "p100", "k80"}[:1+rng.IntN(3)]
	var c accel.Cluster
	n := 1 + rng.IntN(40)
	for k := range n {
		name := fmt.Sprintf("n%02d", (k*7919)%97) // names not in build order
		size := []int{1, 2, 4, 4, 8, 8, 3, 16}[rng.IntN(8)]
		nt := types[rng.IntN(len(types))]
		mixed := rng.IntN(6) == 0
		node := accel.Node{Name: name}
		for d := range size {
			t := nt
			if mixed {
				t = types[rng.IntN(len(types))]
			}
			node.Devices = append(node.Devices, accel.Device{ID: fmt.Sprintf("%s/%d", name, d), Node: name, Index: d,
				Type: t, Healthy: rng.IntN(25) != 0})
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}

// TestPolicyDigest is a before/after check for changes that must not
// change the Policy's targets (a faster packing, a cheaper rank): with
// -gavel.digest FILE it writes one SHA-256 of the targets of every round
// of 1,500 random instances (random clusters, gangs, type restrictions,
// non-preemptible jobs, StayBonus, ResetInterval, arrivals, departures
// and Resets over 10 rounds on the Packer's placements) and of three
// trace instances of up to 10,000 jobs. Run it before and after the
// change and compare the files; without the flag it is skipped.
func TestPolicyDigest(t *testing.T) {
	if *digestOut == "" {
		t.Skip("no -gavel.digest")
	}
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(*digestOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	classes := tab.Classes()
	errs, placed, rounds := 0, 0, 0
	defer func() { t.Logf("%d errors, %d placed targets in %d rounds", errs, placed, rounds) }()
	for inst := range 1500 {
		rng := rand.New(rand.NewPCG(uint64(inst), 99))
		c := randomPackCluster(rng)
		nj := 1 + rng.IntN(120)
		classOf := map[string]string{}
		var jobs []scheduler.Job
		for k := range nj {
			id := fmt.Sprintf("j%d", rng.IntN(100000)*1000+k)
			classOf[id] = classes[rng.IntN(len(classes))]
			j := scheduler.Job{ID: id, Requested: []int{1, 1, 1, 2, 2, 4, 4, 8, 3, 16, 6}[rng.IntN(11)],
				NonPreemptible: rng.IntN(10) == 0}
			if rng.IntN(5) == 0 {
				ts := c.Types()
				j.Types = []accel.TypeKey{ts[rng.IntN(len(ts))]}
			}
			jobs = append(jobs, j)
		}
		pol, err := NewPolicy(Config{Throughput: tab.Throughput(func(j *scheduler.Job) string { return classOf[j.ID] }),
			StayBonus: []float64{0, 0.25}[rng.IntN(2)], Settings: Settings{Tolerance: 0.005},
			ResetInterval: []time.Duration{0, 6 * time.Minute, 12 * time.Minute}[rng.IntN(3)]})
		if err != nil {
			t.Fatal(err)
		}
		var cur []placement.Assignment
		h := sha256.New()
		for r := range 10 {
			tg, err := allocate(pol, scheduler.Input{Cluster: c, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * 6 * time.Minute)})
			if err != nil {
				fmt.Fprintf(h, "err %v\n", err)
				if errs < 3 {
					t.Log(err)
				}
				errs++
				break
			}
			fmt.Fprintf(h, "%+v\n", tg)
			for _, x := range tg {
				if x.Count > 0 {
					placed++
				}
			}
			rounds++
			res, err := packTargets(c, cur, tg)
			if err != nil {
				t.Fatal(err)
			}
			cur = res.Assignments
			// churn: drop a job, some finish
			if len(jobs) > 1 && rng.IntN(3) == 0 {
				jobs = jobs[1:]
			}
			if rng.IntN(3) == 0 {
				id := fmt.Sprintf("new%d", rng.IntN(1000000))
				classOf[id] = classes[rng.IntN(len(classes))]
				jobs = append(jobs, scheduler.Job{ID: id, Requested: 1 + rng.IntN(4)})
			}
			if rng.IntN(4) == 0 {
				pol.Reset()
			}
		}
		fmt.Fprintf(f, "%d %x\n", inst, h.Sum(nil))
	}
	for _, sz := range []struct {
		n    int
		spec string
	}{{2048, "64x4:v100,96x4:p100,96x4:k80"}, {10000, "256x4:v100,384x4:p100,384x4:k80"}, {3000, "100x8:v100,50x2:p100,300x1:k80"}} {
		cl, err := accel.ParseSpec(sz.spec)
		if err != nil {
			t.Fatal(err)
		}
		trace := gavelTrace(t, tab, sz.n, time.Second, 1)
		jobs, throughput := traceJobs(tab, trace)
		pol, err := NewPolicy(Config{Throughput: throughput,
			Settings: Settings{Tolerance: 0.005}})
		if err != nil {
			t.Fatal(err)
		}
		var cur []placement.Assignment
		h := sha256.New()
		for r := range 4 {
			tg, err := allocate(pol, scheduler.Input{Cluster: cl, Jobs: jobs, Current: cur, Now: t0.Add(time.Duration(r) * 6 * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%+v\n", tg)
			res, err := packTargets(cl, cur, tg)
			if err != nil {
				t.Fatal(err)
			}
			cur = res.Assignments
		}
		fmt.Fprintf(f, "large %d %x\n", sz.n, h.Sum(nil))
	}
}
