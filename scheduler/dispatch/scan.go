package dispatch

import (
	"fmt"
	"math"
	"time"
)

// ScanPolicy says which tasks are scanned for faults or malice before they
// run, in the model of Abdulazeez, Garncarek, Kowalski and Wong,
// "Lightweight Robust Framework for Workload Scheduling in Clouds" (IEEE
// EDGE 2017, arXiv 1705.02671; "the paper" below). Part of the work may be
// faulty or malicious; the host estimates, per task, the probability that
// it is (Risk.Probability). Scanning a task costs its worker Risk.ScanCost
// and catches it if it is bad: it is then rejected, never run. A bad task
// that runs unscanned costs its worker its run and then
// Config.BadRecovery (the worker is lost for that long; zero means only
// that its result is discarded).
//
// The zero value is ScanNone, under which the Dispatcher behaves exactly as
// without scanning.
type ScanPolicy uint8

const (
	// ScanNone never scans: the naive baseline that runs every task,
	// paying for each bad one. It is unstable once the arrival rate times
	// E[Work + Probability·BadRecovery] exceeds the workers' capacity.
	ScanNone ScanPolicy = iota
	// ScanRobust is the paper's robust framework: tasks go to workers by
	// an objective function over the workers' queues, and the scan
	// decision is the one that keeps that objective's drift smallest.
	// This package takes the objective to be the sum over workers of the
	// squared backlog (in worker time); a task's first-order contribution
	// to its drift is its worker's backlog times the worker time the task
	// is expected to cost, so the rule scans a task exactly when scanning
	// lowers that expected cost (see Decide), whatever the backlog. The
	// standard drift argument then bounds the queues whenever
	//
	//	arrival rate × E[min(ScanCost + (1−p)·Work, Work + p·BadRecovery)] < workers
	//
	// (p the task's Probability, expectation over tasks, workers of unit
	// speed): the stability condition. Its left side is at most both
	// baselines', so the robust policy is stable wherever either is, and
	// also at loads where neither is — the paper's claim. The paper's own
	// objective and constants may differ in detail; the rule and the
	// condition above are this package's, derived as stated, and
	// examples/dispatch checks the condition against simulated queues.
	ScanRobust
	// ScanAll scans every task: the naive baseline that catches every bad
	// task but pays the scan cost on every good one. It is unstable once
	// the arrival rate times E[ScanCost + (1−p)·Work] exceeds capacity.
	ScanAll
	numScanPolicies
)

var scanPolicyNames = [...]string{"scan-none", "robust", "scan-all"}

// String returns the policy's name ("scan-none", "robust", "scan-all").
func (p ScanPolicy) String() string {
	if p < numScanPolicies {
		return scanPolicyNames[p]
	}
	return fmt.Sprintf("ScanPolicy(%d)", uint8(p))
}

// ScanPolicies returns every scan policy in declaration order.
func ScanPolicies() []ScanPolicy { return []ScanPolicy{ScanNone, ScanRobust, ScanAll} }

