package unrelated

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
)

// FeatureVersion numbers the candidate features a Network reads; a network
// trained on other features is refused by ReadNetwork.
const FeatureVersion = 3

// NumFeatures is the length of one candidate's feature vector.
const NumFeatures = 29

// Network is a one-hidden-layer perceptron that scores one candidate action
// (a pending job for the free machine, or retiring it) from its features;
// the policy takes the candidate with the highest score. Its size does not
// depend on the numbers of jobs and machines, so a network trained on small
// instances schedules any instance. Safe for concurrent use once built.
type Network struct {
	FeatureVersion int         `json:"feature_version"`
	Hidden         int         `json:"hidden"`
	W1             [][]float64 `json:"w1"` // Hidden × NumFeatures
	B1             []float64   `json:"b1"`
	W2             []float64   `json:"w2"`
	B2             float64     `json:"b2"`
}

// Score is the network's preference for a candidate with features x.
func (n *Network) Score(x []float64) float64 {
	s := n.B2
	for h, row := range n.W1 {
		z := n.B1[h]
		for f, w := range row {
			z += w * x[f]
		}
		s += n.W2[h] * math.Tanh(z)
	}
	return s
}

// ReadNetwork decodes a network saved by Write, checking its shape and
// feature version.
func ReadNetwork(r io.Reader) (*Network, error) {
	var n Network
	if err := json.NewDecoder(r).Decode(&n); err != nil {
		return nil, fmt.Errorf("unrelated: reading network: %w", err)
	}
	if n.FeatureVersion != FeatureVersion {
		return nil, fmt.Errorf("%w: network for feature version %d, this build computes %d", ErrInvalid, n.FeatureVersion, FeatureVersion)
	}
	if n.Hidden <= 0 || len(n.W1) != n.Hidden || len(n.B1) != n.Hidden || len(n.W2) != n.Hidden {
		return nil, fmt.Errorf("%w: network layers do not match hidden size %d", ErrInvalid, n.Hidden)
	}
	for h, row := range n.W1 {
		if len(row) != NumFeatures {
			return nil, fmt.Errorf("%w: network row %d has %d inputs, want %d", ErrInvalid, h, len(row), NumFeatures)
		}
	}
	return &n, nil
}

// Write encodes the network as JSON.
func (n *Network) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(n)
}

//go:embed weights.json
var shippedWeights []byte

var shipped = sync.OnceValues(func() (*Network, error) { return ReadNetwork(bytes.NewReader(shippedWeights)) })

// Shipped returns the network trained by Train with DefaultTrainConfig and
// shipped in this package (weights.json; regenerate with
// `go run ./examples/learned -train -out unrelated/weights.json`).
func Shipped() (*Network, error) { return shipped() }

// Learned is the learned policy: in each state it scores every feasible
// action with Network and takes the best (the lower job index, then
// assigning over retiring, among equal scores).
type Learned struct {
	Network *Network
	// OptimalEnd, when > 0, hands the last decisions to the exact solver
	// once at most OptimalEnd jobs are pending (the paper's "optimal end",
	// which it applies below 3 pending jobs). 0 means the network decides
	// everything. Values above MaxExactJobs act as MaxExactJobs.
	OptimalEnd int
}

// Decide implements Policy.
func (l Learned) Decide(s *State) Action {
	if s.pending <= min(l.OptimalEnd, MaxExactJobs) {
		if a, err := optimalAction(s); err == nil {
			return a
		}
	}
	acts, feats := Candidates(s)
	best, arg := math.Inf(-1), 0
	for c, x := range feats {
		if v := l.Network.Score(x); v > best {
			best, arg = v, c
		}
	}
	return acts[arg]
}

