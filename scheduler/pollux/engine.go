package pollux

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/placement"
)

// epsilon is added to every speedup inside the power mean, as in Pollux,
// so that a job without devices has a finite (and very low) utility.
const epsilon = 1e-3

// nearNodes is how many node counts above the packed one a job's memo
// keeps by count (Search.norm); the rest go to a map.
const nearNodes = 3

// minResumeFactor floors the restart factor of a job that is not running,
// so that it still starts on devices nobody else wants.
const minResumeFactor = 0.01

// ErrInvalid reports a malformed Problem (a nil cluster or index, a job
// without a Speedup, bad objective settings, bounds out of order).
var ErrInvalid = errors.New("pollux: invalid problem")

// Problem is one round of the allocation problem: a cluster, its jobs and
// the objective's settings. The caller (scheduler.Pollux) has validated
// the jobs against the cluster; New checks only what the engine relies on.
type Problem struct {
	// Cluster is the snapshot, in the caller's node order (the engine's
	// bins, one per node and device type, follow it); Index is the same
	// cluster indexed (types, device lookups).
	Cluster *accel.Cluster
	Index   *placement.Index
	// Jobs are every job of the round, sorted by ID.
	Jobs []Job
	// Exponent is the power mean's p (≤ 1, not 0); Geometric uses p = 0
	// instead.
	Exponent  float64
	Geometric bool
	// RestartDelay is δ in Pollux's restart factor
	// max(age − R·δ, 0)/(age + δ).
	RestartDelay time.Duration
	// AllowInterference lifts the rule, Pollux's, that a node hosts at
	// most one distributed (multi-node) job (the polarity of
	// scheduler.Config.AllowInterference).
	AllowInterference bool
	// Caps, when set, bounds what groups of jobs (Job.Group) hold
	// together: Caps[g][t] is the most devices of type t (a position in
	// Index.Types()) the jobs of group g may hold at once, negative = no
	// bound; nil = no groups. No move of the search grows a group past a
	// cap, so the objective is optimised within the caps; the warm start
	// sheds what a group holds beyond a cap (elastic jobs first, one
	// device at a time from the job whose utility falls least, then whole
	// jobs, least utility per device first). Pinned jobs keep their
	// devices regardless (a group's pinned devices may exceed its cap;
	// then nothing else of the group runs on that type).
	Caps [][]int
	// Memo, if set, carries speedup evaluations from this search to the
	// next one built with it (the next round): see Memo.
	Memo *Memo
	// Floors (nil, or shaped as Caps) are the groups' guarantees: the
	// exchange search takes no device from a job of group g for a job of
	// another group when that leaves g holding fewer than Floors[g][t]
	// devices of type t, and the polish is dropped if it leaves a group
	// below min(its floor, what it held before the polish).
	Floors [][]int
	// Parallel searches the starts on two goroutines when more than one
	// processor is available (GOMAXPROCS): the same solutions in less
	// wall time on large problems; the two share the jobs and the
	// speedups they evaluate. Every Job.Speedup must then be safe for
	// concurrent use. The goroutine ends before Solve returns; without
	// Parallel, Solve starts none.
	Parallel bool
	// GangSlowdown, if set, is how many times longer the steps of job i
	// (a position in Jobs) take on the given devices than on nominal
	// ones (devices of one type differ, placement.Speeds): Realized
	// divides the job's speedup on an assignment by it. nil = every
	// device nominal. It must return a finite value > 0.
	GangSlowdown func(i int, devices []string) float64
}

