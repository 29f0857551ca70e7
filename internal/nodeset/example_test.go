package nodeset_test

import (
	"fmt"

	"github.com/goodsched/goodsched/internal/nodeset"
)

// Nodes 3, 70 and 4000 have free devices: the first at or after 4 is 70,
// the last at or before 69 is 3.
func Example() {
	s := nodeset.New(5000)
	for _, n := range []int{3, 70, 4000} {
		s.Add(n)
	}
	fmt.Println(s.Next(4), s.Prev(69), s.Next(4001))
	s.Remove(70)
	fmt.Println(s.Next(4), s.Empty())
	// Output:
	// 70 3 -1
	// 4000 false
}
