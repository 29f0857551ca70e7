//go:build cgo && linux

package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/goodsched/goodsched/accel"
)

type library = gonvml.Interface

// WithLibrary makes Open use lib instead of the real NVML library, for
// example a go-nvml mock server. Only in builds with cgo on Linux.
func WithLibrary(lib gonvml.Interface) Option { return func(o *options) { o.lib = lib } }

// Inventory is an accel.Inventory and accel.HealthSource over NVML for the
// machine it runs on. It is safe for concurrent use.
type Inventory struct {
	lib  gonvml.Interface
	opts options

	// mu guards ready and closing; every NVML call holds it for reading,
	// Close takes it for writing before Shutdown.
	mu      sync.RWMutex
	ready   bool // Init succeeded and Shutdown has not run
	closing bool
	closed  chan struct{} // closed by Close: Health goroutines stop
	once    sync.Once
	wg      sync.WaitGroup // Health goroutines

	faultMu sync.Mutex
	faults  map[string]string // device ID → critical fault seen by Health
}

var (
	_ accel.Inventory    = (*Inventory)(nil)
	_ accel.HealthSource = (*Inventory)(nil)
)

// Open initialises NVML and returns the inventory. If Init fails the error
// wraps accel.ErrUnavailable and the nvml.Return (ERROR_LIBRARY_NOT_FOUND
// on a machine without the driver), and no other NVML call is made.
func Open(opts ...Option) (*Inventory, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.poll <= 0 {
		o.poll = DefaultPollInterval
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.nodeName == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			o.nodeName = h
		} else {
			o.nodeName = "localhost"
		}
	}
	lib := o.lib
	if lib == nil {
		lib = gonvml.New()
	}
	if r := lib.Init(); r != gonvml.SUCCESS {
		err := &callError{op: "Init", ret: r, kind: classify(r)}
		if err.kind == nil {
			err.kind = accel.ErrUnavailable
		}
		return nil, err
	}
	return &Inventory{lib: lib, opts: o, ready: true, closed: make(chan struct{}), faults: make(map[string]string)}, nil
}

// errClosed is returned by calls after Close.
var errClosed = fmt.Errorf("%w: nvml inventory is closed", accel.ErrUnavailable)

// Close stops every Health goroutine, waits for them, and shuts NVML down.
// Later calls return an error wrapping accel.ErrUnavailable. Closing twice
// is harmless.
func (inv *Inventory) Close() error {
	var err error
	inv.once.Do(func() {
		close(inv.closed)
		inv.mu.Lock()
		inv.closing = true
		inv.mu.Unlock()
		inv.wg.Wait()
		inv.mu.Lock()
		defer inv.mu.Unlock()
		if inv.ready {
			inv.ready = false
			err = wrap("Shutdown", inv.lib.Shutdown())
		}
	})
	return err
}

// probe reads one device, remembering the first fault.
type probe struct {
	fault error
}

// ok reports whether r is SUCCESS. A code meaning "not available" is
// ignored; any other records a fault.
func (p *probe) ok(op string, r gonvml.Return) bool {
	if r == gonvml.SUCCESS {
		return true
	}
	if !unknown(r) && p.fault == nil {
		p.fault = wrap(op, r)
	}
	return false
}

// lost reports whether the device stopped answering.
func (p *probe) lost() bool { return errors.Is(p.fault, accel.ErrDeviceLost) }

// Snapshot reads the machine's devices and links. See the package
// documentation for what it collects and how device faults are reported.
// It fails only if NVML itself fails (DeviceGetCount), the inventory is
// closed, or ctx ends.
func (inv *Inventory) Snapshot(ctx context.Context) (accel.Cluster, error) {
	if err := ctx.Err(); err != nil {
		return accel.Cluster{}, err
	}
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	if !inv.ready || inv.closing {
		return accel.Cluster{}, errClosed
	}
	n, r := inv.lib.DeviceGetCount()
	if err := wrap("DeviceGetCount", r); err != nil {
		return accel.Cluster{}, err
	}
	node := accel.Node{Name: inv.opts.nodeName, Devices: make([]accel.Device, n)}
	handles := make([]gonvml.Device, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return accel.Cluster{}, err
		}
		h, r := inv.lib.DeviceGetHandleByIndex(i)
		if r != gonvml.SUCCESS {
			node.Devices[i] = accel.Device{
				ID: node.Name + "/" + strconv.Itoa(i), Node: node.Name, Index: i, Type: "unknown",
				NUMANode: -1, Fault: faultText(wrap("DeviceGetHandleByIndex", r)),
			}
			continue
		}
		d, healthy := inv.readDevice(h, node.Name, i)
		if healthy {
			handles[i] = h
		}
		node.Devices[i] = d
	}
	inv.applyFaults(node.Devices)
	node.Links = inv.readLinks(ctx, handles, node.Devices)
	if err := ctx.Err(); err != nil {
		return accel.Cluster{}, err
	}
	c := accel.Cluster{Nodes: []accel.Node{node}}
	if err := c.Validate(); err != nil {
		// Only duplicate UUIDs can cause this; report rather than hide it.
		return accel.Cluster{}, fmt.Errorf("nvml snapshot: %w", err)
	}
	return c, nil
}