// Job is one job as the engine sees it.
type Job struct {
	// ID names the job.
	ID string
	// Weight (> 0) scales its term of the power mean.
	Weight float64
	// Types are the device types it may use, as positions in
	// Index.Types(), sorted.
	Types []int
	// Min and Max bound its device count (Min ≥ 1, Max ≥ Min); Rigid jobs
	// run on exactly Min.
	Min, Max int
	Rigid    bool
	// Pinned jobs keep exactly their current devices.
	Pinned bool
	// Current lists the devices it holds now, all of CurrentType (−1 when
	// it holds none); CurrentNodes is how many nodes they span.
	Current      []string
	CurrentType  int
	CurrentNodes int
	// Age is the time since it was submitted; Restarts how often it was
	// re-allocated so far.
	Age      time.Duration
	Restarts int
	// Speedup returns its speedup on count devices of type t (a position
	// in Index.Types()) spread over nodes nodes: finite, ≥ 0. With
	// Problem.Parallel, Solve calls it from two goroutines.
	Speedup func(t, nodes, count int) (float64, error)
	// Reuse, if not nil, stands for the Speedup function across searches
	// that share a Problem.Memo: a comparable value (New rejects others),
	// equal in two rounds only when Speedup gives the same results in both
	// (for example the immutable curve it reads). nil: never reused.
	Reuse any
	// NodeBound, if positive, promises that Speedup gives the same value
	// on every node count from NodeBound on (as goodput.NodeBounder
	// does): the search then asks it about each (type, count) on at most
	// NodeBound node counts. 0 promises nothing.
	NodeBound int
	// Group is the job's position in Problem.Caps (ignored when Caps is
	// nil).
	Group int
}

// gjob is one job as the search sees it.
type gjob struct {
	*Job
	w        float64
	allowed  []int
	min, max int
	rigid    bool
	pinned   bool
	t0, c0   int // current type and count (t0 = −1: not running)
	penal    bool
	rf       float64
	base     float64
	speeds   *speeds // its raw speedups, shared with the round's other searcher and kept in Problem.Memo
	// packed is speeds.packed, read here without going through speeds
	// (most lookups are there).
	packed []atomic.Uint64
}

// setSpeeds makes sp job j's memo.
func (j *gjob) setSpeeds(sp *speeds) { j.speeds, j.packed = sp, sp.packed }

// Search evaluates and searches allocations for one Problem. It is built
// per round and used by one goroutine.
type Search struct {
	prob         *Problem
	types        []accel.TypeKey
	cap          []int // usable devices per type
	perNode      []int // most usable devices of a type on one node
	total        int
	byID         map[string]int
	p            float64
	geo          bool
	interference bool
	jobs         []gjob
	look         []int // per type: lookahead window of a move
	lay          *layout
	fast         bool     // large instance: probe growth in place only
	cur          [][]slot // per job: the usable devices it holds now, by bin
	curOK        []bool   // the job runs on an allowed type with all its devices usable
	err          error    // first bad speedup seen
	// empty is the state with no job placed (see emptyState); never
	// modified once built.
	empty *state
	// mark and gen: pack's scratch marks of the bins a gang uses (a bin
	// is marked when mark[bin] == gen).
	mark []int
	gen  int
	// cursor is pack's scratch position per bucket of a type; packBuf
	// its scratch output.
	cursor  []int
	packBuf []slot
	// availBuf and countBuf are growths' and countNew's scratch counts
	// of bins per free count (binsByFree).
	availBuf, countBuf []int
	// wideSlots: jobs on more bins get aggregates in the state (see
	// wideIndex); tests raise it to compare with the plain bookkeeping.
	wideSlots int
	// plainGrow makes apply grow a job by releasing and assigning it
	// (never growInPlace); tests set it to compare the two, and read
	// inPlace, how many growths growInPlace made.
	plainGrow bool
	inPlace   int
	// slotBuf is what is left of newSlots's chunk.
	slotBuf []slot
	// undoBuf, skipBuf and takeBuf are tryTransfer's scratch lists.
	undoBuf          []undo
	skipBuf, takeBuf []shrink
	donors           donorVisit
	// eagerTakeOut makes tryTransfer take the donors out of their heap
	// at every donor moving to another type, not only where movesSurely
	// cannot tell that the move fits; tests set it to compare the two,
	// and read keptIn, how many such donors were left in place.
	eagerTakeOut bool
	keptIn       int
	// noPolishBound makes polish replay every try; tests set it to
	// compare with the bounded polish.
	noPolishBound bool
	// fullReplace makes probe re-place a job even when replaceFails
	// tells the outcome; tests set it to compare with the shortcut, and
	// read shortcuts, how many probes replaceFails answered.
	fullReplace bool
	shortcuts   int
	// utilMemo holds jobUtil's last answer per job, utilCache utilAt's;
	// nil until first used.
	utilMemo  []utilMemo
	utilCache []utilEntry
	// onType holds bestOnType's last answer per job and allowed type,
	// job i's from onTypeAt[i]; nil until first used.
	onType   []onTypeMemo
	onTypeAt []int
	// caps and floors are Problem.Caps and Floors flattened
	// (group·types + type); nil = none.
	caps, floors []int
}

