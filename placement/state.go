package placement

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/google/btree"

	"github.com/goodsched/goodsched/accel"
)

// btreeDegree is the degree of every tree in a State: small enough that the
// path copy after a Clone stays cheap, large enough for shallow trees.
const btreeDegree = 16

// cowToken marks which State owns a nodeUse; a State copies a nodeUse it
// does not own before writing to it.
type cowToken struct{ _ byte }

// nodeUse is the mutable usage of one node.
type nodeUse struct {
	cow   *cowToken
	owner []string // job by slot.off+bit; "" = none
	used  []uint64 // per slot: devices held by a job
	bad   []uint64 // per slot: unhealthy devices
	dist  []string // distributed (multi-node) jobs on the node, sorted
}

// jobUse is one job's devices; immutable once in the tree.
type jobUse struct {
	job   string
	devs  []int32 // device numbers, sorted
	nodes int32   // distinct nodes
}

// freeKey orders the nodes of one type by free devices, then by name.
type freeKey struct {
	free int32
	node int32
}

// State is the usage of an accel.Cluster: which device serves which job and
// which devices are unhealthy. Free capacity is indexed per device type in a
// btree of nodes ordered by free devices, so best-fit and most-free queries
// cost O(log nodes); per-node usage is a persistent trie (O(1) lookups).
//
// A State is not safe for concurrent use: any number of goroutines may read
// it (Free, Assignment, Fragmentation, Place) only while none writes it.
// Clone counts as a write (it marks the shared nodes copy-on-write, as
// btree.BTreeG.Clone does); after it returns, the two States are
// independent and may be used by different goroutines.
type State struct {
	ix    *shape
	cow   *cowToken
	nodes usageTrie // node usage by node number
	jobs  *btree.BTreeG[jobUse]
	free  []*btree.BTreeG[freeKey] // by type number; nodes with ≥1 free device
	// Per type counters.
	freeTotal []int
	usedTotal []int
	badTotal  []int
	partial   []int // nodes with both used and free devices
	idle      []int // nodes with free devices and none used
}

func lessJob(a, b jobUse) bool { return a.job < b.job }
func lessFree(a, b freeKey) bool {
	return a.free < b.free || (a.free == b.free && a.node < b.node)
}

// NewState indexes the cluster and records the current assignments.
// Current assignments may hold unhealthy devices (the job still holds them
// until it is re-placed; see Fault); they may not share a device, name an
// unknown device, or repeat a job.
func NewState(c accel.Cluster, current []Assignment) (*State, error) {
	ix, err := buildShape(c)
	if err != nil {
		return nil, err
	}
	return newState(ix, current)
}

// sparseShare: Index.NewState starts from the State of no job when the
// current assignments hold at most 1/sparseShare of the devices. Beyond
// that, copying each touched node on write costs more CPU than building
// every node's usage at once (BenchmarkIndexNewStateSparse on 512 nodes ×
// 8 GPUs: 7-8× less at 2% held, 1.2-1.5× less at 25%, even at 50%, 1.2×
// more at 75%).
const sparseShare = 2

