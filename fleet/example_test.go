package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/fleet"
	"github.com/goodsched/goodsched/placement"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/baselines"
)

// Two clusters: a small fast one in the west and a large slow one in the
// east. A job queued at the busy west cluster is routed east for free; a
// job running on slow devices in the east with hours of work left
// migrates west, where devices are free, its checkpoint cost charged.
func Example() {
	west, _ := accel.ParseSpec("2x4:v100")
	east, _ := accel.ParseSpec("8x4:k80")
	f, err := fleet.New(fleet.Config{
		NewScheduler: func(string) (*scheduler.Scheduler, error) {
			return scheduler.New(scheduler.Config{Policy: baselines.FIFO{}})
		},
		BandwidthGbps: 10,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ckpt := fleet.Checkpoint{SizeBytes: 5e9, Interval: 30 * time.Minute, Save: 20 * time.Second, Restore: 40 * time.Second, Last: now.Add(-10 * time.Minute)}
	job := func(id string, count int) scheduler.Job {
		return scheduler.Job{ID: id, Submitted: now.Add(-time.Hour), Requested: count, Speedup: speeds{"v100-16gb": 4, "k80": 1}}
	}
	long := job("long", 4)
	long.RemainingWork, long.Attained = 8*3600, time.Hour
	in := fleet.Input{
		Now: now,
		Clusters: []fleet.Cluster{
			{Name: "west", Region: "US-CAL-CISO", Cluster: west},
			{Name: "east", Region: "US-NY-NYIS", Cluster: east},
		},
		Jobs: []fleet.Job{
			{Job: job("queued", 16), Cluster: "west"}, // more than west has
			{Job: long, Cluster: "east", Assignment: eastDevices(east, 4), Checkpoint: ckpt},
		},
	}
	plan, err := f.Schedule(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range plan.Jobs {
		fmt.Printf("%s: %s %s→%s, cost %v; on %s: %s %d %s\n", d.Job, d.Move, d.From, d.To, d.Cost, d.To, d.Cluster.Action, d.Cluster.To, d.Cluster.Type)
	}
	// Output:
	// long: migrate east→west, cost 11m4s; on west: start 4 v100-16gb
	// queued: route west→east, cost 0s; on east: start 16 k80
}

// speeds is a job's speed per device type, linear in the device count.
type speeds map[string]float64

func (s speeds) Speedup(typ string, _, replicas int) float64 { return s[typ] * float64(replicas) }

// eastDevices returns the first n devices of c.
func eastDevices(c accel.Cluster, n int) (a placement.Assignment) {
	a.Job = "long"
	for _, node := range c.Nodes {
		for _, d := range node.Devices {
			if len(a.Devices) < n {
				a.Devices = append(a.Devices, d.ID)
			}
		}
	}
	return a
}
