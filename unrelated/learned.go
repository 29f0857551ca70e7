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
const FeatureVersion = 5

// NumFeatures is the length of one candidate's feature vector.
const NumFeatures = 39

// Network scores every feasible action of a state (a pending job for the
// free machine, or retiring it) from the candidates' features; the policy
// takes the candidate with the highest score. Each candidate is first
// embedded (Context tanh units); the mean embedding over all candidates is
// the state's context, appended to every candidate's features before one
// hidden tanh layer and a linear output (Context 0 leaves the context out).
// Its size does not depend on the numbers of jobs and machines, so a network
// trained on small instances schedules any instance. Safe for concurrent use
// once built.
type Network struct {
	FeatureVersion int         `json:"feature_version"`
	Context        int         `json:"context"`
	Hidden         int         `json:"hidden"`
	WC             [][]float64 `json:"wc"` // Context × NumFeatures
	BC             []float64   `json:"bc"`
	W1             [][]float64 `json:"w1"` // Hidden × (NumFeatures + Context)
	B1             []float64   `json:"b1"`
	W2             []float64   `json:"w2"`
	B2             []float64   `json:"b2"` // one value
}

// forward holds one evaluation's intermediate values, for training.
type forward struct {
	emb    [][]float64 // per candidate, Context
	inputs [][]float64 // per candidate, features then context
	hidden [][]float64
	scores []float64
}

func (n *Network) forward(feats [][]float64) forward {
	f := forward{emb: make([][]float64, len(feats)), inputs: make([][]float64, len(feats)),
		hidden: make([][]float64, len(feats)), scores: make([]float64, len(feats))}
	ctx := make([]float64, n.Context)
	for c, x := range feats {
		e := make([]float64, n.Context)
		for k, row := range n.WC {
			e[k] = math.Tanh(n.BC[k] + dot(row, x))
			ctx[k] += e[k] / float64(len(feats))
		}
		f.emb[c] = e
	}
	for c, x := range feats {
		in := append(append(make([]float64, 0, len(x)+n.Context), x...), ctx...)
		h := make([]float64, n.Hidden)
		s := n.B2[0]
		for k, row := range n.W1 {
			h[k] = math.Tanh(n.B1[k] + dot(row, in))
			s += n.W2[k] * h[k]
		}
		f.inputs[c], f.hidden[c], f.scores[c] = in, h, s
	}
	return f
}

// backward adds to g (a network of the same shape) the gradient of a loss
// whose derivative with respect to the scores is ds.
func (n *Network) backward(f forward, ds []float64, g *Network) {
	dctx := make([]float64, n.Context)
	for c, in := range f.inputs {
		g.B2[0] += ds[c]
		for k, h := range f.hidden[c] {
			g.W2[k] += ds[c] * h
			dz := ds[c] * n.W2[k] * (1 - h*h)
			g.B1[k] += dz
			for q, v := range in {
				g.W1[k][q] += dz * v
			}
			for q := range dctx {
				dctx[q] += dz * n.W1[k][NumFeatures+q]
			}
		}
	}
	for c, in := range f.inputs {
		x := in[:NumFeatures]
		for k, e := range f.emb[c] {
			dz := dctx[k] / float64(len(f.inputs)) * (1 - e*e)
			g.BC[k] += dz
			for q, v := range x {
				g.WC[k][q] += dz * v
			}
		}
	}
}

// Scores is the network's preference for each candidate of one state.
func (n *Network) Scores(feats [][]float64) []float64 { return n.forward(feats).scores }

// params lists the parameter slices in a fixed order (for the optimiser).
func (n *Network) params() [][]float64 {
	var p [][]float64
	p = append(p, n.WC...)
	p = append(p, n.BC)
	p = append(p, n.W1...)
	return append(p, n.B1, n.W2, n.B2)
}