// archNames maps nvml.DeviceArchitecture values to accel architecture names.
var archNames = map[gonvml.DeviceArchitecture]string{
	gonvml.DEVICE_ARCH_KEPLER:    "kepler",
	gonvml.DEVICE_ARCH_MAXWELL:   "maxwell",
	gonvml.DEVICE_ARCH_PASCAL:    "pascal",
	gonvml.DEVICE_ARCH_VOLTA:     "volta",
	gonvml.DEVICE_ARCH_TURING:    "turing",
	gonvml.DEVICE_ARCH_AMPERE:    "ampere",
	gonvml.DEVICE_ARCH_ADA:       "ada",
	gonvml.DEVICE_ARCH_HOPPER:    "hopper",
	gonvml.DEVICE_ARCH_BLACKWELL: "blackwell",
	gonvml.DEVICE_ARCH_RUBIN:     "rubin",
}

// readDevice reads one device. healthy is false if it faulted.
func (inv *Inventory) readDevice(h gonvml.Device, nodeName string, i int) (accel.Device, bool) {
	var p probe
	d := accel.Device{Node: nodeName, Index: i, NUMANode: -1, Healthy: true}
	if uuid, r := h.GetUUID(); p.ok("GetUUID", r) {
		d.UUID = uuid
	}
	if !p.lost() {
		if name, r := h.GetName(); p.ok("GetName", r) {
			d.Product = name
		}
	}
	if !p.lost() {
		if mem, r := h.GetMemoryInfo(); p.ok("GetMemoryInfo", r) {
			d.MemoryBytes = mem.Total
		}
	}
	d.ID = d.UUID
	if d.ID == "" {
		d.ID = nodeName + "/" + strconv.Itoa(i)
	}
	if d.Product != "" {
		d.Type = accel.TypeFromProduct(d.Product, d.MemoryBytes)
	} else {
		d.Type = "unknown"
	}
	if !p.lost() {
		inv.readDetails(h, &d, &p)
	}
	if prod, ok := accel.LookupProduct(d.Type); ok {
		if d.ComputeCapability == "" {
			d.ComputeCapability = prod.ComputeCapability
		}
		if d.Architecture == "" {
			d.Architecture = prod.Architecture
		}
	}
	if p.fault != nil {
		d.Healthy = false
		d.Fault = faultText(p.fault)
		for k := range d.Instances {
			d.Instances[k].Healthy, d.Instances[k].Fault = false, d.Fault
		}
		return d, false
	}
	return d, true
}

// readDetails reads the optional fields; it stops at a lost device.
func (inv *Inventory) readDetails(h gonvml.Device, d *accel.Device, p *probe) {
	steps := []func(){
		func() {
			if major, minor, r := h.GetCudaComputeCapability(); p.ok("GetCudaComputeCapability", r) {
				d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
			}
		},
		func() {
			if a, r := h.GetArchitecture(); p.ok("GetArchitecture", r) {
				d.Architecture = archNames[a]
			}
		},
		func() {
			if pci, r := h.GetPciInfo(); p.ok("GetPciInfo", r) {
				d.PCIBusID = busID(pci)
			}
		},
		func() {
			if numa, r := h.GetNumaNodeId(); p.ok("GetNumaNodeId", r) && numa >= 0 {
				d.NUMANode = numa
			}
		},
		func() {
			if mw, r := h.GetPowerUsage(); p.ok("GetPowerUsage", r) {
				d.PowerWatts = float64(mw) / 1000
			}
		},
		func() {
			if mj, r := h.GetTotalEnergyConsumption(); p.ok("GetTotalEnergyConsumption", r) {
				d.EnergyJoules = float64(mj) / 1000
			}
		},
		func() {
			if u, r := h.GetUtilizationRates(); p.ok("GetUtilizationRates", r) {
				d.UtilizationPercent = float64(u.Gpu)
			}
		},
		func() {
			if cur, _, r := h.GetMigMode(); p.ok("GetMigMode", r) && cur == gonvml.DEVICE_MIG_ENABLE {
				d.MIGEnabled = true
				inv.readMIG(h, d, p)
			}
		},
	}
	for _, step := range steps {
		if p.lost() {
			return
		}
		step()
	}
}

