package unrelated

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
)

// TrainConfig sets how Train imitates the exact solver. The zero value of
// each field means the default in DefaultTrainConfig.
type TrainConfig struct {
	// Seed drives instance generation, initial weights and shuffling; the
	// same config trains the same network, bit for bit.
	Seed int64
	// Instances is how many random instances each round adds (default 1200).
	Instances int
	// Rounds is the number of DAgger rounds after the first, which follows
	// the exact solver; later rounds follow the network trained so far and
	// label each state it visits with the exact solver's action (default 4).
	Rounds int
	// Epochs is the passes over the aggregated data after each round
	// (default 12).
	Epochs int
	// Hidden is the hidden layer's width (default 64).
	Hidden int
	// Context is the width of the candidates' mean embedding that every
	// candidate sees (default 16; negative: none).
	Context int
	// LearningRate is Adam's step size (default 0.003).
	LearningRate float64
	// MaxJobs and MaxMachines bound the random instances' sizes; half of
	// them have exactly MaxJobs × MaxMachines, the others sizes drawn
	// uniformly from [3, MaxJobs] × [2, MaxMachines] (default 8 × 4).
	MaxJobs, MaxMachines int
	// Temperature makes the targets cost-sensitive (default 0.01): every
	// candidate's optimal completion cost Q is computed (one exact solve per
	// candidate) and the target distribution is softmax(−(Q − Qmin) /
	// (Temperature × Qmin)), so near-optimal actions are penalised less than
	// costly ones. A negative value trains on the single optimal action
	// instead (one exact solve per state).
	Temperature float64
}

// DefaultTrainConfig is the configuration the shipped weights were trained with.
var DefaultTrainConfig = TrainConfig{Seed: 1, Instances: 1200, Rounds: 4, Epochs: 12, Hidden: 64, Context: 16, LearningRate: 0.003, MaxJobs: 8, MaxMachines: 4, Temperature: 0.01}

// TrainSeedOffset separates training instances from evaluation ones: Train
// draws its instances from seeds ≥ TrainSeedOffset, so evaluation sets drawn
// from small seeds are not in the training set.
const TrainSeedOffset = 1 << 40

// TrainReport says what Train did.
type TrainReport struct {
	// States is the number of labelled states in the final data set.
	States int
	// Accuracy is the share of those states where the network picks the
	// exact solver's action.
	Accuracy float64
}

type sample struct {
	feats  [][]float64
	target []float64 // a distribution over feats
	label  int       // the best candidate
}

// Train fits a Network by imitating the exact solver (DAgger): round 0 walks
// the optimal schedules of random instances, each later round walks the
// current network's schedules; every visited state is labelled with the
// first action of an optimal completion (OptimalFrom), and the network is
// fitted by softmax cross-entropy over each state's candidates with Adam.
func Train(cfg TrainConfig) (*Network, TrainReport, error) {
	def := DefaultTrainConfig
	cfg.Instances = cmp.Or(cfg.Instances, def.Instances)
	cfg.Rounds = cmp.Or(cfg.Rounds, def.Rounds)
	cfg.Epochs = cmp.Or(cfg.Epochs, def.Epochs)
	cfg.Hidden = cmp.Or(cfg.Hidden, def.Hidden)
	cfg.Context = cmp.Or(cfg.Context, def.Context)
	cfg.Context = max(cfg.Context, 0)
	cfg.LearningRate = cmp.Or(cfg.LearningRate, def.LearningRate)
	cfg.Temperature = cmp.Or(cfg.Temperature, def.Temperature)
	cfg.MaxJobs = cmp.Or(cfg.MaxJobs, def.MaxJobs)
	cfg.MaxMachines = cmp.Or(cfg.MaxMachines, def.MaxMachines)
	if cfg.MaxJobs < 3 || cfg.MaxJobs > MaxExactJobs || cfg.MaxMachines < 2 {
		return nil, TrainReport{}, fmt.Errorf("%w: training sizes %d jobs × %d machines (want 3..%d jobs, ≥ 2 machines)", ErrInvalid, cfg.MaxJobs, cfg.MaxMachines, MaxExactJobs)
	}
	rng := rand.New(rand.NewSource(cfg.Seed))
	net := newNetwork(rng, cfg.Hidden, cfg.Context)
	opt := newAdam(net, cfg.LearningRate)
	var data []sample
	next := int64(TrainSeedOffset) + cfg.Seed*1_000_003
	for round := 0; round <= cfg.Rounds; round++ {
		for k := 0; k < cfg.Instances; k++ {
			irng := rand.New(rand.NewSource(next))
			next++
			n, m := cfg.MaxJobs, cfg.MaxMachines
			if irng.Intn(2) == 0 {
				n, m = 3+irng.Intn(cfg.MaxJobs-2), 2+irng.Intn(cfg.MaxMachines-1)
			}
			in := Random(irng, n, m)
			var follow Policy
			if round > 0 {
				follow = Learned{Network: net}
			}
			got, err := label(in, follow, cfg.Temperature)
			if err != nil {
				return nil, TrainReport{}, err
			}
			data = append(data, got...)
		}
		for e := 0; e < cfg.Epochs; e++ {
			rng.Shuffle(len(data), func(a, b int) { data[a], data[b] = data[b], data[a] })
			const batch = 32
			for b := 0; b < len(data); b += batch {
				opt.step(net, data[b:min(b+batch, len(data))])
			}
		}
	}
	right := 0
	for _, d := range data {
		if argmax(net.Scores(d.feats)) == d.label {
			right++
		}
	}
	return net, TrainReport{States: len(data), Accuracy: float64(right) / float64(max(1, len(data)))}, nil
}

