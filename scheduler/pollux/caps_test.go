package pollux

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestCaps: with Problem.Caps, every candidate solution keeps each group
// within its cap (the warm start sheds what a group holds beyond it), the
// polish included, and a malformed cap table is an ErrInvalid.
func TestCaps(t *testing.T) {
	base := vacateProblem(t) // 16 T4, six jobs, four running
	for _, caps := range [][2]int{{4, 12}, {8, 8}, {2, 3}, {0, 16}, {16, -1}} {
		p := base
		p.Jobs = slices.Clone(base.Jobs)
		p.Caps = [][]int{{caps[0]}, {caps[1]}}
		for i := range p.Jobs {
			p.Jobs[i].Group = i % 2
		}
		e, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		sols, err := e.Solve(context.Background(), 4)
		if err != nil {
			t.Fatal(err)
		}
		for k, sol := range sols {
			used := [2]int{}
			for i := range p.Jobs {
				_, c, _ := sol.Alloc(i)
				used[i%2] += c
			}
			for g := range 2 {
				if caps[g] >= 0 && used[g] > caps[g] {
					t.Errorf("caps %v: solution %d: group %d holds %d", caps, k, g, used[g])
				}
			}
			if k == 0 && caps[1] < 0 && used[0]+used[1] < 16 {
				t.Errorf("caps %v: best solution leaves %d devices idle", caps, 16-used[0]-used[1])
			}
		}
	}
	// Floors: with each group's current holdings as its floor, no
	// candidate takes devices from one group for the other.
	p := base
	p.Jobs = slices.Clone(base.Jobs)
	held := [2]int{}
	for i := range p.Jobs {
		p.Jobs[i].Group = i % 2
		held[i%2] += len(p.Jobs[i].Current)
	}
	p.Caps, p.Floors = [][]int{{16}, {16}}, [][]int{{held[0]}, {held[1]}}
	e, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	sols, err := e.Solve(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	for k, sol := range sols {
		used := [2]int{}
		for i := range p.Jobs {
			_, c, _ := sol.Alloc(i)
			used[i%2] += c
		}
		if used[0] < held[0] || used[1] < held[1] {
			t.Errorf("floors %v: solution %d holds %v", held, k, used)
		}
	}
	for name, change := range map[string]func(p *Problem){
		"row":         func(p *Problem) { p.Caps = [][]int{{1, 2}} },
		"group":       func(p *Problem) { p.Caps = [][]int{{1}}; p.Jobs[0].Group = 1 },
		"floors":      func(p *Problem) { p.Caps = [][]int{{1}}; p.Floors = [][]int{{1}, {1}} },
		"floor-types": func(p *Problem) { p.Caps = [][]int{{1}}; p.Floors = [][]int{{1, 2}} },
	} {
		p := base
		p.Jobs = slices.Clone(base.Jobs)
		change(&p)
		if _, err := New(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}