// newState builds a State on ix with the current assignments.
func newState(ix *shape, current []Assignment) (*State, error) {
	s := &State{
		ix:        ix,
		cow:       new(cowToken),
		jobs:      btree.NewG(btreeDegree, lessJob),
		free:      make([]*btree.BTreeG[freeKey], len(ix.types)),
		freeTotal: make([]int, len(ix.types)),
		usedTotal: make([]int, len(ix.types)),
		badTotal:  make([]int, len(ix.types)),
		partial:   make([]int, len(ix.types)),
		idle:      make([]int, len(ix.types)),
	}
	for t := range s.free {
		s.free[t] = btree.NewG(btreeDegree, lessFree)
	}
	s.nodes = newUsageTrie(len(ix.nodes), s.cow)
	// The nodes' usage in three allocations rather than three per node
	// (a node copied on write gets its own).
	nmask, nowner := 0, 0
	for ni := range ix.nodes {
		nmask += 2 * len(ix.nodes[ni].slots)
		nowner += int(ix.nodes[ni].ndev)
	}
	uses, masks, owners := make([]nodeUse, len(ix.nodes)), make([]uint64, nmask), make([]string, nowner)
	for ni := range ix.nodes {
		info := &ix.nodes[ni]
		ns, nd := len(info.slots), int(info.ndev)
		u := &uses[ni]
		*u = nodeUse{cow: s.cow, owner: owners[:nd:nd], used: masks[:ns:ns], bad: masks[ns : 2*ns : 2*ns]}
		masks, owners = masks[2*ns:], owners[nd:]
		for si := range info.slots {
			sl := &info.slots[si]
			for b, g := range sl.devs {
				if !ix.healthy[g] {
					u.bad[si] |= 1 << b
				}
			}
		}
		s.nodes.set(int32(ni), u, s.cow)
	}
	// Record the current assignments (the free index does not exist yet),
	// then build the free index once.
	err := s.recordCurrent(current, func(a *Assignment, devs []int32) {
		for _, g := range devs {
			d := &ix.devs[g]
			u := s.nodes.get(d.node)
			u.owner[ix.nodes[d.node].slots[d.slot].off+int32(d.bit)] = a.Job
			u.used[d.slot] |= 1 << d.bit
		}
		j := jobUse{job: a.Job, devs: devs, nodes: countNodes(ix, devs)}
		if j.nodes > 1 {
			forNodes(ix, devs, func(n int32) {
				u := s.nodes.get(n)
				u.dist = append(u.dist, a.Job)
			})
		}
		s.jobs.ReplaceOrInsert(j)
	})
	if err != nil {
		return nil, err
	}
	for ni := range ix.nodes {
		u := s.nodes.get(int32(ni))
		for si := range ix.nodes[ni].slots {
			sl := &ix.nodes[ni].slots[si]
			t := sl.typ
			used, bad := u.used[si]&sl.offer, u.bad[si]&sl.offer
			free := sl.offer &^ used &^ bad
			nf := bits.OnesCount64(free)
			if nf > 0 {
				s.free[t].ReplaceOrInsert(freeKey{int32(nf), int32(ni)})
			}
			s.freeTotal[t] += nf
			s.usedTotal[t] += bits.OnesCount64(used)
			s.badTotal[t] += bits.OnesCount64(bad)
			s.partial[t] += b2i(used != 0 && free != 0)
			s.idle[t] += b2i(used == 0 && free != 0)
		}
	}
	return s, nil
}

