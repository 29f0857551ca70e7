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