// New builds the search for p.
func New(p Problem) (*Search, error) {
	switch {
	case p.Cluster == nil || p.Index == nil:
		return nil, fmt.Errorf("%w: nil Cluster or Index", ErrInvalid)
	case !p.Geometric && (p.Exponent == 0 || p.Exponent > 1 || math.IsNaN(p.Exponent) || math.IsInf(p.Exponent, 0)):
		return nil, fmt.Errorf("%w: exponent %v: want finite, non-zero and at most 1", ErrInvalid, p.Exponent)
	case p.RestartDelay < 0:
		return nil, fmt.Errorf("%w: negative restart delay %v", ErrInvalid, p.RestartDelay)
	}
	e := &Search{prob: &p, types: p.Index.Types(), p: p.Exponent, geo: p.Geometric, interference: !p.AllowInterference,
		fast: len(p.Jobs) > coldStartJobs, byID: make(map[string]int, len(p.Jobs)), wideSlots: wideSlots}
	nt := len(e.types)
	e.cap, e.perNode, e.look = make([]int, nt), make([]int, nt), make([]int, nt)
	for t, tk := range e.types {
		e.cap[t], e.perNode[t], _ = p.Index.Usable(tk)
		e.total += e.cap[t]
		e.look[t] = max(e.perNode[t], 8)
	}
	if p.Caps != nil {
		e.caps = make([]int, 0, len(p.Caps)*nt)
		for g, row := range p.Caps {
			if len(row) != nt {
				return nil, fmt.Errorf("%w: caps[%d] has %d types, the cluster %d", ErrInvalid, g, len(row), nt)
			}
			e.caps = append(e.caps, row...)
		}
	}
	if p.Floors != nil {
		if len(p.Floors) != len(p.Caps) {
			return nil, fmt.Errorf("%w: %d floors for %d groups", ErrInvalid, len(p.Floors), len(p.Caps))
		}
		e.floors = make([]int, 0, len(p.Floors)*nt)
		for g, row := range p.Floors {
			if len(row) != nt {
				return nil, fmt.Errorf("%w: floors[%d] has %d types, the cluster %d", ErrInvalid, g, len(row), nt)
			}
			e.floors = append(e.floors, row...)
		}
	}
	e.lay = newLayout(p.Cluster, p.Index)
	e.jobs = make([]gjob, len(p.Jobs))
	fair := max(1, e.total/max(len(p.Jobs), 1))
	for i := range p.Jobs {
		pj := &p.Jobs[i]
		if pj.Speedup == nil || pj.Min < 1 || pj.Max < pj.Min || !(pj.Weight > 0) || pj.CurrentType < -1 || pj.CurrentType >= nt ||
			!slices.IsSorted(pj.Types) || slices.ContainsFunc(pj.Types, func(t int) bool { return t < 0 || t >= nt }) {
			return nil, fmt.Errorf("%w: job %q: no speedup, bounds [%d, %d], weight %v, types %v or current type %d", ErrInvalid, pj.ID, pj.Min, pj.Max, pj.Weight, pj.Types, pj.CurrentType)
		}
		if pj.NodeBound < 0 {
			return nil, fmt.Errorf("%w: job %q: negative node bound %d", ErrInvalid, pj.ID, pj.NodeBound)
		}
		if pj.Reuse != nil && !reflect.ValueOf(pj.Reuse).Comparable() {
			return nil, fmt.Errorf("%w: job %q: Reuse key of type %T is not comparable", ErrInvalid, pj.ID, pj.Reuse)
		}
		if p.Caps != nil && (pj.Group < 0 || pj.Group >= len(p.Caps)) {
			return nil, fmt.Errorf("%w: job %q: group %d, there are %d", ErrInvalid, pj.ID, pj.Group, len(p.Caps))
		}
		if i > 0 && p.Jobs[i-1].ID >= pj.ID { // strictly sorted: no duplicates
			return nil, fmt.Errorf("%w: job %q: jobs must be sorted by ID, without duplicates", ErrInvalid, pj.ID)
		}
		e.byID[pj.ID] = i
		j := gjob{Job: pj, w: pj.Weight, allowed: pj.Types, min: pj.Min, max: pj.Max,
			rigid: pj.Rigid, pinned: pj.Pinned && pj.CurrentType >= 0, t0: pj.CurrentType, base: 1}
		if j.t0 >= 0 {
			j.c0 = len(pj.Current)
		}
		j.penal = j.c0 > 0 || pj.Restarts > 0
		j.rf = restartFactor(pj.Age, pj.Restarts, p.RestartDelay)
		if j.c0 == 0 {
			// A waiting job younger than R·δ would be worth nothing on
			// any allocation and could idle free devices: floor it.
			j.rf = max(j.rf, minResumeFactor)
		}
		if j.t0 >= 0 && !slices.Contains(j.allowed, j.t0) {
			j.t0, j.c0 = -1, 0 // running on a type it may no longer use
		}
		e.jobs[i] = j
	}
	var kept []*jobMemo
	if p.Memo != nil {
		kept = p.Memo.attach(e)
	}
	e.makeSpeeds(kept)
	for i := range e.jobs {
		// Fair-share baseline: the best allowed type at 1/J of the
		// cluster, through the memo, where the search finds it again
		// (norm is the raw speedup while base is 1; a bad one empties
		// the Memo and fails New).
		j := &e.jobs[i]
		f := min(max(fair, j.min), j.max)
		base := 0.0
		for _, t := range j.allowed {
			if c := min(f, e.cap[t]); c > 0 {
				base = max(base, e.norm(j, t, e.packedNodes(t, c), c))
			}
		}
		if e.err != nil {
			return nil, e.err
		}
		if base > 0 {
			j.base = base
		}
	}
	e.cur = make([][]slot, len(e.jobs))
	e.curOK = make([]bool, len(e.jobs))
	for i := range e.jobs {
		j := &e.jobs[i]
		var p []slot
		for _, id := range j.Current {
			b, ok := e.lay.devBin[id]
			if !ok {
				continue // unusable
			}
			found := false
			for k := range p {
				if p[k].bin == b {
					p[k].k++
					found = true
				}
			}
			if !found {
				p = append(p, slot{b, 1})
			}
		}
		e.cur[i] = p
		e.curOK[i] = j.t0 >= 0 && len(p) > 0 && sumSlots(p) == j.c0
	}
	return e, nil
}

