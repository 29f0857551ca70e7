package dispatch

import (
	"errors"
	"testing"
	"time"
)

// Issue 17: a completion before the task's submission gave a negative
// latency silently.
func TestCompleteBeforeSubmit(t *testing.T) {
	d := must(New[int](Config{Workers: 2, Choice: ChoiceRoundRobin}))
	pl := must(d.Submit(1, t0))
	tk, ok, err := d.Next(pl.Primary)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := d.Complete(tk.ID, pl.Primary, t0.Add(-time.Second)); !errors.Is(err, ErrTimeOrder) {
		t.Fatalf("Complete 1 s before Submit: err %v, want ErrTimeOrder", err)
	}
	out, err := d.Complete(tk.ID, pl.Primary, t0.Add(time.Second))
	if err != nil || !out.Won || out.Latency != time.Second {
		t.Fatalf("retry at the right time: %+v, %v", out, err)
	}
	if st := d.Stats(); st.Completed != 1 {
		t.Errorf("stats after the retry: %+v", st)
	}
}
