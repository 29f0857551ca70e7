package accel

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

func newTestStatic(t *testing.T, spec string) *Static {
	t.Helper()
	s, err := NewStaticSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStaticSnapshotIsACopy(t *testing.T) {
	s := newTestStatic(t, "2x2:a100")
	ctx := context.Background()
	c1, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c1.Nodes[0].Devices[0].Healthy = false
	c1.Nodes[0].Links[0].NVLinks = 99
	c2, _ := s.Snapshot(ctx)
	if !c2.Nodes[0].Devices[0].Healthy || c2.Nodes[0].Links[0].NVLinks == 99 {
		t.Fatal("Snapshot shares memory with the inventory")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Snapshot(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot on a done ctx: %v", err)
	}
	if _, err := s.Health(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Health on a done ctx: %v", err)
	}
	if _, err := NewStatic(Cluster{Nodes: []Node{{Name: ""}}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewStatic(invalid) = %v", err)
	}
	if _, err := NewStaticSpec("nope"); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewStaticSpec(nope) = %v", err)
	}
}

func TestClusterClone(t *testing.T) {
	c := Cluster{Nodes: []Node{{Name: "n", Devices: []Device{{ID: "n/0", Node: "n", Type: "a100-40gb", Healthy: true, MIGEnabled: true,
		Instances: []Device{{ID: "mig-0", Node: "n", Type: "a100-40gb-mig-1g-5gb", Parent: "n/0", MIG: &MIG{Profile: "1g.5gb", GPUInstance: 1}, Healthy: true}}}}}}}
	d := c.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatal("clone differs")
	}
	d.Nodes[0].Devices[0].Instances[0].MIG.GPUInstance = 7
	d.Nodes[0].Devices[0].Instances[0].Healthy = false
	if c.Nodes[0].Devices[0].Instances[0].MIG.GPUInstance != 1 || !c.Nodes[0].Devices[0].Instances[0].Healthy {
		t.Fatal("clone shares MIG data")
	}
	if (Cluster{}).Clone().Nodes != nil {
		t.Error("clone of empty cluster has nodes")
	}
	if n, ok := c.Node("n"); !ok || n.Name != "n" {
		t.Error("Node(n) not found")
	}
	if _, ok := c.Node("m"); ok {
		t.Error("Node(m) found")
	}
	// A fault on a parent takes its MIG instances down.
	s, err := NewStatic(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkUnhealthy("n/0", "test"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Snapshot(context.Background())
	if inst := got.Nodes[0].Devices[0].Instances[0]; inst.Healthy || inst.Fault != "test" {
		t.Errorf("instance after parent fault: %+v", inst)
	}
	if err := s.MarkHealthy("mig-0"); err != nil {
		t.Errorf("MarkHealthy on an instance: %v", err)
	}
	// Cluster.Device finds MIG instances as well as whole devices.
	if d, ok := got.Device("mig-0"); !ok || d.Parent != "n/0" {
		t.Errorf("Device(mig-0) = %+v, %v", d, ok)
	}
}

func TestStaticApply(t *testing.T) {
	tests := []struct {
		ev      HealthEvent
		healthy bool
		fault   string
		err     error
	}{
		{HealthEvent{Device: "t4-0/1", Kind: HealthXid, Xid: 13}, true, "", nil},
		{HealthEvent{Device: "t4-0/1", Kind: HealthXid, Xid: 79, Critical: true}, false, "xid 79", nil},
		{HealthEvent{Device: "t4-0/1", Kind: HealthXid, Xid: 48, Critical: true, Message: "DBE"}, false, "DBE", nil},
		{HealthEvent{Device: "t4-0/1", Kind: HealthRecovered}, true, "", nil},
		{HealthEvent{Device: "t4-0/1", Kind: HealthLost}, false, "device lost", nil},
		{HealthEvent{Device: "t4-0/9", Kind: HealthLost}, false, "device lost", ErrNotFound},
		{HealthEvent{Device: "t4-0/1", Kind: 0}, false, "device lost", ErrInvalid},
		{HealthEvent{Device: "t4-0/1", Kind: 99}, false, "device lost", ErrInvalid},
	}
	s := newTestStatic(t, "1x2:t4")
	for i, tt := range tests {
		err := s.Apply(tt.ev)
		if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%d: Apply(%+v) = %v, want %v", i, tt.ev, err, tt.err)
		}
		c, _ := s.Snapshot(context.Background())
		d, _ := c.Device("t4-0/1")
		if d.Healthy != tt.healthy || d.Fault != tt.fault {
			t.Errorf("%d: after %+v: healthy=%v fault=%q, want %v %q", i, tt.ev, d.Healthy, d.Fault, tt.healthy, tt.fault)
		}
		if other, _ := c.Device("t4-0/0"); !other.Healthy {
			t.Errorf("%d: the other device changed", i)
		}
	}
}

// Every stream sees every event in order, even when events are applied
// concurrently with reads and snapshots; cancelling closes the stream.
func TestStaticHealthConcurrent(t *testing.T) {
	s := newTestStatic(t, "2x8:h100")
	ctx, cancel := context.WithCancel(context.Background())
	const streams, writers, perWriter = 3, 4, 50
	var chans []<-chan HealthEvent
	for range streams {
		ch, err := s.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				id := fmt.Sprintf("h100-80gb-%d/%d", w%2, i%8)
				ev := HealthEvent{Device: id, Kind: HealthXid, Xid: w*1000 + i, Critical: i%2 == 0}
				if err := s.Apply(ev); err != nil {
					t.Error(err)
				}
				if _, err := s.Snapshot(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	results := make([][]int, streams)
	var rg sync.WaitGroup
	for k, ch := range chans {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for ev := range ch {
				results[k] = append(results[k], ev.Xid)
				if len(results[k]) == writers*perWriter {
					return
				}
			}
		}()
	}
	wg.Wait()
	rg.Wait()
	for k, r := range results {
		if len(r) != writers*perWriter {
			t.Fatalf("stream %d got %d events, want %d", k, len(r), writers*perWriter)
		}
		last := map[int]int{}
		for _, x := range r {
			w, i := x/1000, x%1000
			if p, ok := last[w]; ok && i <= p {
				t.Fatalf("stream %d: writer %d events out of order", k, w)
			}
			last[w] = i
		}
	}
	cancel()
	for _, ch := range chans {
		for range ch {
		}
	}
	s.mu.Lock()
	n := len(s.subs)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d subscribers left after cancel", n)
	}
	if err := s.MarkHealthy("h100-80gb-0/0"); err != nil {
		t.Error(err)
	}
}

func TestStringers(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{HealthXid.String(), "xid"}, {HealthLost.String(), "lost"}, {HealthRecovered.String(), "recovered"}, {HealthKind(9).String(), "HealthKind(9)"},
		{PCIeUnknown.String(), "unknown"}, {PCIeInternal.String(), "internal"}, {PCIeSingle.String(), "single"}, {PCIeMultiple.String(), "multiple"},
		{PCIeHostBridge.String(), "hostbridge"}, {PCIeNode.String(), "node"}, {PCIeSystem.String(), "system"}, {PCIeLevel(9).String(), "PCIeLevel(9)"},
		{NVLinkLayout(9).String(), "NVLinkLayout(9)"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func BenchmarkStaticSnapshot(b *testing.B) {
	s, err := NewStaticSpec("64x8:a100-40gb")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
