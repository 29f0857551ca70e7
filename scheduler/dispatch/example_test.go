package dispatch_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/scheduler/dispatch"
)

// Example shows one Submit/Next/Complete cycle under DAS: the primary goes to
// one worker's high-priority class, the duplicate to another's low-priority
// class; the first copy to finish wins and the sibling is purged.
func Example() {
	d, err := dispatch.New[string](dispatch.Config{Workers: 2, Policy: dispatch.PolicyDAS, Choice: dispatch.ChoiceRoundRobin})
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Unix(0, 0)
	pl, _ := d.Submit("resize image 42", t0)
	fmt.Printf("primary on worker %d, duplicate on worker %d\n", pl.Primary, pl.Duplicate)

	// Both workers are idle, so both start a copy.
	a, _, _ := d.Next(pl.Primary)
	b, _, _ := d.Next(pl.Duplicate)
	fmt.Printf("worker %d serves %q (duplicate %v)\n", pl.Primary, a.Payload, a.Duplicate)
	fmt.Printf("worker %d serves %q (duplicate %v)\n", pl.Duplicate, b.Payload, b.Duplicate)

	// The duplicate finishes first (the primary's worker is straggling).
	out, _ := d.Complete(b.ID, pl.Duplicate, t0.Add(3*time.Millisecond))
	fmt.Printf("won=%v latency=%v cancel worker %d\n", out.Won, out.Latency, out.Cancel)

	// The primary's worker learns its copy was cancelled.
	id, cancelled, _ := d.Cancelled(pl.Primary)
	fmt.Println("cancelled:", cancelled, id == a.ID)
	late, _ := d.Complete(a.ID, pl.Primary, t0.Add(30*time.Millisecond))
	fmt.Println("late copy won:", late.Won)

	// Completing the task again is a bad call.
	_, err = d.Complete(b.ID, pl.Duplicate, t0.Add(31*time.Millisecond))
	fmt.Println(errors.Is(err, dispatch.ErrCompleted))
	// Output:
	// primary on worker 0, duplicate on worker 1
	// worker 0 serves "resize image 42" (duplicate false)
	// worker 1 serves "resize image 42" (duplicate true)
	// won=true latency=3ms cancel worker 0
	// cancelled: true true
	// late copy won: false
	// true
}

// ExampleDispatcher_SubmitRisk shows the robust scan decision: a task whose
// expected damage exceeds its scan cost is scanned before it runs, and
// rejected when the scan finds it bad; a low-risk task runs at once.
func ExampleDispatcher_SubmitRisk() {
	d, err := dispatch.New[string](dispatch.Config{
		Workers:     2,
		Policy:      dispatch.PolicyNone,
		Choice:      dispatch.ChoiceRoundRobin,
		Scan:        dispatch.ScanRobust,
		BadRecovery: 10 * time.Millisecond, // an unscanned bad task costs its worker 10 ms
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Unix(0, 0)
	risky := dispatch.Risk{Probability: 0.8, ScanCost: 500 * time.Microsecond, Work: time.Millisecond}
	safe := dispatch.Risk{Probability: 0.02, ScanCost: 500 * time.Microsecond, Work: time.Millisecond}
	a, _ := d.SubmitRisk("upload from a new tenant", t0, risky)
	b, _ := d.SubmitRisk("nightly report", t0, safe)
	fmt.Println("scan risky:", a.Scan, "scan safe:", b.Scan)

	task, _, _ := d.Next(a.Primary)
	res, _ := d.Scanned(task.ID, a.Primary, dispatch.ScanVerdict{Bad: true, Reason: "payload matches a known exploit"})
	fmt.Printf("rejected=%v (%s)\n", res.Rejected, res.Reason)
	_, err = d.Complete(task.ID, a.Primary, t0)
	fmt.Println(errors.Is(err, dispatch.ErrRejected))

	task, _, _ = d.Next(b.Primary)
	out, _ := d.Complete(task.ID, b.Primary, t0.Add(time.Millisecond))
	fmt.Println("safe task won:", out.Won)
	// Output:
	// scan risky: true scan safe: false
	// rejected=true (payload matches a known exploit)
	// true
	// safe task won: true
}
