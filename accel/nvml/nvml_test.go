//go:build cgo && linux

package nvml_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/accel/nvml"
	"github.com/goodsched/goodsched/accel/nvml/nvmlmock"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func open(t *testing.T, srv gonvml.Interface) *nvml.Inventory {
	t.Helper()
	inv, err := nvml.Open(nvml.WithLibrary(srv), nvml.WithNodeName("dgx"), nvml.WithPollInterval(5*time.Millisecond),
		nvml.WithClock(func() time.Time { return epoch }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inv.Close() })
	return inv
}

func newMock(t *testing.T, preset string) *nvmlmock.Server {
	t.Helper()
	srv, err := nvmlmock.New(preset)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func snapshot(t *testing.T, inv *nvml.Inventory) accel.Node {
	t.Helper()
	c, err := inv.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 1 || c.Nodes[0].Name != "dgx" {
		t.Fatalf("nodes %+v", c.Nodes)
	}
	return c.Nodes[0]
}

func TestPresets(t *testing.T) {
	tests := []struct {
		preset  string
		typ     accel.TypeKey
		product string
		memory  uint64
		cc      string
		arch    string
		lanes   int
	}{
		{"dgxa100", "a100-40gb", "Mock NVIDIA A100-SXM4-40GB", 40960 << 20, "8.0", "ampere", 12},
		{"dgxh100", "h100-80gb", "NVIDIA H100 80GB HBM3", 81920 << 20, "9.0", "hopper", 18},
		{"dgxh200", "h200-141gb", "NVIDIA H200 141GB HBM3e", 144384 << 20, "9.0", "hopper", 18},
		{"dgxb200", "b200", "NVIDIA B200 180GB HBM3e", 184320 << 20, "10.0", "blackwell", 18},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			srv := newMock(t, tt.preset)
			n := snapshot(t, open(t, srv))
			if len(n.Devices) != 8 {
				t.Fatalf("%d devices", len(n.Devices))
			}
			for i, d := range n.Devices {
				want := srv.Device(i)
				if d.ID != want.UUID || d.UUID != want.UUID || !strings.HasPrefix(d.ID, "GPU-") || d.Index != i || d.Node != "dgx" {
					t.Errorf("device %d identity %q %q %d", i, d.ID, d.UUID, d.Index)
				}
				if d.Type != tt.typ || d.Product != tt.product || d.MemoryBytes != tt.memory || d.ComputeCapability != tt.cc || d.Architecture != tt.arch {
					t.Errorf("device %d = %s %q %d %s %s", i, d.Type, d.Product, d.MemoryBytes, d.ComputeCapability, d.Architecture)
				}
				if d.PCIBusID != want.PciBusID || d.NUMANode != i/4 || !d.Healthy || d.Fault != "" || d.MIGEnabled {
					t.Errorf("device %d bus %q numa %d healthy %v fault %q", i, d.PCIBusID, d.NUMANode, d.Healthy, d.Fault)
				}
				if d.PowerWatts != float64(100+i) || d.EnergyJoules != float64(1e6*(i+1)) || d.UtilizationPercent != float64(10*i) {
					t.Errorf("device %d power %v energy %v util %v", i, d.PowerWatts, d.EnergyJoules, d.UtilizationPercent)
				}
				if got := n.Peers(i); len(got) != 7 {
					t.Errorf("device %d NVLink peers %v", i, got)
				}
			}
			if len(n.Links) != 28 {
				t.Fatalf("%d links", len(n.Links))
			}
			for _, l := range n.Links {
				want := accel.PCIeSystem
				switch {
				case l.A/2 == l.B/2:
					want = accel.PCIeSingle
				case l.A/4 == l.B/4:
					want = accel.PCIeNode
				}
				if l.NVLinks != tt.lanes || l.PCIe != want {
					t.Errorf("link %+v, want %d lanes, %v", l, tt.lanes, want)
				}
			}
		})
	}
}

