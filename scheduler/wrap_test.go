package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/goodsched/goodsched/placement"
)

// forward is a user policy that only forwards to another: it must get
// the plans the policy it wraps gets.
type forward struct{ p Policy }

func (f forward) Allocate(ctx context.Context, r *Round) ([]Target, error) {
	return f.p.Allocate(ctx, r)
}

// TestWrapForwardsEveryBuiltin checks that a forwarding wrapper around
// every built-in policy gives byte-identical plans, on random inputs, with
// the default placer (which takes offered placements) and with Packer,
// with and without interference avoidance. (gavel's is checked in its
// package.)
func TestWrapForwardsEveryBuiltin(t *testing.T) {
	shapes := []genOpts{
		{groups: []group{{4, 4, "t4"}}, jobs: 12, maxReplicas: 8, rounds: 2, pinnedFrac: 0.2, rigidFrac: 0.2},
		{groups: []group{{16, 4, "t4"}}, jobs: 40, maxReplicas: 16, rounds: 2, rigidFrac: 0.2},
		{groups: []group{{2, 8, "a100"}, {4, 4, "t4"}, {2, 8, "v100"}}, jobs: 30, maxReplicas: 24, rounds: 3, pinnedFrac: 0.2, rigidFrac: 0.3},
	}
	if testing.Short() || raceEnabled {
		shapes = shapes[:1]
	}
	pols := policies()
	pols["genetic"] = geneticAt(10, 5, 3)
	for name, pol := range pols {
		for si, sh := range shapes {
			for seed := range uint64(2) {
				in := genInput(seed+10*uint64(si), sh)
				for _, placer := range []placement.Placer{nil, placement.Packer{}} {
					for _, allow := range []bool{false, true} {
						cfg := Config{Policy: pol, Placer: placer, AllowInterference: allow}
						plain := planJSON(t, cfg, in)
						cfg.Policy = forward{pol}
						if wrapped := planJSON(t, cfg, in); !bytes.Equal(plain, wrapped) {
							t.Fatalf("%s, shape %d, seed %d, placer %T, interference %v: wrapped plan differs:\n%s\nvs\n%s",
								name, si, seed, placer, allow, plain, wrapped)
						}
					}
				}
			}
		}
	}
}

func planJSON(t *testing.T, cfg Config, in Input) []byte {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Schedule(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(fmt.Errorf("marshal: %w", err))
	}
	return b
}

// TestWrapForwardsQueues checks the quota path: a forwarding wrapper
// around every built-in policy gives byte-identical plans (Plan.Queues
// included) on inputs with a quota tree, where entitlements bound the
// search, targets are trimmed and the policy may be asked twice.
func TestWrapForwardsQueues(t *testing.T) {
	shapes := []genOpts{
		{groups: []group{{4, 4, "t4"}, {2, 8, "a100"}}, jobs: 30, maxReplicas: 8, rounds: 2, pinnedFrac: 0.1, rigidFrac: 0.2},
		{groups: []group{{16, 4, "t4"}}, jobs: 60, maxReplicas: 16, rounds: 2, rigidFrac: 0.2},
	}
	if testing.Short() || raceEnabled {
		shapes = shapes[:1]
	}
	pols := policies()
	pols["genetic"] = geneticAt(10, 5, 3)
	for name, pol := range pols {
		for si, sh := range shapes {
			in := queued50(genInput(uint64(20+si), sh))
			for _, placer := range []placement.Placer{nil, placement.Packer{}} {
				cfg := Config{Policy: pol, Placer: placer}
				plain := planJSON(t, cfg, in)
				if !bytes.Contains(plain, []byte(`"queues"`)) {
					t.Fatalf("%s: plan has no queue report", name)
				}
				cfg.Policy = forward{pol}
				if wrapped := planJSON(t, cfg, in); !bytes.Equal(plain, wrapped) {
					t.Fatalf("%s, shape %d, placer %T: wrapped plan differs:\n%s\nvs\n%s", name, si, placer, plain, wrapped)
				}
			}
		}
	}
}
