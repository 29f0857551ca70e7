package quota

import (
	"errors"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
)

// TestNewTreeErrors: each malformed tree fails with ErrInvalid naming the
// queue.
func TestNewTreeErrors(t *testing.T) {
	for _, tc := range []struct {
		qs   []Queue
		want string
	}{
		{[]Queue{{Name: ""}}, "empty name"},
		{[]Queue{{Name: "a"}, {Name: "a"}}, `queue "a": duplicate`},
		{[]Queue{{Name: "a", Parent: "b"}, {Name: "b", Parent: "a"}}, "cycle"},
		{[]Queue{{Name: "o", Quotas: []Quota{{Type: "t4", Nominal: 1}}}, {Name: "a", Parent: "o", Quotas: []Quota{{Type: "t4", Nominal: 2}}}}, `queue "o": t4: its children's nominal quotas sum to 2`},
	} {
		if _, err := NewTree(tc.qs); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want ErrInvalid with %q", tc.qs, err, tc.want)
		}
	}
}

// TestRelax: grants that leave nothing idle need no second pass; grants
// that leave devices idle while a capped queue has demand get one, but a
// queue with unmet demand keeps its guarantee (it is not lent).
func TestRelax(t *testing.T) {
	tree, err := NewTree([]Queue{{Name: "a", Quotas: []Quota{{Type: "t4", Nominal: 4}}}, {Name: "b", Quotas: []Quota{{Type: "t4", Nominal: 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	claims := []Claim{
		{Queue: 0, Types: []int{0}, Min: 1, Max: 8, CurrentType: -1},
		{Queue: 1, Types: []int{0}, Min: 1, Max: 8, CurrentType: -1},
	}
	e := tree.Entitle([]accel.TypeKey{"t4"}, []int{8}, claims)
	if e.Entitled(0, 0) != 4 || e.Entitled(1, 0) != 4 {
		t.Fatalf("entitled %d, %d; want 4, 4", e.Entitled(0, 0), e.Entitled(1, 0))
	}
	if e.Relax([]Grant{{0, 4}, {0, 4}}) != nil {
		t.Fatal("relaxed with nothing idle")
	}
	e2 := e.Relax([]Grant{{0, 4}, {0, 1}}) // b uses 1 of its 4, a is capped
	if e2 == nil || e2.Entitled(0, 0) != 4 || e2.Entitled(1, 0) != 4 {
		t.Fatalf("relaxed: %+v", e2)
	}
}
