package sim

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// toyFS is a hand-made profile whose numbers make JCTs computable by hand.
// Model "toy": M0 = 10; on one device step time is 0.1 s per sample of
// local batch (1 s at local 10); "2" (two devices on one node) and "11"
// (one device on each of two nodes) take 1 s at local 5, with 0.5 s and
// 0.8 s of it all-reduce; larger shapes come from scalability.csv.
// Validation: 2 epochs of 100 progress each at batch 10 and 20; gradient
// variance 0 so that the gain is 1 at any batch... except where a test
// says otherwise.
func toyFS() fstest.MapFS {
	return fstest.MapFS{
		"p/toy/placements.csv": {Data: []byte(`placement,local_bsz,step_time,sync_time
1,5,0.5,0
1,10,1.0,0
1,20,2.0,0
2,5,1.0,0.5
2,10,1.5,0.5
11,5,1.0,0.8
11,10,1.5,0.8
`)},
		"p/toy/scalability.csv": {Data: []byte(`num_nodes,num_replicas,local_bsz,step_time,sync_time
4,4,5,2.0,1.0
4,8,5,3.0,2.0
`)},
		"p/toy/validation-10.csv": {Data: []byte(`progress,iteration,metric,grad_sqr,grad_var
100,100,0.5,1,0
200,200,0.9,1,0
`)},
		"p/toy/validation-20.csv": {Data: []byte(`progress,iteration,metric,grad_sqr,grad_var
100,50,0.5,1,1
200,100,0.9,1,3
`)},
	}
}

func toyApps(t testing.TB, opts ProfileOptions) map[string]*Application {
	t.Helper()
	apps, err := LoadProfiles(opts, ProfileSource{FS: toyFS(), Dir: "p"})
	if err != nil {
		t.Fatal(err)
	}
	return apps
}

func cluster(t testing.TB, spec string) accel.Cluster {
	t.Helper()
	c, err := accel.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// spreadPlacer puts the k-th device of every gang on the k-th node: the
// opposite of packing, to force distributed jobs in tests.
type spreadPlacer struct{}

func (spreadPlacer) Place(_ context.Context, in placement.PlaceInput) (placement.PlaceResult, error) {
	used := map[string]bool{}
	var res placement.PlaceResult
	for _, tg := range in.Targets {
		var devs []string
		for k := 0; len(devs) < tg.Count && k < 64; k++ {
			for n := range in.Cluster.Nodes() {
				if len(devs) == tg.Count {
					break
				}
				_, nodeDevs := in.Cluster.Node(n)
				for _, d := range nodeDevs {
					if !used[d.ID] && d.Usable() && d.Index == k {
						used[d.ID] = true
						devs = append(devs, d.ID)
						break
					}
				}
			}
		}
		res.Assignments = append(res.Assignments, placement.Assignment{Job: tg.Job, Devices: devs})
	}
	return res, nil
}

func secs(d time.Duration) float64 { return d.Seconds() }
