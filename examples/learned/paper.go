package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/goodsched/goodsched/unrelated"
)

// PaperResult is what -paper adds: the paper's own test states (its
// Data/DataSet_99, converted by paperdata.py) evaluated here.
type PaperResult struct {
	// States is the number of states read.
	States int `json:"paper_states"`
	// SolverAgreement is the share of states where every action's Qmin/Q
	// computed by unrelated's exact solver matches the paper's brute-force
	// target within 1e-3; MaxRatioError is the largest difference seen.
	SolverAgreement float64 `json:"paper_solver_agreement"`
	MaxRatioError   float64 `json:"paper_max_ratio_error"`
	// GapLearned and GapRule are the mean cost-to-go of the policy from
	// each state over the optimal cost-to-go, minus 1.
	GapLearned float64 `json:"paper_gap_learned"`
	GapRule    float64 `json:"paper_gap_rule"`
}

type paperState struct {
	Jobs []struct {
		P []float64 `json:"p"`
		D float64   `json:"d"`
		W float64   `json:"w"`
	} `json:"jobs"`
	Machines []struct {
		Busy float64 `json:"busy"`
		D    float64 `json:"d"`
		W    float64 `json:"w"`
	} `json:"machines"`
	Target []float64 `json:"target"`
}

// evaluatePaper rebuilds each state as an instance starting now (times to
// deadline become deadlines, remaining occupations become Busy; the free
// machine is machine 0) and compares costs to go: the paper's costs start
// now, so the tardiness the running machines have already incurred is
// subtracted from the instance's cost.
func evaluatePaper(r io.Reader, learned unrelated.Learned) (PaperResult, error) {
	var res PaperResult
	agree := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		var ps paperState
		if err := json.Unmarshal(sc.Bytes(), &ps); err != nil {
			return res, fmt.Errorf("paper line %d: %w", line, err)
		}
		var in unrelated.Instance
		past := 0.0
		for _, m := range ps.Machines {
			in.Machines = append(in.Machines, unrelated.Machine{Busy: m.Busy, Deadline: m.D, Weight: m.W})
			past += m.W * math.Max(0, m.Busy-m.D)
		}
		for _, j := range ps.Jobs {
			in.Jobs = append(in.Jobs, unrelated.Job{Processing: j.P, Deadline: j.D, Weight: j.W})
		}
		s, err := unrelated.Start(in)
		if err != nil {
			return res, fmt.Errorf("paper line %d: %w", line, err)
		}
		if s.Machine != 0 || len(ps.Target) != len(in.Jobs)+1 {
			return res, fmt.Errorf("paper line %d: free machine %d, %d targets for %d jobs", line, s.Machine, len(ps.Target), len(in.Jobs))
		}
		q := make([]float64, len(ps.Target))
		for c := range q {
			a := unrelated.Retire
			if c < len(in.Jobs) {
				a = unrelated.Action(c)
			}
			next := s.Clone()
			if err := next.Step(a); err != nil {
				return res, fmt.Errorf("paper line %d: %w", line, err)
			}
			_, cost, err := unrelated.OptimalFrom(next)
			if err != nil {
				return res, err
			}
			q[c] = cost.Total() - past
		}
		qmin := q[0]
		for _, v := range q {
			qmin = math.Min(qmin, v)
		}
		worst := 0.0
		for c, v := range q {
			worst = math.Max(worst, math.Abs(qmin/v-ps.Target[c]))
		}
		if worst <= 1e-3 {
			agree++
		}
		res.MaxRatioError = math.Max(res.MaxRatioError, worst)
		_, l, err := unrelated.Run(in, learned)
		if err != nil {
			return res, err
		}
		_, rc, err := unrelated.Run(in, unrelated.Rule{})
		if err != nil {
			return res, err
		}
		res.GapLearned += (l.Total()-past)/qmin - 1
		res.GapRule += (rc.Total()-past)/qmin - 1
		res.States++
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	if res.States == 0 {
		return res, fmt.Errorf("paper file has no states")
	}
	res.SolverAgreement = float64(agree) / float64(res.States)
	res.GapLearned /= float64(res.States)
	res.GapRule /= float64(res.States)
	return res, nil
}