// readMIG reads the MIG instances of a MIG-enabled device as children.
func (inv *Inventory) readMIG(h gonvml.Device, d *accel.Device, p *probe) {
	maxN, r := h.GetMaxMigDeviceCount()
	if !p.ok("GetMaxMigDeviceCount", r) {
		return
	}
	for k := 0; k < maxN && !p.lost(); k++ {
		m, r := h.GetMigDeviceHandleByIndex(k)
		if !p.ok("GetMigDeviceHandleByIndex", r) {
			continue
		}
		var mp probe
		c := accel.Device{Node: d.Node, Index: k, Parent: d.ID, NUMANode: d.NUMANode, Healthy: true,
			ComputeCapability: d.ComputeCapability, Architecture: d.Architecture, PCIBusID: d.PCIBusID, MIG: &accel.MIG{}}
		if uuid, r := m.GetUUID(); mp.ok("GetUUID", r) {
			c.UUID = uuid
		}
		if name, r := m.GetName(); mp.ok("GetName", r) {
			c.Product = name
			c.MIG.Profile = migProfile(name)
		}
		if mem, r := m.GetMemoryInfo(); mp.ok("GetMemoryInfo", r) {
			c.MemoryBytes = mem.Total
		}
		if gi, r := m.GetGpuInstanceId(); mp.ok("GetGpuInstanceId", r) {
			c.MIG.GPUInstance = gi
		}
		if ci, r := m.GetComputeInstanceId(); mp.ok("GetComputeInstanceId", r) {
			c.MIG.ComputeInstance = ci
		}
		c.ID = c.UUID
		if c.ID == "" {
			c.ID = d.ID + "/mig" + strconv.Itoa(k)
		}
		c.Type = migType(d.Type, c.MIG.Profile)
		if mp.fault != nil {
			c.Healthy, c.Fault = false, faultText(mp.fault)
		}
		d.Instances = append(d.Instances, c)
	}
}

// migProfile extracts the profile from a MIG device name such as
// "NVIDIA A100-SXM4-40GB MIG 1g.5gb".
func migProfile(name string) string {
	i := strings.LastIndex(name, "MIG ")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(name[i+4:])
}

// migType is the type key of a MIG instance: the parent's key, "-mig-",
// and the profile with '.' and '+' turned into '-' ("a100-40gb-mig-1g-5gb").
func migType(parent accel.TypeKey, profile string) accel.TypeKey {
	var b strings.Builder
	for _, r := range strings.ToLower(profile) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	key := string(parent) + "-mig"
	if s != "" {
		key += "-" + s
	}
	if len(key) > 64 {
		key = strings.TrimRight(key[:64], "-")
	}
	return accel.TypeKey(key)
}

// busID returns the PCI bus ID in Linux's lower-case form "0000:3b:00.0"
// (NVML writes an 8-digit domain), or "" if NVML gave none.
func busID(p gonvml.PciInfo) string {
	var b []byte
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return normBusID(string(b))
}

func normBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if ok && len(dom) == 8 && strings.HasPrefix(dom, "0000") {
		s = dom[4:] + ":" + rest
	}
	return s
}