// UUIDs are random per mock server, everything else is deterministic.
func TestSnapshotDeterministic(t *testing.T) {
	a := snapshot(t, open(t, newMock(t, "dgxh100")))
	b := snapshot(t, open(t, newMock(t, "dgxh100")))
	for i := range a.Devices {
		a.Devices[i].ID, a.Devices[i].UUID = "", ""
		b.Devices[i].ID, b.Devices[i].UUID = "", ""
	}
	if !equalJSON(t, a, b) {
		t.Error("two snapshots of the same preset differ beyond UUIDs")
	}
}

func TestLibraryNotFound(t *testing.T) {
	// Every Func but Init is nil: any other call would panic, so this also
	// proves that nothing is called after the failed Init.
	lib := &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }}
	inv, err := nvml.Open(nvml.WithLibrary(lib))
	if inv != nil || !errors.Is(err, accel.ErrUnavailable) || !errors.Is(err, gonvml.ERROR_LIBRARY_NOT_FOUND) {
		t.Fatalf("Open = %v, %v", inv, err)
	}
	if !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") || !strings.Contains(err.Error(), "driver") {
		t.Errorf("unclear message %q", err)
	}
	if len(lib.InitCalls()) != 1 || len(lib.ShutdownCalls()) != 0 {
		t.Error("unexpected calls")
	}
	// An Init failure outside the mapped codes is still ErrUnavailable.
	lib = &mock.Interface{InitFunc: func() gonvml.Return { return gonvml.ERROR_UNKNOWN }}
	if _, err := nvml.Open(nvml.WithLibrary(lib)); !errors.Is(err, accel.ErrUnavailable) {
		t.Errorf("Open with ERROR_UNKNOWN = %v", err)
	}
}

// The real library: on a machine without the driver Open fails cleanly.
func TestRealLibrary(t *testing.T) {
	inv, err := nvml.Open()
	if err == nil {
		_ = inv.Close()
		t.Skip("an NVIDIA driver is present")
	}
	if !errors.Is(err, accel.ErrUnavailable) {
		t.Fatalf("Open = %v, want ErrUnavailable", err)
	}
	t.Log(err)
}

func TestGPULost(t *testing.T) {
	srv := newMock(t, "dgxa100")
	srv.LoseDevice(3)
	// Device 5 cannot even be opened.
	byIndex := srv.DeviceGetHandleByIndexFunc
	srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 5 {
			return nil, gonvml.ERROR_GPU_IS_LOST
		}
		return byIndex(i)
	}
	c, err := open(t, srv).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nodes[0]
	for i, d := range n.Devices {
		lost := i == 3 || i == 5
		if d.Healthy == lost {
			t.Errorf("device %d healthy=%v", i, d.Healthy)
		}
		if lost && (!strings.Contains(d.Fault, "device lost") || !strings.Contains(d.Fault, "ERROR_GPU_IS_LOST")) {
			t.Errorf("device %d fault %q", i, d.Fault)
		}
		if !lost && (d.Type != "a100-40gb" || d.Fault != "") {
			t.Errorf("healthy device %d = %+v", i, d)
		}
	}
	if n.Devices[3].ID != "dgx/3" || n.Devices[5].ID != "dgx/5" || n.Devices[5].Type != "unknown" {
		t.Errorf("lost devices %+v %+v", n.Devices[3], n.Devices[5])
	}
	if got := c.Count("a100-40gb"); got != 6 {
		t.Errorf("healthy a100 = %d, want 6", got)
	}
	if len(n.Links) != 15 { // 6 healthy devices
		t.Errorf("%d links, want 15", len(n.Links))
	}
	for _, l := range n.Links {
		if l.A == 3 || l.B == 3 || l.A == 5 || l.B == 5 {
			t.Errorf("link to a lost device: %+v", l)
		}
	}
}