// packedNodes is the consolidated node count of count devices of type t:
// ceil(count / devices per node), what a consolidating placement achieves.
func (e *Search) packedNodes(t, count int) int {
	if count <= 0 {
		return 0
	}
	d := max(e.perNode[t], 1)
	return (count + d - 1) / d
}

// restartFactor is Pollux's re-allocation factor
// max(age − R·δ, 0) / (age + δ).
func restartFactor(age time.Duration, restarts int, delta time.Duration) float64 {
	a := age.Seconds()
	d := delta.Seconds()
	if a+d <= 0 {
		return 1
	}
	return max(a-float64(restarts)*d, 0) / (a + d)
}

// norm is job j's speedup over its baseline on (t, n, c), memoised.
func (e *Search) norm(j *gjob, t, n, c int) float64 {
	if c <= 0 {
		return 0
	}
	n, d := e.memoAt(j, t, n, c)
	if v, ok := j.memoised(t, n, d, c); ok {
		return v / j.base
	}
	v, ok := e.eval(j, t, n, c)
	if !ok {
		return 0
	}
	j.speeds.put(t, n, d, c, v)
	return v / j.base
}

// memoAt is where job j's memo keeps its raw speedup on (t, n, c > 0):
// the node count it is evaluated on (n, or j.NodeBound when that is less:
// every node count from there on gives the same speedup) and d, that
// count less the packed one (under the same bound).
func (e *Search) memoAt(j *gjob, t, n, c int) (nodes, d int) {
	pk := e.packedNodes(t, c)
	if b := j.NodeBound; b > 0 {
		n, pk = min(n, b), min(pk, b)
	}
	return n, n - pk
}