// readLinks builds the links of every pair of healthy devices: NVLink lanes
// and PCIe common ancestor.
func (inv *Inventory) readLinks(ctx context.Context, handles []gonvml.Device, devs []accel.Device) []accel.Link {
	n := len(handles)
	byBus := make(map[string]int, n)
	for i, d := range devs {
		if handles[i] != nil && d.PCIBusID != "" {
			byBus[d.PCIBusID] = i
		}
	}
	direct := make([][]int, n)
	switchLanes := make([]int, n)
	for i, h := range handles {
		direct[i] = make([]int, n)
		if h == nil || ctx.Err() != nil {
			continue
		}
		var p probe
		for l := range gonvml.NVLINK_MAX_LINKS {
			st, r := h.GetNvLinkState(l)
			if !p.ok("GetNvLinkState", r) {
				if p.lost() || l == 0 && r == gonvml.ERROR_NOT_SUPPORTED {
					break // lost, or no NVLink on this device
				}
				continue
			}
			if st != gonvml.FEATURE_ENABLED {
				continue
			}
			pci, r := h.GetNvLinkRemotePciInfo(l)
			if !p.ok("GetNvLinkRemotePciInfo", r) {
				continue
			}
			if j, ok := byBus[busID(pci)]; ok && j != i {
				direct[i][j]++
				continue
			}
			// Not a GPU of this node: count links into an NVSwitch fabric.
			if t, r := h.GetNvLinkRemoteDeviceType(l); r != gonvml.SUCCESS || t == gonvml.NVLINK_DEVICE_TYPE_SWITCH {
				switchLanes[i]++
			}
		}
		if p.fault != nil {
			devs[i].Healthy, devs[i].Fault = false, faultText(p.fault)
			handles[i] = nil
		}
	}
	var links []accel.Link
	for a := range n {
		for b := a + 1; b < n; b++ {
			if handles[a] == nil || handles[b] == nil {
				continue
			}
			lanes := max(direct[a][b], direct[b][a])
			if switchLanes[a] > 0 && switchLanes[b] > 0 {
				lanes += min(switchLanes[a], switchLanes[b])
			}
			level := accel.PCIeUnknown
			if lv, r := handles[a].GetTopologyCommonAncestor(handles[b]); r == gonvml.SUCCESS {
				level = pcieLevel(lv)
			}
			if lanes > 0 || level != accel.PCIeUnknown {
				links = append(links, accel.Link{A: devs[a].Index, B: devs[b].Index, NVLinks: lanes, PCIe: level})
			}
		}
	}
	return links
}

func pcieLevel(l gonvml.GpuTopologyLevel) accel.PCIeLevel {
	switch l {
	case gonvml.TOPOLOGY_INTERNAL:
		return accel.PCIeInternal
	case gonvml.TOPOLOGY_SINGLE:
		return accel.PCIeSingle
	case gonvml.TOPOLOGY_MULTIPLE:
		return accel.PCIeMultiple
	case gonvml.TOPOLOGY_HOSTBRIDGE:
		return accel.PCIeHostBridge
	case gonvml.TOPOLOGY_NODE:
		return accel.PCIeNode
	case gonvml.TOPOLOGY_SYSTEM:
		return accel.PCIeSystem
	}
	return accel.PCIeUnknown
}

// applyFaults marks devices with a remembered critical event unhealthy.
func (inv *Inventory) applyFaults(devs []accel.Device) {
	inv.faultMu.Lock()
	defer inv.faultMu.Unlock()
	for i := range devs {
		if f, ok := inv.faults[devs[i].ID]; ok && devs[i].Healthy {
			devs[i].Healthy, devs[i].Fault = false, f
			for k := range devs[i].Instances {
				devs[i].Instances[k].Healthy, devs[i].Instances[k].Fault = false, f
			}
		}
	}
}

// healthEvents is the event mask Health registers, where supported.
const healthEvents = gonvml.EventTypeXidCriticalError | gonvml.EventTypeDoubleBitEccError

// watched is a registered device.
type watched struct {
	h  gonvml.Device
	id string
}

// Health registers every device for Xid and double-bit ECC events and
// returns their stream. A device that reports ERROR_GPU_IS_LOST while
// registering yields a HealthLost event first. One goroutine per call waits
// on the event set; it ends, frees the event set and closes the channel
// when ctx ends, when Close is called, or when the event set fails (an
// unexpected return from Wait). It fails with accel.ErrUnavailable when no
// device supports events.
func (inv *Inventory) Health(ctx context.Context) (<-chan accel.HealthEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	if !inv.ready || inv.closing {
		return nil, errClosed
	}
	n, r := inv.lib.DeviceGetCount()
	if err := wrap("DeviceGetCount", r); err != nil {
		return nil, err
	}
	set, r := inv.lib.EventSetCreate()
	if err := wrap("EventSetCreate", r); err != nil {
		return nil, err
	}
	var ws []watched
	var pending []accel.HealthEvent
	for i := range n {
		h, r := inv.lib.DeviceGetHandleByIndex(i)
		if r == gonvml.ERROR_GPU_IS_LOST {
			pending = append(pending, inv.lostEvent(inv.opts.nodeName+"/"+strconv.Itoa(i), wrap("DeviceGetHandleByIndex", r)))
		}
		if r != gonvml.SUCCESS {
			continue
		}
		id, r := h.GetUUID()
		if r != gonvml.SUCCESS {
			id = inv.opts.nodeName + "/" + strconv.Itoa(i)
		}
		mask, r := h.GetSupportedEventTypes()
		if r == gonvml.SUCCESS {
			if mask &= healthEvents; mask != 0 {
				r = h.RegisterEvents(mask, set)
			}
		}
		switch {
		case r == gonvml.SUCCESS && mask != 0:
			ws = append(ws, watched{h: h, id: id})
		case r == gonvml.ERROR_GPU_IS_LOST:
			pending = append(pending, inv.lostEvent(id, wrap("RegisterEvents", r)))
		}
	}
	if len(ws) == 0 && len(pending) == 0 {
		set.Free()
		return nil, fmt.Errorf("%w: no device supports NVML health events", accel.ErrUnavailable)
	}
	out := make(chan accel.HealthEvent)
	inv.wg.Add(1)
	go inv.watch(ctx, set, ws, pending, out)
	return out, nil
}

