package scheduler

import (
	"context"
	"reflect"
	"runtime"
	"testing"
)

// TestGoodputSameOnOneAndTwoProcessors: the goodput engine searches its
// starts on two goroutines when it has two processors; the plan is the
// one it finds on one, on Pollux's testbed size and on 2,000 jobs (where
// the engine runs in its fast mode).
func TestGoodputSameOnOneAndTwoProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for name, o := range map[string]genOpts{"160x64": shape160x64, "2000x8192": shape2000x8} {
		in := genInput(1, o)
		plan := func(procs int) Plan {
			runtime.GOMAXPROCS(procs)
			s, err := New(Config{Policy: Pollux{}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Schedule(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		one, two := plan(1), plan(2)
		if !reflect.DeepEqual(one, two) {
			for i := range one.Decisions {
				if !reflect.DeepEqual(one.Decisions[i], two.Decisions[i]) {
					t.Fatalf("%s: decision %d on one processor\n%+v\non two\n%+v", name, i, one.Decisions[i], two.Decisions[i])
				}
			}
			t.Fatalf("%s: the plans differ outside their decisions", name)
		}
	}
}