// Candidates lists the feasible actions of s (pending jobs in index order,
// then Retire when feasible) with each one's NumFeatures features. Times are
// divided by the largest time-like quantity of the state and weights by the
// largest weight, so the features do not depend on the instance's scale.
func Candidates(s *State) ([]Action, [][]float64) {
	in, i, t := s.in, s.Machine, s.Time
	scale, wmax := 0.0, 0.0
	maxReady := 0.0
	for k, a := range s.Ready {
		maxReady = math.Max(maxReady, a)
		if s.Active[k] {
			scale = math.Max(scale, s.Ready[k]-t)
			scale = math.Max(scale, in.Machines[k].Deadline-t)
			wmax = math.Max(wmax, in.Machines[k].Weight)
		}
	}
	minP := inf // shortest pending processing time on the free machine
	for j, p := range s.Pending {
		if !p {
			continue
		}
		job := in.Jobs[j]
		scale = math.Max(scale, job.Deadline-t)
		wmax = math.Max(wmax, job.Weight)
		minP = math.Min(minP, job.Processing[i])
		for k, a := range s.Active {
			if a {
				scale = math.Max(scale, job.Processing[k])
			}
		}
	}
	if scale <= 0 {
		scale = 1
	}
	if wmax <= 0 {
		wmax = 1
	}
	m := in.Machines[i]
	ruleChoice := Rule{}.Decide(s)
	pendingShare := float64(s.pending) / float64(s.pending+s.active)
	perMachine := math.Log1p(float64(s.pending) / float64(s.active))
	machineSlack := math.Max(0, m.Deadline-t) / scale
	// Load per active machine, with and without the free machine: pending
	// work at each job's fastest active machine plus what is still running.
	work, busy, pbar := 0.0, 0.0, 0.0
	for j, p := range s.Pending {
		if p {
			fastest := inf
			for k, a := range s.Active {
				if a {
					fastest = math.Min(fastest, in.Jobs[j].Processing[k])
				}
			}
			work += fastest
			pbar += in.Jobs[j].Processing[i]
		}
	}
	pbar /= float64(max(1, s.pending))
	for k, a := range s.Active {
		if a {
			busy += s.Ready[k] - t
		}
	}
	load := (work + busy) / float64(s.active) / scale
	loadWithout := 2.0
	if s.active > 1 {
		loadWithout = math.Min(2, (work+busy)/float64(s.active-1)/scale)
	}
	// Priority indices on the free machine: WSPT (weight over processing
	// time) and ATC (WSPT discounted by slack); candidates get their rank.
	wspt := make([]float64, len(s.Pending))
	atc := make([]float64, len(s.Pending))
	for j, p := range s.Pending {
		if p {
			job := in.Jobs[j]
			pij := job.Processing[i]
			wspt[j] = job.Weight / pij
			atc[j] = wspt[j] * math.Exp(-math.Max(0, job.Deadline-pij-t)/(2*pbar))
		}
	}
	maxW, maxA := 0.0, 0.0
	for j, p := range s.Pending {
		if p {
			maxW, maxA = math.Max(maxW, wspt[j]), math.Max(maxA, atc[j])
		}
	}
	// The machine that frees up next, and when.
	next, nextIn := -1, 2.0
	for k, a := range s.Active {
		if a && k != i && (next < 0 || s.Ready[k] < s.Ready[next]) {
			next = k
		}
	}
	if next >= 0 {
		nextIn = math.Min(2, (s.Ready[next]-t)/scale)
	}
	rankOf := func(v []float64, j int) float64 {
		r := 0
		for k, p := range s.Pending {
			if p && (v[k] > v[j] || (v[k] == v[j] && k < j)) {
				r++
			}
		}
		return float64(r) / float64(s.pending)
	}
	var acts []Action
	var feats [][]float64
	bestRatio := inf // how competitive the free machine is on its best job
	for j, p := range s.Pending {
		if !p {
			continue
		}
		job := in.Jobs[j]
		pij := job.Processing[i]
		elsewhere := bestElsewhere(s, j)
		fastest := inf
		for k, a := range s.Active {
			if a {
				fastest = math.Min(fastest, job.Processing[k])
			}
		}
		ratio := 3.0
		if !math.IsInf(elsewhere, 1) {
			ratio = math.Min(3, pij/elsewhere)
		}
		bestRatio = math.Min(bestRatio, ratio)
		rank := 0
		for k, q := range s.Pending {
			if q && (in.Jobs[k].Processing[i] < pij || (in.Jobs[k].Processing[i] == pij && k < j)) {
				rank++
			}
		}
		done := t + pij
		late := math.Max(0, done-job.Deadline)
		lateElsewhere := math.Max(0, t+math.Min(elsewhere, 2*scale)-job.Deadline)
		x := []float64{
			0,
			pij / scale,
			math.Min(elsewhere, 2*scale) / scale,
			ratio,
			float64(rank) / float64(s.pending),
			minP / pij,
			math.Max(0, job.Deadline-t) / scale,
			late / scale,
			job.Weight / wmax,
			job.Weight * late / (wmax * scale),
			machineSlack,
			m.Weight / wmax,
			m.Weight * math.Max(0, done-math.Max(m.Deadline, t)) / (wmax * scale),
			math.Max(0, done-maxReady) / scale,
			fastest / pij,
			b2f(ruleChoice == Action(j)),
			pendingShare,
			perMachine,
			math.Log1p((job.Weight / wmax) / (pij / scale)),
			rankOf(wspt, j),
			rankOf(atc, j),
			job.Weight * (lateElsewhere - late) / (wmax * scale),
			load,
			loadWithout,
			nextIn,
			onNext(in, next, j, pij),
			b2f(pij <= fastest),
			wspt[j] / maxW,
			atc[j] / math.Max(maxA, 1e-300),
		}
		acts = append(acts, Action(j))
		feats = append(feats, x)
	}
	if s.CanRetire() {
		x := make([]float64, NumFeatures)
		x[0] = 1
		x[3] = bestRatio
		x[5] = 1
		x[10] = machineSlack
		x[11] = m.Weight / wmax
		x[15] = b2f(ruleChoice == Retire)
		x[16] = pendingShare
		x[17] = perMachine
		x[22] = load
		x[23] = loadWithout
		x[24] = nextIn
		acts = append(acts, Retire)
		feats = append(feats, x)
	}
	return acts, feats
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// onNext is job j's processing time on the next machine to free up,
// relative to its time on the free machine (3 when there is none).
func onNext(in *Instance, next, j int, pij float64) float64 {
	if next < 0 {
		return 3
	}
	return math.Min(3, in.Jobs[j].Processing[next]/pij)
}

// optimalAction is the first action of an optimal completion of s.
func optimalAction(s *State) (Action, error) {
	sch, _, err := OptimalFrom(s)
	if err != nil {
		return 0, err
	}
	i := s.Machine
	if q := sch.Sequences[i]; len(q) > len(s.seq[i]) {
		return Action(q[len(s.seq[i])]), nil
	}
	return Retire, nil
}