func (inv *Inventory) lostEvent(id string, err error) accel.HealthEvent {
	ev := accel.HealthEvent{Time: inv.opts.now(), Device: id, Kind: accel.HealthLost, Critical: true, Message: faultText(err)}
	inv.remember(ev)
	return ev
}

// remember records a critical event so that Snapshot reports the device
// unhealthy.
func (inv *Inventory) remember(ev accel.HealthEvent) {
	if !ev.Critical {
		return
	}
	inv.faultMu.Lock()
	defer inv.faultMu.Unlock()
	if _, ok := inv.faults[ev.Device]; !ok {
		inv.faults[ev.Device] = ev.Message
	}
}

// watch is the Health goroutine.
func (inv *Inventory) watch(ctx context.Context, set gonvml.EventSet, ws []watched, pending []accel.HealthEvent, out chan<- accel.HealthEvent) {
	defer inv.wg.Done()
	defer close(out)
	defer func() {
		inv.mu.RLock()
		if inv.ready {
			set.Free()
		}
		inv.mu.RUnlock()
	}()
	send := func(ev accel.HealthEvent) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
		case <-inv.closed:
		}
		return false
	}
	for _, ev := range pending {
		if !send(ev) {
			return
		}
	}
	timeoutMs := uint32(min(inv.opts.poll.Milliseconds(), 1<<31))
	if timeoutMs == 0 {
		timeoutMs = 1
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-inv.closed:
			return
		default:
		}
		inv.mu.RLock()
		if !inv.ready {
			inv.mu.RUnlock()
			return
		}
		data, r := set.Wait(timeoutMs)
		inv.mu.RUnlock()
		switch r {
		case gonvml.SUCCESS:
			ev, ok := inv.translate(data, ws)
			if ok && !send(ev) {
				return
			}
		case gonvml.ERROR_TIMEOUT:
		case gonvml.ERROR_GPU_IS_LOST:
			if id, ok := lookup(ws, data.Device); ok && !send(inv.lostEvent(id, wrap("EventSet.Wait", r))) {
				return
			}
		default:
			return
		}
	}
}

// translate turns NVML event data into a HealthEvent.
func (inv *Inventory) translate(data gonvml.EventData, ws []watched) (accel.HealthEvent, bool) {
	id, ok := lookup(ws, data.Device)
	if !ok {
		return accel.HealthEvent{}, false
	}
	ev := accel.HealthEvent{Time: inv.opts.now(), Device: id, Kind: accel.HealthXid}
	switch {
	case data.EventType&gonvml.EventTypeXidCriticalError != 0:
		ev.Xid = int(data.EventData)
		ev.Critical = accel.CriticalXid(ev.Xid)
		ev.Message = "xid " + strconv.Itoa(ev.Xid)
	case data.EventType&gonvml.EventTypeDoubleBitEccError != 0:
		ev.Xid, ev.Critical, ev.Message = 48, true, "double-bit ECC error"
	default:
		return accel.HealthEvent{}, false
	}
	inv.remember(ev)
	return ev, true
}

// lookup finds the ID of a registered device handle. Handles are compared
// only when their dynamic types are comparable, so an exotic
// nvml.Device implementation cannot make the comparison panic.
func lookup(ws []watched, h gonvml.Device) (string, bool) {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return "", false
	}
	for _, w := range ws {
		if reflect.TypeOf(w.h) == reflect.TypeOf(h) && w.h == h {
			return w.id, true
		}
	}
	return "", false
}