// eval is job j's raw speedup on (t, n, c). A bad one is recorded in
// e.err (and empties the Memo), counts as 0 and is not memoised (ok
// false), so that each searcher of the round that asks for it sees the
// error itself.
func (e *Search) eval(j *gjob, t, n, c int) (v float64, ok bool) {
	v, err := j.Speedup(t, n, c)
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		if e.prob.Memo != nil {
			e.prob.Memo.reset()
		}
		return 0, false
	}
	return v, true
}

// value is job j's speedup over its baseline on (t, n, c), restart factor
// included when (t, c) differs from what the job runs now.
func (e *Search) value(j *gjob, t, n, c int) float64 {
	if c <= 0 {
		return 0
	}
	v := e.norm(j, t, n, c)
	if j.penal && (t != j.t0 || c != j.c0) {
		v *= j.rf
	}
	return v
}

// util is the concave increasing utility whose weighted sum the power
// mean orders the same way.
func (e *Search) util(v float64) float64 {
	switch {
	case e.geo:
		return math.Log(v + epsilon)
	case e.p == -1:
		return -1 / (v + epsilon)
	case e.p < 0:
		return -math.Pow(v+epsilon, e.p)
	}
	return math.Pow(v+epsilon, e.p)
}

// fitness is the weighted power mean of the values.
func (e *Search) fitness(vals []float64) float64 {
	var sw, s float64
	for i, v := range vals {
		w := e.jobs[i].w
		sw += w
		if e.geo {
			s += w * math.Log(v+epsilon)
		} else {
			s += w * math.Pow(v+epsilon, e.p)
		}
	}
	if sw == 0 {
		return 0
	}
	if e.geo {
		return math.Exp(s / sw)
	}
	return math.Pow(s/sw, 1/e.p)
}

// jobUtil is job i's weighted utility in s. It is a function of the
// job's type, node count and device count alone, asked again and again
// for the same allocation: the last answer per job is kept, keyed on
// exactly those.
func (e *Search) jobUtil(s *state, i int) float64 {
	if e.utilMemo == nil {
		e.utilMemo = make([]utilMemo, len(e.jobs))
	}
	m := &e.utilMemo[i]
	if k := (allocKey{s.typ[i], len(s.place[i]), s.cnt[i]}); m.key != k || !m.set {
		j := &e.jobs[i]
		*m = utilMemo{key: k, set: true, u: j.w * e.util(e.value(j, k.t, k.nodes, k.c))}
	}
	return m.u
}

// utilAt is job i's weighted utility on (t, nodes, c > 0), w·u(value):
// what jobUtil gives for that allocation. The greedy asks it for the
// counts of a sliding window (a job grows by a few devices, then asks
// again from there), so the last answers per job are kept in a small
// cache indexed by count (utilWays entries per job, one window's worth);
// once a speedup has failed, nothing is cached, so that every later ask
// evaluates it again as before.
func (e *Search) utilAt(i, t, nodes, c int) float64 {
	if e.utilCache == nil {
		e.utilCache = make([]utilEntry, len(e.jobs)*utilWays)
	}
	x := &e.utilCache[i*utilWays+c&(utilWays-1)]
	k := allocKey{t, nodes, c}
	if x.key == k && e.err == nil {
		return x.u
	}
	j := &e.jobs[i]
	u := j.w * e.util(e.value(j, t, nodes, c))
	if e.err == nil {
		*x = utilEntry{k, u}
	}
	return u
}

