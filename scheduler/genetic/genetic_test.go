package genetic_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/genetic"
)

// Bad settings fail when the Scheduler is built and when the policy is
// called on its own; a nil *Policy is not the default.
func TestBadSettings(t *testing.T) {
	cl, err := accel.ParseSpec("1x4:t4")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r, err := scheduler.NewRound(scheduler.Input{Cluster: cl, Now: t0, Jobs: []scheduler.Job{{ID: "a", Kind: scheduler.Elastic, Submitted: t0}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]genetic.Policy{
		"Population":     {Population: -1},
		"Population 1e9": {Population: genetic.MaxPopulation + 1},
		"Generations":    {Generations: -5},
		"MaxNodes":       {MaxNodes: -1},
		"RestartDelay":   {RestartDelay: -time.Second},
	} {
		if _, err := scheduler.New(scheduler.Config{Policy: p}); !errors.Is(err, scheduler.ErrInvalid) {
			t.Errorf("%s: New: err %v, want ErrInvalid", name, err)
		}
		if _, err := p.Allocate(context.Background(), r); !errors.Is(err, scheduler.ErrInvalid) {
			t.Errorf("%s: Allocate: err %v, want ErrInvalid", name, err)
		}
	}
	if _, err := scheduler.New(scheduler.Config{Policy: (*genetic.Policy)(nil)}); !errors.Is(err, scheduler.ErrInvalid) {
		t.Errorf("New with a nil *Policy: err %v, want ErrInvalid", err)
	}
}
