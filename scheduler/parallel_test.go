package scheduler

import (
	"reflect"
	"runtime"
	"testing"
)

// TestGoodputParallelSamePlan: with Parallel on two processors the
// goodput policy plans what it plans without, on Pollux's testbed size
// and on 2,000 jobs (where the engine runs in its fast mode).
func TestGoodputParallelSamePlan(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for name, o := range map[string]genOpts{"160x64": shape160x64, "2000x8192": shape2000x8} {
		in := genInput(1, o)
		one, two := scheduleOnce(t, Pollux{}, in), scheduleOnce(t, Pollux{Parallel: true}, in)
		if !reflect.DeepEqual(one, two) {
			for i := range one.Decisions {
				if !reflect.DeepEqual(one.Decisions[i], two.Decisions[i]) {
					t.Fatalf("%s: decision %d without Parallel\n%+v\nwith\n%+v", name, i, one.Decisions[i], two.Decisions[i])
				}
			}
			t.Fatalf("%s: the plans differ outside their decisions", name)
		}
	}
}