// utilWays is how many answers utilAt keeps per job: a power of two, a
// whole look-ahead window on nodes of up to eight devices (the window of
// larger nodes is larger and shares entries).
const utilWays = 8

// utilEntry is one of utilAt's answers (c = 0: none).
type utilEntry struct {
	key allocKey
	u   float64
}

// allocKey is one job's allocation as its utility sees it.
type allocKey struct{ t, nodes, c int }

// utilMemo is jobUtil's last answer for one job.
type utilMemo struct {
	key allocKey
	set bool
	u   float64
}

// objective is Σ w·u(value) of a state.
func (e *Search) objective(s *state) float64 {
	o := 0.0
	for i := range e.jobs {
		o += e.jobUtil(s, i)
	}
	return o
}

// maxOn is the most devices job j may hold on type t.
func (e *Search) maxOn(j *gjob, t int) int {
	return min(j.max, e.cap[t])
}

// move is a candidate change of one job to (t, c).
type move struct {
	gain  float64 // utility gain per device it must obtain
	job   int
	t, c  int
	stamp int
}

// gainOf is the utility gain per obtained device of moving job i to
// (t, c), and false when (t, c) does not fit.
func (e *Search) gainOf(s *state, i, t, c int, cur float64) (float64, bool) {
	added := c
	if s.typ[i] == t {
		added = c - s.cnt[i]
	}
	if added <= 0 {
		return 0, false
	}
	n, ok := e.probe(s, i, t, c)
	if !ok {
		return 0, false
	}
	return (e.utilAt(i, t, n, c) - cur) / float64(added), true
}

// candidates calls try for each (t, c) job i may move to by growing on
// its type (within the look-ahead window) or, unless sameType, by
// starting on or switching to another allowed type near its minimum.
// With fits it leaves out the moves that need more devices than the
// type has free (those that probe rejects first).
func (e *Search) candidates(s *state, i int, sameType, fits bool, onlyType int, try func(t, c int)) {
	j := &e.jobs[i]
	if j.pinned {
		return
	}
	if e.caps != nil {
		inner := try
		try = func(t, c int) {
			if e.capOK(s, i, t, c) {
				inner(t, c)
			}
		}
	}
	if s.cnt[i] > 0 {
		t, c := s.typ[i], s.cnt[i]
		if !j.rigid && (onlyType < 0 || onlyType == t) {
			hi := c + min(e.look[t], e.maxOn(j, t)-c) // no overflow near MaxInt
			if fits {
				hi = min(hi, c+s.free[t])
			}
			for c2 := c + 1; c2 <= hi; c2++ {
				try(t, c2)
			}
		}
		if sameType {
			return
		}
	}
	for _, t := range j.allowed {
		if t == s.typ[i] || (onlyType >= 0 && t != onlyType) {
			continue
		}
		lo, hi := e.startWindow(j, t)
		top := hi
		if fits {
			top = min(hi, s.free[t])
		}
		for c := lo; c <= top; c++ {
			try(t, c)
		}
		if j.rigid {
			continue
		}
		// Beyond the window: as many as it holds now, and every free device
		// of the type (a job moving onto idle devices).
		last := hi
		for _, c := range [2]int{s.cnt[i], min(s.free[t], e.maxOn(j, t))} {
			if c > last {
				if !fits || c <= s.free[t] {
					try(t, c)
				}
				last = c
			}
		}
	}
}