// label walks in with follow (the exact solver when nil) and labels every
// state with more than one feasible action.
func label(in Instance, follow Policy, temperature float64) ([]sample, error) {
	s, err := Start(in)
	if err != nil {
		return nil, err
	}
	var out []sample
	for !s.Done() {
		acts, feats := Candidates(s)
		best := 0
		target := make([]float64, len(acts))
		if temperature > 0 && len(acts) > 1 {
			q := make([]float64, len(acts))
			for c, a := range acts {
				next := s.Clone()
				if err := next.Step(a); err != nil {
					return nil, err
				}
				_, cost, err := OptimalFrom(next)
				if err != nil {
					return nil, err
				}
				if q[c] = cost.Total(); q[c] < q[best] {
					best = c
				}
			}
			sum := 0.0
			for c := range q {
				target[c] = math.Exp(-(q[c] - q[best]) / (temperature * math.Max(q[best], 1e-9)))
				sum += target[c]
			}
			for c := range target {
				target[c] /= sum
			}
		} else {
			want, err := optimalAction(s)
			if err != nil {
				return nil, err
			}
			for c, a := range acts {
				if a == want {
					best = c
				}
			}
			target[best] = 1
		}
		if len(acts) > 1 {
			out = append(out, sample{feats: feats, target: target, label: best})
		}
		a := acts[best]
		if follow != nil {
			a = follow.Decide(s)
		}
		if err := s.Step(a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func newNetwork(rng *rand.Rand, hidden, context int) *Network {
	n := shaped(hidden, context)
	for _, row := range n.WC {
		for f := range row {
			row[f] = rng.NormFloat64() / math.Sqrt(NumFeatures)
		}
	}
	for h, row := range n.W1 {
		for f := range row {
			row[f] = rng.NormFloat64() / math.Sqrt(float64(len(row)))
		}
		n.W2[h] = rng.NormFloat64() / math.Sqrt(float64(hidden))
	}
	return n
}

// shaped returns a network of zeros with the given sizes.
func shaped(hidden, context int) *Network {
	n := &Network{FeatureVersion: FeatureVersion, Context: context, Hidden: hidden, WC: make([][]float64, context), BC: make([]float64, context),
		W1: make([][]float64, hidden), B1: make([]float64, hidden), W2: make([]float64, hidden), B2: make([]float64, 1)}
	for k := range n.WC {
		n.WC[k] = make([]float64, NumFeatures)
	}
	for k := range n.W1 {
		n.W1[k] = make([]float64, NumFeatures+context)
	}
	return n
}

// adam holds Adam's moments in networks shaped like the one trained.
type adam struct {
	lr, b1, b2, eps float64
	t               int
	m, v, g         *Network
}

func newAdam(n *Network, lr float64) *adam {
	return &adam{lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8, m: shaped(n.Hidden, n.Context), v: shaped(n.Hidden, n.Context), g: shaped(n.Hidden, n.Context)}
}

// step takes one Adam step on the mean cross-entropy of a batch.
func (o *adam) step(n *Network, batch []sample) {
	grads := o.g.params()
	for _, p := range grads {
		clear(p)
	}
	for _, d := range batch {
		f := n.forward(d.feats)
		top := f.scores[argmax(f.scores)]
		sum := 0.0
		ds := make([]float64, len(f.scores))
		for c, s := range f.scores {
			ds[c] = math.Exp(s - top)
			sum += ds[c]
		}
		for c := range ds {
			ds[c] = (ds[c]/sum - d.target[c]) / float64(len(batch))
		}
		n.backward(f, ds, o.g)
	}
	o.t++
	c1 := 1 - math.Pow(o.b1, float64(o.t))
	c2 := 1 - math.Pow(o.b2, float64(o.t))
	ms, vs := o.m.params(), o.v.params()
	for q, p := range n.params() {
		g, m, v := grads[q], ms[q], vs[q]
		for k := range p {
			m[k] = o.b1*m[k] + (1-o.b1)*g[k]
			v[k] = o.b2*v[k] + (1-o.b2)*g[k]*g[k]
			p[k] -= o.lr * (m[k] / c1) / (math.Sqrt(v[k]/c2) + o.eps)
		}
	}
}
