//go:build cgo && linux

package nvmlmock

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// preset is the NVLink wiring of one DGX box.
type preset struct {
	build    func() *server.Server
	links    int // NVLinks per GPU
	switches int // NVSwitch chips the links spread over
}

var presets = map[string]preset{
	"dgxa100": {dgxa100.New, 12, 6},
	"dgxh100": {dgxh100.New, 18, 4},
	"dgxh200": {dgxh200.New, 18, 4},
	"dgxb200": {dgxb200.New, 18, 2},
}

// Presets returns the preset names New accepts, sorted.
func Presets() []string {
	var ps []string
	for k := range presets {
		ps = append(ps, k)
	}
	slices.Sort(ps)
	return ps
}

// Server is a wired go-nvml mock server; it satisfies nvml.Interface. Set
// more XxxFunc fields on Server.Server or on Device(i) to change behaviour
// before handing it to accel/nvml. Server is safe for concurrent use once
// wired (the injection methods may be called while it is being read).
type Server struct {
	*server.Server
	events chan gonvml.EventData

	mu    sync.Mutex
	freed int
}

// New returns the named preset (see Presets), fully wired.
func New(name string) (*Server, error) {
	p, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("nvmlmock: unknown preset %q (want one of %s)", name, strings.Join(Presets(), ", "))
	}
	s := &Server{Server: p.build(), events: make(chan gonvml.EventData, 256)}
	n := len(s.Devices)
	for i := range s.Devices {
		s.wire(s.Device(i), i, n, p)
	}
	s.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) {
		return &mock.EventSet{
			WaitFunc: s.wait,
			FreeFunc: func() gonvml.Return {
				s.mu.Lock()
				s.freed++
				s.mu.Unlock()
				return gonvml.SUCCESS
			},
		}, gonvml.SUCCESS
	}
	return s, nil
}

// Device returns the mock device at index i.
func (s *Server) Device(i int) *server.Device { return s.Devices[i].(*server.Device) }

// FreedEventSets returns how many event sets have been freed.
func (s *Server) FreedEventSets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freed
}

func (s *Server) wait(timeoutMs uint32) (gonvml.EventData, gonvml.Return) {
	t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
	defer t.Stop()
	select {
	case ev := <-s.events:
		return ev, gonvml.SUCCESS
	case <-t.C:
		return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
	}
}

// InjectXid queues an Xid critical-error event for device i; the next Wait
// on any event set of this server returns it. At most 256 events may wait.
func (s *Server) InjectXid(i int, xid uint64) {
	s.events <- gonvml.EventData{Device: s.Devices[i], EventType: gonvml.EventTypeXidCriticalError, EventData: xid,
		GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF}
}

func pciInfo(bus string, id uint32) gonvml.PciInfo {
	var p gonvml.PciInfo
	for k := 0; k < len(bus) && k < len(p.BusId)-1; k++ {
		p.BusId[k] = int8(bus[k])
	}
	p.PciDeviceId = id
	return p
}

func (s *Server) wire(d *server.Device, i, n int, p preset) {
	bus := "0000" + d.PciBusID
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		info := pciInfo(bus, d.Config.PciDeviceId)
		info.Bus = uint32(i)
		return info, gonvml.SUCCESS
	}
	numa := func(k int) int { return k * 2 / max(n, 1) }
	d.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return numa(i), gonvml.SUCCESS }
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return uint32(100000 + 1000*i), gonvml.SUCCESS }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) { return uint64(1e9 * (i + 1)), gonvml.SUCCESS }
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		return gonvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(5 * i)}, gonvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		if l < 0 || l >= gonvml.NVLINK_MAX_LINKS {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		if l >= p.links {
			return gonvml.FEATURE_DISABLED, gonvml.ERROR_NOT_SUPPORTED
		}
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (gonvml.PciInfo, gonvml.Return) {
		if l < 0 || l >= p.links {
			return gonvml.PciInfo{}, gonvml.ERROR_INVALID_ARGUMENT
		}
		return pciInfo(fmt.Sprintf("00000000:%02x:00.0", 0xc0+l%p.switches), 0x1af110de), gonvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
		if l < 0 || l >= p.links {
			return gonvml.NVLINK_DEVICE_TYPE_UNKNOWN, gonvml.ERROR_INVALID_ARGUMENT
		}
		return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(other gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		o, ok := other.(*server.Device)
		if !ok {
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		}
		switch j := o.Index; {
		case j == i:
			return gonvml.TOPOLOGY_INTERNAL, gonvml.SUCCESS
		case j/2 == i/2:
			return gonvml.TOPOLOGY_SINGLE, gonvml.SUCCESS
		case numa(j) == numa(i):
			return gonvml.TOPOLOGY_NODE, gonvml.SUCCESS
		}
		return gonvml.TOPOLOGY_SYSTEM, gonvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) {
		return gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError | gonvml.EventTypeSingleBitEccError, gonvml.SUCCESS
	}
	d.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS }
}

// LoseDevice makes every call accel/nvml makes on device i return
// ERROR_GPU_IS_LOST, as a GPU that fell off the bus does.
func (s *Server) LoseDevice(i int) {
	d := s.Device(i)
	const lost = gonvml.ERROR_GPU_IS_LOST
	d.GetUUIDFunc = func() (string, gonvml.Return) { return "", lost }
	d.GetNameFunc = func() (string, gonvml.Return) { return "", lost }
	d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, lost }
	d.GetCudaComputeCapabilityFunc = func() (int, int, gonvml.Return) { return 0, 0, lost }
	d.GetArchitectureFunc = func() (gonvml.DeviceArchitecture, gonvml.Return) { return 0, lost }
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, lost }
	d.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 0, lost }
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, lost }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) { return 0, lost }
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) { return gonvml.Utilization{}, lost }
	d.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, lost }
	d.GetNvLinkStateFunc = func(int) (gonvml.EnableState, gonvml.Return) { return 0, lost }
	d.GetNvLinkRemotePciInfoFunc = func(int) (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, lost }
	d.GetTopologyCommonAncestorFunc = func(gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) { return 0, lost }
	d.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return 0, lost }
	d.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return lost }
}

// EnableMIG turns MIG mode on for device i and gives it one MIG device per
// profile (for example "1g.10gb"), with GPU instance IDs 1, 2, … and
// compute instance 0. A profile's memory is the number before "gb" in GiB.
func (s *Server) EnableMIG(i int, profiles ...string) {
	d := s.Device(i)
	d.Lock()
	d.MigMode = gonvml.DEVICE_MIG_ENABLE
	d.Unlock()
	children := make([]gonvml.Device, len(profiles))
	for k, prof := range profiles {
		uuid := "MIG-" + strings.TrimPrefix(d.UUID, "GPU-") + "-" + strconv.Itoa(k)
		name := d.Config.Name + " MIG " + prof
		var mem uint64
		if _, after, ok := strings.Cut(prof, "."); ok {
			if g, err := strconv.ParseUint(strings.TrimSuffix(after, "gb"), 10, 32); err == nil {
				mem = g << 30
			}
		}
		children[k] = &mock.Device{
			GetUUIDFunc:              func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
			GetNameFunc:              func() (string, gonvml.Return) { return name, gonvml.SUCCESS },
			GetMemoryInfoFunc:        func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: mem}, gonvml.SUCCESS },
			GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return k + 1, gonvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return 0, gonvml.SUCCESS },
		}
	}
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(k int) (gonvml.Device, gonvml.Return) {
		if k < 0 || k >= len(children) {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return children[k], gonvml.SUCCESS
	}
}
