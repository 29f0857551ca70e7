package polluxdata_test

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/goodsched/goodsched/scheduler/sim/polluxdata"
)

// List the embedded models and count the 1.0× workloads.
func Example() {
	models, _ := fs.ReadDir(polluxdata.FS, "traces")
	var names []string
	for _, m := range models {
		names = append(names, m.Name())
	}
	fmt.Println(strings.Join(names, " "))
	ws, _ := fs.Glob(polluxdata.FS, "workloads/workload-*.csv")
	fmt.Println(len(ws), "workloads")
	// Output:
	// bert cifar10 deepspeech2 imagenet ncf yolov3
	// 8 workloads
}
