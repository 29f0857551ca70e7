package scheduler

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// A Scheduler reuses its last cluster index only for a cluster that
// validates and indexes alike: health, names and links changes are seen,
// readings are not.
func TestClusterCacheSeesChanges(t *testing.T) {
	base := testCluster(group{2, 4, "t4"})
	cc := &clusterCache{}
	first, err := cc.index(&base)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(c *accel.Cluster)
		reuse  bool
		err    error
	}{
		{"same", func(*accel.Cluster) {}, true, nil},
		{"reading", func(c *accel.Cluster) { c.Nodes[0].Devices[1].PowerWatts = 70 }, true, nil},
		{"unhealthy", func(c *accel.Cluster) { c.Nodes[1].Devices[2].Healthy = false }, false, nil},
		{"type", func(c *accel.Cluster) { c.Nodes[1].Devices[0].Type = "a100" }, false, nil},
		{"link", func(c *accel.Cluster) { c.Nodes[0].Links = []accel.Link{{A: 0, B: 1, NVLinks: 2}} }, false, nil},
		{"bad link", func(c *accel.Cluster) { c.Nodes[0].Links = []accel.Link{{A: 0, B: 9}} }, false, ErrInvalid},
		{"duplicate id", func(c *accel.Cluster) { c.Nodes[1].Devices[0].ID = c.Nodes[0].Devices[0].ID }, false, ErrInvalid},
		{"fewer nodes", func(c *accel.Cluster) { c.Nodes = c.Nodes[:1] }, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base.Clone()
			tc.change(&c)
			got, err := cc.index(&c)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if (got == first) != tc.reuse {
				t.Fatalf("reused = %v, want %v", got == first, tc.reuse)
			}
			fresh, _ := indexCluster(&c)
			if !reflect.DeepEqual(got, fresh) {
				t.Fatalf("index differs from a fresh one")
			}
			// Back to the base for the next case.
			if first, err = cc.index(&base); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Rounds on changing clusters give the plans of fresh Schedulers, also
// when several goroutines share one Scheduler.
func TestClusterCacheSchedules(t *testing.T) {
	in := genInput(5, shapes[1])
	sick := in
	sick.Cluster = in.Cluster.Clone()
	for i := range sick.Cluster.Nodes[0].Devices {
		sick.Cluster.Nodes[0].Devices[i].Healthy = false
	}
	inputs := []Input{in, sick, in, sick}
	want := make([]Plan, len(inputs))
	for k, x := range inputs {
		s, _ := New(Config{})
		p, err := s.Schedule(context.Background(), x)
		if err != nil {
			t.Fatal(err)
		}
		want[k] = p
	}
	shared, _ := New(Config{})
	var wg sync.WaitGroup
	errs := make(chan error, len(inputs))
	for k := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := shared.Schedule(context.Background(), inputs[k])
			if err == nil && !reflect.DeepEqual(got, want[k]) {
				err = errors.New("plan differs from a fresh Scheduler's")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