// fromEmpty is newState(ix, current) built from a clone of ix's State of
// no job: only the nodes the current assignments touch are copied and
// re-indexed.
func (ix *shape) fromEmpty(current []Assignment) (*State, error) {
	ix.emptyOnce.Do(func() { ix.empty, _ = newState(ix, nil) }) // no assignment: no error
	ix.emptyMu.Lock()
	s := ix.empty.Clone()
	ix.emptyMu.Unlock()
	err := s.recordCurrent(current, func(a *Assignment, devs []int32) {
		j := jobUse{job: a.Job, devs: devs, nodes: countNodes(ix, devs)}
		s.jobs.ReplaceOrInsert(j)
		s.applyJob(jobUse{}, j, devs, nil)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// recordCurrent checks the current assignments in job order (so that the
// jobs tree grows at its right edge and the per-node distributed lists
// come out sorted) and calls record with each job's devices (sorted
// device numbers, at least one) once they are known to be free and
// assignable whole. Current assignments may hold unhealthy devices.
func (s *State) recordCurrent(current []Assignment, record func(a *Assignment, devs []int32)) error {
	ix := s.ix
	order := make([]int, len(current))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(current[a].Job, current[b].Job) })
	for k, i := range order {
		a := &current[i]
		if a.Job == "" {
			return fmt.Errorf("%w: current[%d].job is empty", ErrInvalid, i)
		}
		if k > 0 && current[order[k-1]].Job == a.Job {
			return fmt.Errorf("%w: current[%d].job %q is repeated", ErrInvalid, i, a.Job)
		}
		devs, err := s.resolve(a.Devices, "current", i)
		if err != nil {
			return err
		}
		if len(devs) == 0 {
			continue
		}
		for _, g := range devs {
			d := &ix.devs[g]
			sl := &ix.nodes[d.node].slots[d.slot]
			if o := s.nodes.get(d.node).owner[sl.off+int32(d.bit)]; o != "" {
				return fmt.Errorf("current[%d]: %w: device %q is held by job %q", i, ErrConflict, d.id, o)
			}
			if sl.offer&(1<<d.bit) == 0 {
				return fmt.Errorf("current[%d]: %w: device %q is a MIG-enabled parent and cannot be assigned whole", i, ErrInvalid, d.id)
			}
		}
		record(a, devs)
	}
	return nil
}

// usable reports whether s was built by NewState (or cloned from one).
func (s *State) usable() bool { return s != nil && s.ix != nil }

var errNoState = fmt.Errorf("%w: state not built by NewState", ErrInvalid)

// Affected returns the jobs holding any of the devices, sorted, without
// changing s (Fault also marks the devices unhealthy). Unknown IDs are an
// error wrapping ErrUnknownDevice.
func (s *State) Affected(deviceIDs []string) ([]string, error) {
	if !s.usable() {
		return nil, errNoState
	}
	var jobs []string
	for i, id := range deviceIDs {
		g, ok := s.ix.devByID[id]
		if !ok {
			return nil, fmt.Errorf("%w: devices[%d] %q", ErrUnknownDevice, i, id)
		}
		d := &s.ix.devs[g]
		if j := s.node(d.node).owner[s.ix.nodes[d.node].slots[d.slot].off+int32(d.bit)]; j != "" {
			jobs = append(jobs, j)
		}
	}
	slices.Sort(jobs)
	return slices.Compact(jobs), nil
}

// Clone returns an independent copy of s in O(1) (in the cluster's size;
// it copies a few counters per device type): the free-capacity btrees and
// the jobs btree are cloned copy-on-write (btree.BTreeG.Clone), the
// per-node usage lives in a persistent trie whose root is shared, and each
// tree node and node usage is copied the first time either State writes
// to it. Clone is a write on s (see State).
func (s *State) Clone() *State {
	if !s.usable() {
		return &State{}
	}
	c := &State{
		ix:        s.ix,
		cow:       new(cowToken),
		nodes:     s.nodes,
		jobs:      s.jobs.Clone(),
		free:      make([]*btree.BTreeG[freeKey], len(s.free)),
		freeTotal: slices.Clone(s.freeTotal),
		usedTotal: slices.Clone(s.usedTotal),
		badTotal:  slices.Clone(s.badTotal),
		partial:   slices.Clone(s.partial),
		idle:      slices.Clone(s.idle),
	}
	for t, tr := range s.free {
		c.free[t] = tr.Clone()
	}
	// Both now share every nodeUse: neither owns one any more.
	s.cow = new(cowToken)
	return c
}

// Types returns the device types of the cluster, sorted.
func (s *State) Types() []accel.TypeKey {
	if !s.usable() {
		return nil
	}
	return slices.Clone(s.ix.types)
}

// Free returns the number of free healthy devices of type t (0 for a type
// the cluster does not have).
func (s *State) Free(t accel.TypeKey) int {
	if !s.usable() {
		return 0
	}
	tn, ok := s.ix.typeNum[t]
	if !ok {
		return 0
	}
	return s.freeTotal[tn]
}

// Capacity returns the number of devices of type t that may be offered,
// healthy or not.
func (s *State) Capacity(t accel.TypeKey) int {
	if !s.usable() {
		return 0
	}
	tn, ok := s.ix.typeNum[t]
	if !ok {
		return 0
	}
	return s.ix.capTotal[tn]
}

// Owner returns the job holding the device, if any.
func (s *State) Owner(deviceID string) (string, bool) {
	if !s.usable() {
		return "", false
	}
	g, ok := s.ix.devByID[deviceID]
	if !ok {
		return "", false
	}
	d := &s.ix.devs[g]
	u := s.node(d.node)
	sl := &s.ix.nodes[d.node].slots[d.slot]
	j := u.owner[sl.off+int32(d.bit)]
	return j, j != ""
}

// Healthy reports whether the device exists and is healthy in s.
func (s *State) Healthy(deviceID string) bool {
	if !s.usable() {
		return false
	}
	g, ok := s.ix.devByID[deviceID]
	if !ok {
		return false
	}
	d := &s.ix.devs[g]
	return s.node(d.node).bad[d.slot]&(1<<d.bit) == 0
}

// Assignment returns the devices the job holds, sorted by node name then
// device index.
func (s *State) Assignment(job string) (Assignment, bool) {
	if !s.usable() {
		return Assignment{}, false
	}
	j, ok := s.jobs.Get(jobUse{job: job})
	if !ok {
		return Assignment{}, false
	}
	return Assignment{Job: job, Devices: s.ids(j.devs)}, true
}

// Assignments returns every job's devices, sorted by job.
func (s *State) Assignments() []Assignment {
	if !s.usable() {
		return nil
	}
	out := make([]Assignment, 0, s.jobs.Len())
	s.jobs.Ascend(func(j jobUse) bool {
		out = append(out, Assignment{Job: j.job, Devices: s.ids(j.devs)})
		return true
	})
	return out
}

// TypeOf returns the device type of an assignment's devices, and false when
// they are unknown, empty or of several types.
func (s *State) TypeOf(a Assignment) (accel.TypeKey, bool) {
	if !s.usable() {
		return "", false
	}
	t := int32(-1)
	for _, id := range a.Devices {
		g, ok := s.ix.devByID[id]
		if !ok {
			return "", false
		}
		d := &s.ix.devs[g]
		dt := d.typ
		if t >= 0 && dt != t {
			return "", false
		}
		t = dt
	}
	if t < 0 {
		return "", false
	}
	return s.ix.types[t], true
}

// Assign gives the devices to the job, adding to any it already holds.
// Every device must exist, be healthy and be free: otherwise nothing
// changes and the error wraps ErrInvalid, ErrUnknownDevice, ErrUnhealthy or
// ErrConflict.
func (s *State) Assign(a Assignment) error {
	if !s.usable() {
		return errNoState
	}
	if a.Job == "" {
		return fmt.Errorf("%w: assignment job is empty", ErrInvalid)
	}
	devs, err := s.resolve(a.Devices, "assignment", -1)
	if err != nil || len(devs) == 0 {
		return err
	}
	return s.assign(a.Job, devs)
}

// Release frees every device the job holds and reports whether it held any.
func (s *State) Release(job string) bool {
	if !s.usable() {
		return false
	}
	j, ok := s.jobs.Delete(jobUse{job: job})
	if !ok {
		return false
	}
	s.applyJob(j, jobUse{job: job}, nil, j.devs)
	return true
}

// ReleaseDevices frees some of the job's devices. Every device must be held
// by the job; otherwise nothing changes and the error wraps
// ErrUnknownDevice or ErrConflict.
func (s *State) ReleaseDevices(job string, deviceIDs []string) error {
	if !s.usable() {
		return errNoState
	}
	devs, err := s.resolve(deviceIDs, "release", -1)
	if err != nil {
		return err
	}
	j, ok := s.jobs.Get(jobUse{job: job})
	for _, g := range devs {
		if !ok || !slices.Contains(j.devs, g) {
			return fmt.Errorf("%w: device %q is not held by job %q", ErrConflict, s.ix.devs[g].id, job)
		}
	}
	if ok {
		s.releaseDevs(j, devs)
	}
	return nil
}

// Fault marks the devices unhealthy, so they are never offered again, and
// returns the jobs holding any of them, sorted. The jobs keep the devices
// until they are released or re-placed (a Round moves them). Unknown IDs
// are an error wrapping ErrUnknownDevice, and then nothing changes.
func (s *State) Fault(deviceIDs []string) ([]string, error) {
	return s.setHealth(deviceIDs, false)
}

// Recover marks the devices healthy again.
func (s *State) Recover(deviceIDs []string) error {
	_, err := s.setHealth(deviceIDs, true)
	return err
}

// ApplyHealth applies one accel health event: a critical Xid or a lost
// device faults it, a recovery marks it healthy. It returns the jobs the
// event touches.
//
// An event of an unknown Kind (the zero value, or beyond HealthRecovered)
// fails with ErrInvalid and changes nothing.
func (s *State) ApplyHealth(ev accel.HealthEvent) ([]string, error) {
	if ev.Kind < accel.HealthXid || ev.Kind > accel.HealthRecovered {
		return nil, fmt.Errorf("%w: health event for %q has unknown kind %v", ErrInvalid, ev.Device, ev.Kind)
	}
	switch {
	case ev.Kind == accel.HealthRecovered:
		return nil, s.Recover([]string{ev.Device})
	case ev.Kind == accel.HealthLost || ev.Critical:
		return s.Fault([]string{ev.Device})
	}
	return nil, nil
}

func (s *State) setHealth(ids []string, healthy bool) ([]string, error) {
	if !s.usable() {
		return nil, errNoState
	}
	devs := make([]int32, 0, len(ids))
	for i, id := range ids {
		g, ok := s.ix.devByID[id]
		if !ok {
			return nil, fmt.Errorf("%w: devices[%d] %q", ErrUnknownDevice, i, id)
		}
		devs = append(devs, g)
	}
	var jobs []string
	for _, g := range devs {
		d := &s.ix.devs[g]
		u := s.mutNode(d.node)
		sl := &s.ix.nodes[d.node].slots[d.slot]
		oldUsed, oldBad := u.used[d.slot], u.bad[d.slot]
		if healthy {
			u.bad[d.slot] &^= 1 << d.bit
		} else {
			u.bad[d.slot] |= 1 << d.bit
			if j := u.owner[sl.off+int32(d.bit)]; j != "" {
				jobs = append(jobs, j)
			}
		}
		s.account(d.node, sl, oldUsed, oldBad, u.used[d.slot], u.bad[d.slot])
	}
	slices.Sort(jobs)
	return slices.Compact(jobs), nil
}

// resolve maps device IDs to device numbers, rejecting unknown and
// repeated IDs.
func (s *State) resolve(ids []string, what string, at int) ([]int32, error) {
	where := func() string {
		if at >= 0 {
			return fmt.Sprintf("%s[%d]", what, at)
		}
		return what
	}
	devs := make([]int32, 0, len(ids))
	for i, id := range ids {
		g, ok := s.ix.devByID[id]
		if !ok {
			return nil, fmt.Errorf("%w: %s devices[%d] %q", ErrUnknownDevice, where(), i, id)
		}
		devs = append(devs, g)
	}
	slices.Sort(devs)
	for i := 1; i < len(devs); i++ {
		if devs[i] == devs[i-1] {
			return nil, fmt.Errorf("%w: %s repeats device %q", ErrConflict, where(), s.ix.devs[devs[i]].id)
		}
	}
	return devs, nil
}

// ids returns device IDs sorted by node name then device index, the order
// of the device numbers.
func (s *State) ids(devs []int32) []string {
	buf := make([]string, 0, len(devs))
	return s.appendIDs(&buf, devs)
}

// appendIDs is ids storing the IDs at the end of *buf, capped there (an
// append to the result copies), so that one array holds many lists.
func (s *State) appendIDs(buf *[]string, devs []int32) []string {
	if !slices.IsSorted(devs) {
		devs = slices.Clone(devs)
		slices.Sort(devs)
	}
	n := len(*buf)
	for _, g := range devs {
		*buf = append(*buf, s.ix.devs[g].id)
	}
	return (*buf)[n:len(*buf):len(*buf)]
}

func (s *State) node(n int32) *nodeUse {
	return s.nodes.get(n)
}

// mutNode returns node n's usage, copied first if s does not own it.
func (s *State) mutNode(n int32) *nodeUse {
	r := s.nodes.get(n)
	if r.cow == s.cow {
		return r
	}
	ns := len(r.used)
	masks := make([]uint64, 2*ns)
	copy(masks, r.used)
	copy(masks[ns:], r.bad)
	u := &nodeUse{
		cow:   s.cow,
		owner: slices.Clone(r.owner),
		used:  masks[:ns:ns],
		bad:   masks[ns:],
		dist:  slices.Clone(r.dist),
	}
	s.nodes.set(n, u, s.cow)
	return u
}

// account updates the free index and the counters of slot sl on node n
// after its used and bad masks changed.
func (s *State) account(n int32, sl *slotInfo, oldUsed, oldBad, used, bad uint64) {
	t := sl.typ
	oldFree := sl.offer &^ oldUsed &^ oldBad
	free := sl.offer &^ used &^ bad
	of, nf := int32(bits.OnesCount64(oldFree)), int32(bits.OnesCount64(free))
	if of != nf {
		if of > 0 {
			s.free[t].Delete(freeKey{of, n})
		}
		if nf > 0 {
			s.free[t].ReplaceOrInsert(freeKey{nf, n})
		}
	}
	s.freeTotal[t] += int(nf - of)
	s.usedTotal[t] += bits.OnesCount64(used&sl.offer) - bits.OnesCount64(oldUsed&sl.offer)
	s.badTotal[t] += bits.OnesCount64(bad&sl.offer) - bits.OnesCount64(oldBad&sl.offer)
	s.partial[t] += b2i(used&sl.offer != 0 && free != 0) - b2i(oldUsed&sl.offer != 0 && oldFree != 0)
	s.idle[t] += b2i(used&sl.offer == 0 && free != 0) - b2i(oldUsed&sl.offer == 0 && oldFree != 0)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// assign adds devs (sorted, healthy, free device numbers) to the job.
func (s *State) assign(job string, devs []int32) error {
	var u *nodeUse
	last := int32(-1)
	for _, g := range devs {
		d := &s.ix.devs[g]
		if d.node != last {
			u, last = s.node(d.node), d.node
		}
		sl := &s.ix.nodes[d.node].slots[d.slot]
		if o := u.owner[sl.off+int32(d.bit)]; o != "" {
			return fmt.Errorf("%w: device %q is held by job %q", ErrConflict, d.id, o)
		}
		if sl.offer&(1<<d.bit) == 0 {
			return fmt.Errorf("%w: device %q is a MIG-enabled parent and cannot be assigned whole", ErrInvalid, d.id)
		}
		if u.bad[d.slot]&(1<<d.bit) != 0 {
			return fmt.Errorf("%w: device %q", ErrUnhealthy, d.id)
		}
	}
	s.addDevs(job, devs)
	return nil
}

// addDevs gives free devices (sorted, owned by the callee from now on) to
// the job: one tree write for a job that held none.
func (s *State) addDevs(job string, devs []int32) {
	nw := jobUse{job: job, devs: devs, nodes: countNodes(s.ix, devs)}
	old, replaced := s.jobs.ReplaceOrInsert(nw)
	if replaced {
		all := make([]int32, 0, len(old.devs)+len(devs))
		all = append(append(all, old.devs...), devs...)
		slices.Sort(all)
		nw = jobUse{job: job, devs: all, nodes: countNodes(s.ix, all)}
		s.jobs.ReplaceOrInsert(nw)
	}
	s.applyJob(old, nw, devs, nil)
}

// releaseDevs frees devs (a subset of j.devs).
func (s *State) releaseDevs(j jobUse, devs []int32) {
	rest := make([]int32, 0, len(j.devs))
	for _, g := range j.devs {
		if !slices.Contains(devs, g) {
			rest = append(rest, g)
		}
	}
	nw := jobUse{job: j.job, devs: rest, nodes: countNodes(s.ix, rest)}
	if len(rest) == 0 {
		s.jobs.Delete(j)
	} else {
		s.jobs.ReplaceOrInsert(nw)
	}
	s.applyJob(j, nw, nil, devs)
}

// applyJob follows a change of the job's record from old to nw (the
// caller updates the jobs tree): it marks added devices as held and removed
// ones as free, and keeps the per-node distributed-job lists.
func (s *State) applyJob(old, nw jobUse, add, remove []int32) {
	if old.nodes > 1 {
		forNodes(s.ix, old.devs, func(n int32) {
			u := s.mutNode(n)
			if i, ok := slices.BinarySearch(u.dist, old.job); ok {
				u.dist = slices.Delete(u.dist, i, i+1)
			}
		})
	}
	set := func(devs []int32, owner string) {
		// Devices are sorted, hence grouped by node and slot: account once
		// per group.
		for i := 0; i < len(devs); {
			d := &s.ix.devs[devs[i]]
			n, si := d.node, d.slot
			u := s.mutNode(n)
			sl := &s.ix.nodes[n].slots[si]
			oldUsed := u.used[si]
			for ; i < len(devs); i++ {
				d = &s.ix.devs[devs[i]]
				if d.node != n || d.slot != si {
					break
				}
				u.owner[sl.off+int32(d.bit)] = owner
				if owner == "" {
					u.used[si] &^= 1 << d.bit
				} else {
					u.used[si] |= 1 << d.bit
				}
			}
			s.account(n, sl, oldUsed, u.bad[si], u.used[si], u.bad[si])
		}
	}
	set(remove, "")
	set(add, nw.job)
	if nw.nodes > 1 {
		forNodes(s.ix, nw.devs, func(n int32) {
			u := s.mutNode(n)
			if i, ok := slices.BinarySearch(u.dist, nw.job); !ok {
				u.dist = slices.Insert(u.dist, i, nw.job)
			}
		})
	}
}

// forNodes calls f once per distinct node of devs (sorted device numbers
// are grouped by node).
func forNodes(ix *shape, devs []int32, f func(n int32)) {
	last := int32(-1)
	for _, g := range devs {
		if n := ix.devs[g].node; n != last {
			f(n)
			last = n
		}
	}
}

func countNodes(ix *shape, devs []int32) int32 {
	var k int32
	forNodes(ix, devs, func(int32) { k++ })
	return k
}

// descendFree visits the nodes of type t with at least minFree free
// devices, most free first and, among equals, by node name. Free counts
// are small (at most 64), so this is one O(log n) seek per count.
func (s *State) descendFree(t int32, minFree int, visit func(freeKey) bool) {
	m, ok := s.free[t].Max()
	if !ok {
		return
	}
	cont := true
	for f := m.free; f >= int32(max(minFree, 1)) && cont; f-- {
		s.free[t].AscendRange(freeKey{f, -1}, freeKey{f + 1, -1}, func(k freeKey) bool {
			cont = visit(k)
			return cont
		})
	}
}

// Fragmentation describes the free capacity of one device type.
type Fragmentation struct {
	Type accel.TypeKey `json:"type"`
	// Capacity counts the devices that may be offered, healthy or not;
	// Free, Used and Unhealthy split them (a used device may be unhealthy).
	Capacity  int `json:"capacity"`
	Free      int `json:"free"`
	Used      int `json:"used"`
	Unhealthy int `json:"unhealthy"`
	// LargestNodeGang is the largest gang that fits on one node now.
	LargestNodeGang int `json:"largest_node_gang"`
	// LargestGang is the largest gang that fits on any number of nodes
	// while keeping at most one distributed job per node.
	LargestGang int `json:"largest_gang"`
	// PartlyUsedNodes have both used and free devices of the type;
	// IdleNodes have free devices and none used.
	PartlyUsedNodes int `json:"partly_used_nodes"`
	IdleNodes       int `json:"idle_nodes"`
}

// Fragmentation returns the figures for every type, sorted by type. It
// scans the free nodes of each type once.
func (s *State) Fragmentation() []Fragmentation {
	if !s.usable() {
		return nil
	}
	out := make([]Fragmentation, len(s.ix.types))
	for t, key := range s.ix.types {
		f := Fragmentation{
			Type: key, Capacity: s.ix.capTotal[t], Free: s.freeTotal[t], Used: s.usedTotal[t],
			Unhealthy: s.badTotal[t], PartlyUsedNodes: s.partial[t], IdleNodes: s.idle[t],
		}
		if m, ok := s.free[t].Max(); ok {
			f.LargestNodeGang = int(m.free)
		}
		shared := 0
		s.free[t].Ascend(func(k freeKey) bool {
			if len(s.node(k.node).dist) == 0 {
				shared += int(k.free)
			}
			return true
		})
		f.LargestGang = max(f.LargestNodeGang, shared)
		out[t] = f
	}
	return out
}

// sameDevicesScan is the longest list SameDevices and subsetIDs compare
// by scanning rather than through a set (which allocates).
const sameDevicesScan = 32

// SameDevices reports whether a and b list the same devices, in any order
// (each device once).
func SameDevices(a, b []string) bool { return len(a) == len(b) && subsetIDs(a, b) }
