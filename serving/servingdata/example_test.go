package servingdata_test

import (
	"fmt"

	"github.com/goodsched/goodsched/serving/servingdata"
)

// Example reads the embedded trace and reports its size and span.
func Example() {
	t, err := servingdata.Conversation()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(t.Requests), "requests from", t.Start.Format("15:04:05"), "over", t.Duration().Round(1e9))
	// Output: 19366 requests from 18:15:46 over 58m22s
}