func TestUnsupportedAndUnknownFaults(t *testing.T) {
	srv := newMock(t, "dgxh200")
	for i := range srv.Devices {
		d := srv.Device(i)
		d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
		d.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_FUNCTION_NOT_FOUND }
		d.GetNvLinkStateFunc = func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	}
	srv.Device(2).GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_UNKNOWN }
	n := snapshot(t, open(t, srv))
	for i, d := range n.Devices {
		if d.PowerWatts != 0 || d.NUMANode != -1 || len(n.Peers(i)) != 0 {
			t.Errorf("device %d: power %v numa %d peers %v", i, d.PowerWatts, d.NUMANode, n.Peers(i))
		}
		if (i == 2) == d.Healthy {
			t.Errorf("device %d healthy=%v fault=%q", i, d.Healthy, d.Fault)
		}
	}
	if f := n.Devices[2].Fault; !strings.Contains(f, "GetMemoryInfo") || !strings.Contains(f, "ERROR_UNKNOWN") {
		t.Errorf("fault %q", f)
	}
	if len(n.Links) != 21 {
		t.Errorf("%d PCIe links, want 21", len(n.Links))
	}
}

// Bridged pairs: links whose remote end is another GPU of the node.
func TestDirectNVLink(t *testing.T) {
	srv := newMock(t, "dgxh100")
	for i := range srv.Devices {
		d := srv.Device(i)
		peer := srv.Device(i ^ 1).PciBusID
		d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
			if l >= 12 {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(int) (gonvml.PciInfo, gonvml.Return) {
			var p gonvml.PciInfo
			for k, c := range strings.ToUpper("0000" + peer) {
				p.BusId[k] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
		d.GetNvLinkRemoteDeviceTypeFunc = nil // must not be called for a GPU peer
	}
	n := snapshot(t, open(t, srv))
	for _, l := range n.Links {
		want := 0
		if l.A/2 == l.B/2 {
			want = 12
		}
		if l.NVLinks != want {
			t.Errorf("link %+v, want %d lanes", l, want)
		}
	}
}

func TestMIG(t *testing.T) {
	srv := newMock(t, "dgxh100")
	srv.EnableMIG(1, "1g.10gb", "3g.40gb")
	n := snapshot(t, open(t, srv))
	d := n.Devices[1]
	if !d.MIGEnabled || len(d.Instances) != 2 || n.Devices[0].MIGEnabled {
		t.Fatalf("device 1 = %+v", d)
	}
	for k, want := range []struct {
		typ  accel.TypeKey
		prof string
		mem  uint64
	}{{"h100-80gb-mig-1g-10gb", "1g.10gb", 10 << 30}, {"h100-80gb-mig-3g-40gb", "3g.40gb", 40 << 30}} {
		m := d.Instances[k]
		if m.Type != want.typ || m.MIG == nil || m.MIG.Profile != want.prof || m.MIG.GPUInstance != k+1 || m.MemoryBytes != want.mem ||
			m.Parent != d.ID || !strings.HasPrefix(m.ID, "MIG-") || !m.Healthy || m.Index != k {
			t.Errorf("instance %d = %+v (mig %+v)", k, m, m.MIG)
		}
	}
}

func TestHealthXid79(t *testing.T) {
	srv := newMock(t, "dgxh100")
	inv := open(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := inv.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.InjectXid(6, 13) // an application error: reported, not critical
	srv.InjectXid(3, 79)
	want := []accel.HealthEvent{
		{Time: epoch, Device: srv.Device(6).UUID, Kind: accel.HealthXid, Xid: 13, Critical: false, Message: "xid 13"},
		{Time: epoch, Device: srv.Device(3).UUID, Kind: accel.HealthXid, Xid: 79, Critical: true, Message: "xid 79"},
	}
	for _, w := range want {
		if got := <-events; got != w {
			t.Errorf("event %+v, want %+v", got, w)
		}
	}
	n := snapshot(t, inv)
	for i, d := range n.Devices {
		if d.Healthy == (i == 3) {
			t.Errorf("after xid 79 on 3: device %d healthy=%v fault=%q", i, d.Healthy, d.Fault)
		}
	}
	cancel()
	for range events {
	}
	if got := srv.FreedEventSets(); got != 1 {
		t.Errorf("freed %d event sets, want 1", got)
	}
}

func TestHealthLostAtRegistration(t *testing.T) {
	srv := newMock(t, "dgxb200")
	srv.Device(4).RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.ERROR_GPU_IS_LOST }
	inv := open(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := inv.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := <-events
	if ev.Kind != accel.HealthLost || ev.Device != srv.Device(4).UUID || !ev.Critical || !strings.Contains(ev.Message, "device lost") {
		t.Errorf("event %+v", ev)
	}
	if d := snapshot(t, inv).Devices[4]; d.Healthy {
		t.Error("device 4 still healthy")
	}
}

func TestHealthHandleLost(t *testing.T) {
	srv := newMock(t, "dgxh100")
	byIndex := srv.DeviceGetHandleByIndexFunc
	srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 2 {
			return nil, gonvml.ERROR_GPU_IS_LOST
		}
		return byIndex(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := open(t, srv).Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := accel.HealthEvent{Time: epoch, Device: "dgx/2", Kind: accel.HealthLost, Critical: true,
		Message: "device lost: nvml DeviceGetHandleByIndex: ERROR_GPU_IS_LOST"}
	if ev := <-events; ev != want {
		t.Errorf("event %+v, want %+v", ev, want)
	}
}

func TestHealthUnsupported(t *testing.T) {
	srv := newMock(t, "dgxa100")
	for i := range srv.Devices {
		srv.Device(i).GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	}
	if _, err := open(t, srv).Health(context.Background()); !errors.Is(err, accel.ErrUnavailable) {
		t.Errorf("Health = %v", err)
	}
	if srv.FreedEventSets() != 1 {
		t.Error("event set not freed")
	}
}

// Close ends the Health goroutines, shuts NVML down once, and later calls
// fail cleanly.
func TestClose(t *testing.T) {
	srv := newMock(t, "dgxh200")
	inv, err := nvml.Open(nvml.WithLibrary(srv), nvml.WithPollInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	events, err := inv.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Close(); err != nil {
		t.Fatal(err)
	}
	for range events { // closed by Close although the context lives on
	}
	if err := inv.Close(); err != nil {
		t.Error(err)
	}
	if _, err := inv.Snapshot(context.Background()); !errors.Is(err, accel.ErrUnavailable) {
		t.Errorf("Snapshot after Close = %v", err)
	}
	if _, err := inv.Health(context.Background()); !errors.Is(err, accel.ErrUnavailable) {
		t.Errorf("Health after Close = %v", err)
	}
	if len(srv.ShutdownCalls()) != 1 || srv.FreedEventSets() != 1 {
		t.Errorf("shutdown %d times, freed %d sets", len(srv.ShutdownCalls()), srv.FreedEventSets())
	}
}

func TestContextDone(t *testing.T) {
	inv := open(t, newMock(t, "dgxa100"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := inv.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot = %v", err)
	}
	if _, err := inv.Health(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Health = %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := newMock(t, "dgxh100")
	inv := open(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	var readers, watchers sync.WaitGroup
	for g := range 4 {
		if g%2 == 0 {
			ch, err := inv.Health(ctx)
			if err != nil {
				t.Fatal(err)
			}
			watchers.Add(1)
			go func() {
				defer watchers.Done()
				for range ch {
				}
			}()
			continue
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			for range 5 {
				if _, err := inv.Snapshot(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	srv.InjectXid(0, 48)
	srv.InjectXid(1, 31)
	readers.Wait()
	cancel()
	watchers.Wait()
	if srv.FreedEventSets() != 2 {
		t.Errorf("freed %d event sets, want 2", srv.FreedEventSets())
	}
}

func BenchmarkSnapshotDGXH100(b *testing.B) {
	srv, err := nvmlmock.New("dgxh100")
	if err != nil {
		b.Fatal(err)
	}
	inv, err := nvml.Open(nvml.WithLibrary(srv), nvml.WithNodeName("dgx"))
	if err != nil {
		b.Fatal(err)
	}
	defer inv.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := inv.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
