package quota_test

import (
	"fmt"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler/quota"
)

// Two teams with 4 a100 each on an 8-device cluster: team b wants only
// 1, so team a borrows the 3 it leaves; a's jobs asked for 8, so Enforce
// trims a's grant to its entitlement, shrinking the job that loses least.
func Example() {
	tree, err := quota.NewTree([]quota.Queue{
		{Name: "a", Quotas: []quota.Quota{{Type: "a100", Nominal: 4}}},
		{Name: "b", Quotas: []quota.Quota{{Type: "a100", Nominal: 4}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	types := []accel.TypeKey{"a100"}
	claims := []quota.Claim{
		{Queue: 0, Types: []int{0}, Min: 1, Max: 8, CurrentType: -1}, // a1
		{Queue: 0, Types: []int{0}, Min: 1, Max: 8, CurrentType: -1}, // a2
		{Queue: 1, Types: []int{0}, Min: 1, Max: 1, CurrentType: -1}, // b1
	}
	e := tree.Entitle(types, []int{8}, claims)
	fmt.Println("entitled a:", e.Entitled(0, 0), "b:", e.Entitled(1, 0))
	grants := []quota.Grant{{Type: 0, Count: 4}, {Type: 0, Count: 4}, {Type: 0, Count: 1}}
	loss := func(k, t, count int) (float64, error) { return float64(k + 1), nil } // a1 loses least
	evict := func(a, b int) int { return b - a }
	effects, err := e.Enforce(grants, loss, evict)
	if err != nil {
		fmt.Println(err)
		return
	}
	for k, g := range grants {
		fmt.Println(k, g.Count, effects[k].Note)
	}
	for _, u := range e.Report(grants) {
		fmt.Printf("%s: used %d, borrowed %d, lent %d\n", u.Queue, u.Used, u.Borrowed, u.Lent)
	}
	// Output:
	// entitled a: 7 b: 1
	// 0 3 queue a at its entitlement of 7 a100 (nominal 4)
	// 1 4 queue a borrows 3 a100 beyond its nominal 4
	// 2 1 within queue b's nominal 4 a100
	// a: used 7, borrowed 3, lent 0
	// b: used 1, borrowed 0, lent 3
}
