package unrelated

import "sort"

// Rule is the paper's dispatching rule ("heuristic scheduling algorithm"):
// the free machine takes the pending job with the shortest processing time
// on it that no other active machine would finish sooner (its remaining
// occupation plus the job's processing time there); when every pending job
// would finish sooner elsewhere, the machine retires. Ties go to the lower
// job index. The zero value is ready to use.
type Rule struct{}

// Decide implements Policy.
func (Rule) Decide(s *State) Action {
	if s.Done() {
		return Retire // nothing to decide; Step reports ErrAction
	}
	in := s.in
	i := s.Machine
	order := make([]int, 0, s.pending)
	for j, p := range s.Pending {
		if p {
			order = append(order, j)
		}
	}
	sort.SliceStable(order, func(x, y int) bool {
		return in.Jobs[order[x]].Processing[i] < in.Jobs[order[y]].Processing[i]
	})
	for _, j := range order {
		p := in.Jobs[j].Processing[i]
		if bestElsewhere(s, j) >= p {
			return Action(j)
		}
	}
	if s.CanRetire() {
		return Retire
	}
	return Action(order[0])
}

// bestElsewhere is the soonest (relative to now) another active machine
// would finish job j if it took it when next free.
func bestElsewhere(s *State, j int) float64 {
	best := inf
	for k, a := range s.Active {
		if a && k != s.Machine {
			if v := s.Ready[k] - s.Time + s.in.Jobs[j].Processing[k]; v < best {
				best = v
			}
		}
	}
	return best
}
