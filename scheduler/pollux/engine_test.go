package pollux

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestRestartFactor(t *testing.T) {
	cases := []struct {
		age      time.Duration
		restarts int
		want     float64
	}{
		{0, 0, 0},
		{30 * time.Second, 0, 0.5},
		{time.Hour, 1, (3600.0 - 30) / 3630},
		{60 * time.Second, 3, 0},
	}
	for _, c := range cases {
		if got := restartFactor(c.age, c.restarts, 30*time.Second); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("restartFactor(%v, %d) = %v, want %v", c.age, c.restarts, got, c.want)
		}
	}
}

// A malformed Problem is an ErrInvalid, never a panic.
func TestNewRejects(t *testing.T) {
	ok := vacateProblem(t)
	for name, change := range map[string]func(p *Problem){
		"nil index":    func(p *Problem) { p.Index = nil },
		"exponent 2":   func(p *Problem) { p.Exponent = 2 },
		"exponent 0":   func(p *Problem) { p.Exponent = 0 },
		"delay":        func(p *Problem) { p.RestartDelay = -time.Second },
		"no speedup":   func(p *Problem) { p.Jobs[0].Speedup = nil },
		"bounds":       func(p *Problem) { p.Jobs[0].Min = 0 },
		"weight":       func(p *Problem) { p.Jobs[0].Weight = 0 },
		"type":         func(p *Problem) { p.Jobs[0].Types = []int{1} },
		"current type": func(p *Problem) { p.Jobs[0].CurrentType = 3 },
		"unsorted":     func(p *Problem) { p.Jobs[0], p.Jobs[1] = p.Jobs[1], p.Jobs[0] },
		"reuse key":    func(p *Problem) { p.Jobs[0].Reuse = []int{1} },
		"reuse inside": func(p *Problem) { p.Jobs[0].Reuse = struct{ k any }{[]int{1}} },
		"node bound":   func(p *Problem) { p.Jobs[0].NodeBound = -1 },
	} {
		p := ok
		p.Jobs = slices.Clone(ok.Jobs)
		change(&p)
		if _, err := New(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
}