// ParseScanPolicy returns the scan policy whose String is name.
func ParseScanPolicy(name string) (ScanPolicy, error) {
	for i, n := range scanPolicyNames {
		if n == name {
			return ScanPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: ScanPolicy %q (want scan-none, robust or scan-all)", ErrConfig, name)
}

// Risk is what the host knows about a task before it runs.
type Risk struct {
	// Probability is the host's estimate that the task is faulty or
	// malicious, in [0, 1].
	Probability float64
	// ScanCost is the worker time a scan of the task takes (>= 0).
	ScanCost time.Duration
	// Work is the task's expected run time (>= 0). ScanRobust weighs it:
	// a bad task that runs wastes it. Zero counts only BadRecovery.
	Work time.Duration
}

// Validate reports a Probability outside [0, 1] (or NaN), a negative
// ScanCost or a negative Work, as an error wrapping ErrRisk.
func (r Risk) Validate() error {
	if !(r.Probability >= 0 && r.Probability <= 1) {
		return fmt.Errorf("%w: Probability = %v (want 0..1)", ErrRisk, r.Probability)
	}
	if r.ScanCost < 0 {
		return fmt.Errorf("%w: ScanCost = %v (want >= 0)", ErrRisk, r.ScanCost)
	}
	if r.Work < 0 {
		return fmt.Errorf("%w: Work = %v (want >= 0)", ErrRisk, r.Work)
	}
	return nil
}

// ExpectedCost returns the worker time the task costs in expectation if it
// is scanned (ScanCost, plus Work when it is good) or not (Work, plus
// badRecovery when it is bad): the quantities in ScanRobust's stability
// condition.
func (r Risk) ExpectedCost(scan bool, badRecovery time.Duration) time.Duration {
	p := r.Probability
	if scan {
		return r.ScanCost + time.Duration(math.Round((1-p)*float64(r.Work)))
	}
	return r.Work + time.Duration(math.Round(p*float64(badRecovery)))
}

// Decide reports whether policy p scans a task with risk r when a bad task
// run unscanned costs its worker badRecovery after its run. ScanRobust
// scans exactly when the expected damage avoided, Probability × (Work +
// badRecovery), exceeds ScanCost — that is, when ExpectedCost(true) <
// ExpectedCost(false); a tie is not scanned.
func (p ScanPolicy) Decide(r Risk, badRecovery time.Duration) bool {
	switch p {
	case ScanAll:
		return true
	case ScanRobust:
		return r.Probability*(float64(r.Work)+float64(badRecovery)) > float64(r.ScanCost)
	}
	return false
}

// ScanVerdict is what a worker's scan found.
type ScanVerdict struct {
	// Bad is true when the task is faulty or malicious: it is rejected.
	Bad bool
	// Reason says why, for the host's records (returned in ScanResult).
	Reason string
}

// ScanResult is the result of Scanned.
type ScanResult struct {
	// Rejected is true when the task was found bad: it is done, never runs,
	// and the worker is free. Otherwise the worker runs the task now and
	// reports it with Complete.
	Rejected bool
	// Reason is the verdict's reason (only when Rejected).
	Reason string
	// Purged is the worker whose queue the task's other copy was dropped
	// from on rejection, or NoWorker.
	Purged WorkerID
	// Released is the idle worker that received the task's other copy,
	// held back while the scan was under way, or NoWorker: wake it.
	Released WorkerID
}

// scan states of a slot
const (
	scanNo      uint8 = iota // not scanned (or scanning off)
	scanPending              // must be scanned before it runs
	scanCleared              // scanned and found good
)

// SubmitRisk is Submit for a task that may be faulty or malicious. Under
// Config.Scan the task is marked for scanning (Placement.Scan): whichever of
// its copies a worker gets first from Next comes with Task.Scan set; the
// worker scans it and reports the verdict with Scanned before running it,
// and no other copy of the task runs until the verdict clears it (a copy
// that reaches a worker meanwhile is held back, and re-queued on a clean
// verdict). An invalid risk returns an error wrapping ErrRisk and changes
// nothing.
func (d *Dispatcher[T]) SubmitRisk(payload T, now time.Time, r Risk) (Placement, error) {
	if err := r.Validate(); err != nil {
		return Placement{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.submit(payload, now, d.cfg.Scan.Decide(r, d.cfg.BadRecovery))
}

// Scanned reports the verdict of the scan worker w ran on task id (a copy
// Next handed out with Task.Scan set). On a bad verdict the task is
// rejected: it is done without running, its other copy is purged, and w is
// free (call Next). On a clean verdict w goes on to run the task and
// reports it with Complete as usual; the task's other copy, if it was held
// back, is re-queued (ScanResult.Released names an idle worker to wake).
// A verdict for a task w is not serving, or for one not awaiting a scan
// (ErrScanOrder), or for a rejected task (ErrRejected) changes nothing.
func (d *Dispatcher[T]) Scanned(id TaskID, w WorkerID, v ScanVerdict) (ScanResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	res := ScanResult{Purged: NoWorker, Released: NoWorker}
	wk, err := d.worker(w)
	if err != nil {
		return res, err
	}
	if wk.state == wGone {
		return res, fmt.Errorf("%w: Scanned of task %#x by worker %d", ErrWorkerGone, uint64(id), w)
	}
	if !wk.serving || wk.cur != id || wk.cancelled {
		return res, d.taskError(id, w)
	}
	ci := wk.curCopy
	s := ci >> 1
	sl := &d.slots[s]
	if sl.scan != scanPending {
		return res, fmt.Errorf("%w: Scanned of task %#x, which awaits no scan", ErrScanOrder, uint64(id))
	}
	d.stats.Scans++
	sib := ci ^ 1
	sc := d.copyAt(sib)
	if v.Bad {
		if sc.state == cQueued {
			if sc.worker != orphan {
				res.Purged = WorkerID(sc.worker)
			}
			d.unlink(sib)
			d.stats.Purged++
		}
		res.Rejected, res.Reason = true, v.Reason
		sl.rejectedGen = sl.gen
		wk.serving, wk.cur, wk.curCopy = false, 0, -1
		d.release(s)
		d.stats.Rejected++
		d.stats.InFlight--
		d.finishWorker(int32(w))
		return res, nil
	}
	sl.scan = scanCleared
	if sc.state == cHeld {
		sc.state = cFree
		if t := d.pick(int32(w)); t >= 0 {
			if !d.workers[t].serving && d.workers[t].n[high]+d.workers[t].n[low] == 0 {
				res.Released = WorkerID(t)
			}
			d.enqueue(sib, t, sc.class)
		} else {
			d.stats.Dropped++ // no second worker: the task runs as one copy
		}
	}
	return res, nil
}