func dot(a, b []float64) float64 {
	s := 0.0
	for k, v := range a {
		s += v * b[k]
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
	if n.Hidden <= 0 || n.Context < 0 || len(n.W1) != n.Hidden || len(n.B1) != n.Hidden || len(n.W2) != n.Hidden ||
		len(n.B2) != 1 || len(n.WC) != n.Context || len(n.BC) != n.Context {
		return nil, fmt.Errorf("%w: network layers do not match sizes hidden %d, context %d", ErrInvalid, n.Hidden, n.Context)
	}
	for h, row := range n.W1 {
		if len(row) != NumFeatures+n.Context {
			return nil, fmt.Errorf("%w: network row %d has %d inputs, want %d", ErrInvalid, h, len(row), NumFeatures+n.Context)
		}
	}
	for h, row := range n.WC {
		if len(row) != NumFeatures {
			return nil, fmt.Errorf("%w: context row %d has %d inputs, want %d", ErrInvalid, h, len(row), NumFeatures)
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
	// Network scores the candidates; nil means Shipped().
	Network *Network
	// OptimalEnd, when > 0, hands the last decisions to the exact solver
	// once at most OptimalEnd jobs are pending (the paper's "optimal end",
	// which it applies below 3 pending jobs). 0 means the network decides
	// everything. Values above MaxExactJobs act as MaxExactJobs.
	OptimalEnd int
}

// Decide implements Policy.
func (l Learned) Decide(s *State) Action {
	if s.Done() {
		return Retire // nothing to decide; Step reports ErrAction
	}
	net := l.Network
	if net == nil {
		var err error
		if net, err = Shipped(); err != nil {
			return Rule{}.Decide(s)
		}
	}
	if s.pending <= min(l.OptimalEnd, MaxExactJobs) {
		if a, err := optimalAction(s); err == nil {
			return a
		}
	}
	acts, feats := Candidates(s)
	return acts[argmax(net.Scores(feats))]
}

// Candidates lists the feasible actions of s (pending jobs in index order,
// then Retire when feasible) with each one's NumFeatures features. Times are
// divided by the largest time-like quantity of the state and weights by the
// largest weight, so the features do not depend on the instance's scale.
//
// Besides a job's times, slack, weight, priority ranks (shortest processing
// time, WSPT, ATC) and the state's load, a candidate reads what starting
// it costs at once: the marginal cost of appending the job to the free
// machine (its weighted tardiness, the machine's added weighted tardiness
// and the makespan it adds), that cost relative to the job's cheapest other
// machine and to the other candidates, and the job's regret (second
// cheapest machine minus cheapest). Retire reads how much the pending jobs'
// cheapest marginal costs grow without the free machine. These are the
// comparisons the exact solver's choices turn on; adding them halved the
// network's mean cost above the optimum on 8 × 4 instances (8.4% → 4.1%).
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
	// rankBy is the share of pending jobs ordered before j by v, the
	// larger first when desc, the smaller first otherwise; ties to the
	// lower index.
	rankBy := func(v []float64, j int, desc bool) float64 {
		r := 0
		for k, p := range s.Pending {
			if p && ((desc && v[k] > v[j]) || (!desc && v[k] < v[j]) || (v[k] == v[j] && k < j)) {
				r++
			}
		}
		return float64(r) / float64(s.pending)
	}
	// What appending each pending job costs now: on the free machine and on
	// its cheapest other active machine (marginalCost), and how each
	// compares with the other candidates.
	norm := wmax * scale
	here := make([]float64, len(s.Pending))
	advantage := make([]float64, len(s.Pending)) // here − cheapest elsewhere
	regret := make([]float64, len(s.Pending))    // second cheapest machine − cheapest
	minHere, minAdvantage := inf, inf
	sumBest, sumElsewhere := 0.0, 0.0 // Σ cheapest over all machines, over the others
	for j, p := range s.Pending {
		if !p {
			continue
		}
		here[j] = marginalCost(s, j, i, maxReady)
		elsewhere, second := inf, inf
		for k, a := range s.Active {
			if a && k != i {
				c := marginalCost(s, j, k, maxReady)
				if c < elsewhere {
					elsewhere, second = c, elsewhere
				} else if c < second {
					second = c
				}
			}
		}
		advantage[j] = math.Max(-4, math.Min(4, (here[j]-elsewhere)/norm))
		best := math.Min(here[j], elsewhere)
		regret[j] = math.Min(4, (math.Min(math.Max(here[j], elsewhere), second)-best)/norm)
		sumBest += best
		sumElsewhere += math.Min(elsewhere, 4*norm)
		minHere = math.Min(minHere, here[j])
		minAdvantage = math.Min(minAdvantage, advantage[j])
	}
	retireLoss := math.Min(4, (sumElsewhere-sumBest)/norm)
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
			rankBy(wspt, j, true),
			rankBy(atc, j, true),
			job.Weight * (lateElsewhere - late) / (wmax * scale),
			load,
			loadWithout,
			nextIn,
			onNext(in, next, j, pij),
			b2f(pij <= fastest),
			wspt[j] / maxW,
			atc[j] / math.Max(maxA, 1e-300),
			math.Min(4, here[j]/norm),
			advantage[j],
			math.Min(4, (here[j]-minHere)/norm),
			advantage[j] - minAdvantage,
			rankBy(here, j, false),
			rankBy(advantage, j, false),
			b2f(advantage[j] <= 0),
			regret[j],
			rankBy(regret, j, false),
			retireLoss,
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
		x[30] = minAdvantage
		x[35] = b2f(minAdvantage > 0)
		x[38] = retireLoss
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

// marginalCost is what appending job j to active machine k adds to the
// cost, were k to start it when next free (now for the free machine): the
// job's weighted tardiness, the machine's added weighted tardiness and how
// far it pushes the makespan past makespan (the latest ready time so far).
func marginalCost(s *State, j, k int, makespan float64) float64 {
	job, m := s.in.Jobs[j], s.in.Machines[k]
	start := s.Ready[k]
	done := start + job.Processing[k]
	return job.Weight*math.Max(0, done-job.Deadline) +
		m.Weight*(math.Max(0, done-m.Deadline)-math.Max(0, start-m.Deadline)) +
		math.Max(0, done-makespan)
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

// argmax is the index of the largest value, the first among equals.
func argmax(v []float64) int {
	arg := 0
	for c, x := range v {
		if x > v[arg] {
			arg = c
		}
	}
	return arg
}
