package scheduler

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func ip(v int) *int { return &v }

// TestQueueValidation: every malformed tree or job queue fails with
// ErrInvalid naming the bad queue (or job).
func TestQueueValidation(t *testing.T) {
	q := func(name, parent string, quotas ...Quota) Queue {
		return Queue{Name: name, Parent: parent, Quotas: quotas}
	}
	a100 := func(n int) Quota { return Quota{Type: "a100", Nominal: n} }
	for _, tc := range []struct {
		name   string
		queues []Queue
		jobQ   string
		want   string // "" = valid
	}{
		{"flat", []Queue{q("a", "", a100(4)), q("b", "", a100(4))}, "a", ""},
		{"nested", []Queue{q("org", "", a100(8)), q("a", "org", a100(4)), q("b", "org", a100(4))}, "b", ""},
		{"cohort-unlisted", []Queue{q("org", ""), q("a", "org", a100(4))}, "a", ""},
		{"empty-name", []Queue{q("", "")}, "a", "empty name"},
		{"duplicate", []Queue{q("a", ""), q("a", "")}, "a", `queue "a": duplicate`},
		{"unknown-parent", []Queue{q("a", "zz")}, "a", `queue "a": unknown parent "zz"`},
		{"cycle", []Queue{q("a", "b"), q("b", "a"), q("c", "")}, "c", "cycle"},
		{"self-cycle", []Queue{q("a", "a")}, "a", "cycle"},
		{"neg-nominal", []Queue{q("a", "", a100(-1))}, "a", `queue "a": a100: negative nominal`},
		{"neg-borrow", []Queue{q("a", "", Quota{Type: "a100", BorrowingLimit: ip(-2)})}, "a", "negative borrowing"},
		{"neg-lend", []Queue{q("a", "", Quota{Type: "a100", LendingLimit: ip(-2)})}, "a", "negative lending"},
		{"dup-type", []Queue{q("a", "", a100(1), a100(2))}, "a", "two quotas for type a100"},
		{"empty-type", []Queue{q("a", "", Quota{Nominal: 1})}, "a", "empty type"},
		{"children-exceed", []Queue{q("org", "", a100(6)), q("a", "org", a100(4)), q("b", "org", a100(4))}, "a", `queue "org": a100: its children's nominal quotas sum to 8`},
		{"unknown-queue", []Queue{q("a", "")}, "nope", `unknown queue "nope"`},
		{"inner-queue", []Queue{q("org", ""), q("a", "org")}, "org", "is a cohort"},
		{"no-queue", []Queue{q("a", "")}, "", "no queue"},
		{"nan-weight", []Queue{{Name: "a", Weight: math.NaN()}}, "a", `queue "a": weight NaN`},
		{"neg-weight", []Queue{{Name: "a", Weight: -1}}, "a", `queue "a": weight -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validateQueues(tc.queues, []Job{{ID: "j", Queue: tc.jobQ}})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
	// A queue named without Input.Queues is an error too.
	if _, err := validateQueues(nil, []Job{{ID: "j", Queue: "a"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("job with a queue and no Input.Queues: err = %v", err)
	}
}