// startWindow is the counts candidates tries for job j starting on or
// switching to type t: from its minimum over the look-ahead window (only
// its minimum when rigid).
func (e *Search) startWindow(j *gjob, t int) (lo, hi int) {
	if j.rigid {
		return j.min, min(j.min, e.maxOn(j, t))
	}
	return j.min, j.min + min(e.look[t]-1, e.maxOn(j, t)-j.min) // no overflow near MaxInt
}

// bestGrow returns job i's feasible move with the largest utility gain
// per obtained device: growing on its type, or starting when it has no
// devices.
func (e *Search) bestGrow(s *state, i int) (move, bool) {
	if !e.mayGrow(s, i) {
		return move{}, false
	}
	cur := e.jobUtil(s, i)
	best, found := move{job: i}, false
	if e.growing(s, i) {
		e.growBest(s, i, cur, &best, &found)
		return best, found
	}
	e.candidates(s, i, true, true, -1, func(t, c int) {
		if g, ok := e.gainOf(s, i, t, c, cur); ok && g > 0 && (!found || g > best.gain) {
			best, found = move{gain: g, job: i, t: t, c: c}, true
		}
	})
	return best, found
}

// growBest offers job i's growths (utility now cur) to best, which
// found says holds a move: it keeps the largest gain per added device, as
// gainOf measures it, the first of equals.
func (e *Search) growBest(s *state, i int, cur float64, best *move, found *bool) {
	t, c0 := s.typ[i], s.cnt[i]
	e.growths(s, i, func(c, n int) {
		if g := (e.utilAt(i, t, n, c) - cur) / float64(c-c0); g > 0 && (!*found || g > best.gain) {
			*best, *found = move{gain: g, job: i, t: t, c: c}, true
		}
	})
}

// growing reports whether job i's moves in the greedy are growths on its
// type that growths enumerates: it runs, is elastic and not pinned, and
// no group caps apply (candidates checks them per move).
func (e *Search) growing(s *state, i int) bool {
	j := &e.jobs[i]
	return s.cnt[i] > 0 && e.caps == nil && !j.pinned && !j.rigid
}

// mayGrow reports whether job i could grow on its type, or start on an
// allowed type, as far as the free device counts tell (probe fails on
// fewer free devices than a move adds).
func (e *Search) mayGrow(s *state, i int) bool {
	if s.cnt[i] > 0 {
		return s.free[s.typ[i]] > 0
	}
	for _, t := range e.jobs[i].allowed {
		if s.free[t] >= e.jobs[i].min {
			return true
		}
	}
	return false
}

// before orders moves by gain, largest first, ties by job order.
func (a move) before(b move) bool {
	if a.gain != b.gain {
		return a.gain > b.gain
	}
	return a.job < b.job
}

// fill is the marginal-gain greedy: it repeatedly applies the feasible
// move with the largest utility gain per device until no move gains.
// Jobs only grow on their type; jobs without devices may start on any
// allowed type. Gains are re-checked when popped (other moves change the
// bins), so the heap is lazy.
func (e *Search) fill(ctx context.Context, s *state) error {
	stamp := make([]int, len(e.jobs))
	h := make(heapOf[move], 0, len(e.jobs))
	for i := range e.jobs {
		if m, ok := e.bestGrow(s, i); ok {
			h = append(h, m)
		}
	}
	h.init()
	// requeue invalidates job i's queued move and pushes its best one now.
	requeue := func(i int) {
		stamp[i]++
		if m, ok := e.bestGrow(s, i); ok {
			m.stamp = stamp[i]
			h.push(m)
		}
	}
	steps := 0
	for len(h) > 0 {
		if steps++; steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m := h.pop()
		if m.stamp != stamp[m.job] {
			continue
		}
		g, ok := e.gainOf(s, m.job, m.t, m.c, e.jobUtil(s, m.job))
		if !ok || g < m.gain*(1-1e-9)-1e-15 {
			requeue(m.job)
			continue
		}
		e.apply(s, m.job, m.t, m.c)
		requeue(m.job)
	}
	return e.err
}
