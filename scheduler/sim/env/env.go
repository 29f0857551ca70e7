package env

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/sim"
)

// Errors returned by this package, wrapped with the field, target or line
// at fault: test with errors.Is.
var (
	// ErrInvalid reports a bad Config.
	ErrInvalid = errors.New("env: invalid config")
	// ErrBadAction reports an action the round cannot take; the episode
	// is unchanged.
	ErrBadAction = errors.New("env: bad action")
	// ErrNoEpisode reports a Step before Reset or after the episode ended.
	ErrNoEpisode = errors.New("env: no episode in progress")
	// ErrVersion reports a message of a schema version this package does
	// not speak (Serve).
	ErrVersion = errors.New("env: unsupported schema version")
	// ErrMalformed reports a protocol line that is not a valid message
	// (Serve).
	ErrMalformed = errors.New("env: malformed message")
	// ErrEpisode reports that the simulation itself failed (its error is
	// wrapped too); the episode is over.
	ErrEpisode = errors.New("env: episode failed")
)

// Version is the schema version of the observations, actions and
// protocol messages this package speaks.
const Version = 1

// Schema names the observation schema, version included.
const Schema = "goodsched.env/v1"

// Reward selects what Step rewards (see the package documentation).
type Reward int

const (
	// RewardJCT pays minus the job-hours spent in the system.
	RewardJCT Reward = iota
	// RewardGoodput pays the speedup-hours of the jobs holding devices.
	RewardGoodput
	// RewardMakespan pays minus the elapsed hours.
	RewardMakespan
)

var rewardNames = [...]string{RewardJCT: "jct", RewardGoodput: "goodput", RewardMakespan: "makespan"}

// String returns the reward's name: "jct", "goodput" or "makespan".
func (r Reward) String() string {
	if r < 0 || int(r) >= len(rewardNames) {
		return fmt.Sprintf("Reward(%d)", int(r))
	}
	return rewardNames[r]
}

// ParseReward returns the Reward named s ("jct", "goodput", "makespan").
func ParseReward(s string) (Reward, error) {
	for r, n := range rewardNames {
		if n == s {
			return Reward(r), nil
		}
	}
	return 0, fmt.Errorf("%w: Reward %q (want jct, goodput or makespan)", ErrInvalid, s)
}

// Config is an environment. The zero value of every optional field is a
// documented default.
type Config struct {
	// Sim is the simulation each episode runs, as for sim.Run, with the
	// agent as its policy: Policy, Scheduler and Progress must be unset
	// (Placer may be set). Its Jobs are the workload unless Workloads is
	// set; its Faults.Seed is replaced by the episode's seed.
	Sim sim.Config
	// Workloads, if set, are the workloads episodes draw from: Reset(seed)
	// plays Workloads[seed mod len(Workloads)].
	Workloads [][]sim.JobSpec
	// Reward is what Step pays (default RewardJCT).
	Reward Reward
}

// Target is one job's target in an Action: Count devices of Type, on at
// most MaxNodes nodes (0 = any), as scheduler.Target.
type Target struct {
	Job      string `json:"job"`
	Type     string `json:"type,omitempty"`
	Count    int    `json:"count"`
	MaxNodes int    `json:"max_nodes,omitempty"`
}

// Action is the agent's decision for one round: at most one target per
// job; a job left out gets no devices.
type Action struct {
	Targets []Target `json:"targets"`
}

// ActionOf converts a scheduler.Policy's targets into an Action (their
// reasons, notes and shares are dropped).
func ActionOf(targets []scheduler.Target) Action {
	a := Action{Targets: make([]Target, len(targets))}
	for i, t := range targets {
		a.Targets[i] = Target{Job: t.Job, Type: string(t.Type), Count: t.Count, MaxNodes: t.MaxNodes}
	}
	return a
}

// Step is what Env.Step returns.
type Step struct {
	// Observation is the next round's view (empty jobs when Done).
	Observation Observation `json:"observation"`
	// Reward is paid for the time between the decision and the next one.
	Reward float64 `json:"reward"`
	// Done reports that the simulation ended (every job completed, the
	// horizon passed, or nothing can change any more).
	Done bool `json:"done"`
}

// Env is a step-wise environment over the simulator. Build one with New.
// An Env is not safe for concurrent use.
type Env struct {
	cfg Config
	ep  *episode
}

// episode is one simulation suspended between decisions.
type episode struct {
	reward Reward
	start  time.Time
	next   func() (*scheduler.Round, bool)
	stop   func()
	yield  func(*scheduler.Round) bool
	round  *scheduler.Round
	// targets are what the agent policy returns when resumed.
	targets []scheduler.Target
	steps   int
	devPos  map[string]int // see observe
	done    bool
	res     sim.Result
	err     error
	// reward accounting: jobSec is the job-seconds in the system since
	// the last payout (from the simulator's per-round Status), inSys the
	// jobs in the system at the last Status, lastNow the time of the last
	// Status; paid the sum of rewards paid; decided the time of the last
	// decision.
	jobSec  float64
	inSys   int
	lastNow time.Duration
	paid    float64
	decided time.Duration
}

// errClosed ends a suspended simulation whose episode was closed.
var errClosed = errors.New("env: episode closed")

// agent is the policy an episode's simulation runs: it hands the round
// to the caller of Reset or Step and returns the targets it is given.
type agent struct{ ep *episode }

// Allocate implements scheduler.Policy.
func (a agent) Allocate(_ context.Context, r *scheduler.Round) ([]scheduler.Target, error) {
	if !a.ep.yield(r) {
		return nil, errClosed
	}
	return a.ep.targets, nil
}

// New validates cfg and returns an environment with no episode yet.
func New(cfg Config) (*Env, error) {
	s := cfg.Sim
	switch {
	case s.Policy != nil:
		return nil, fmt.Errorf("%w: Sim.Policy is set (the agent is the policy)", ErrInvalid)
	case s.Scheduler != nil:
		return nil, fmt.Errorf("%w: Sim.Scheduler is set (the agent is the policy)", ErrInvalid)
	case s.Progress != nil:
		return nil, fmt.Errorf("%w: Sim.Progress is set (the environment uses it)", ErrInvalid)
	case cfg.Reward < RewardJCT || cfg.Reward > RewardMakespan:
		return nil, fmt.Errorf("%w: Reward %d", ErrInvalid, int(cfg.Reward))
	case len(s.Jobs) == 0 && len(cfg.Workloads) == 0:
		return nil, fmt.Errorf("%w: neither Sim.Jobs nor Workloads has jobs", ErrInvalid)
	}
	for i, w := range cfg.Workloads {
		if len(w) == 0 {
			return nil, fmt.Errorf("%w: Workloads[%d] is empty", ErrInvalid, i)
		}
	}
	return &Env{cfg: cfg}, nil
}

// Reset ends any episode in progress and starts a new one with seed (see
// the package documentation), returning its first observation. An
// invalid simulation config fails here, wrapping sim's error.
func (e *Env) Reset(seed uint64) (Observation, error) {
	e.Close()
	cfg := e.cfg.Sim
	if n := uint64(len(e.cfg.Workloads)); n > 0 {
		cfg.Jobs = e.cfg.Workloads[seed%n]
	}
	cfg.Faults.Seed = seed
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC) // sim's default, needed for time_s
	}
	ep := &episode{reward: e.cfg.Reward, start: cfg.Start}
	cfg.Policy = agent{ep}
	cfg.Progress = ep.progress
	ep.next, ep.stop = iter.Pull(func(yield func(*scheduler.Round) bool) {
		ep.yield = yield
		ep.res, ep.err = sim.Run(context.Background(), cfg)
	})
	e.ep = ep
	st, err := ep.advance(false)
	if err != nil {
		e.Close()
		return Observation{}, err
	}
	return st.Observation, nil
}

// Step applies action to the current round and runs the simulation to
// the next decision. A bad action fails with ErrBadAction and changes
// nothing; a Step with no episode in progress fails with ErrNoEpisode; a
// failure of the simulation itself ends the episode with ErrEpisode.
func (e *Env) Step(action Action) (Step, error) {
	ep := e.ep
	if ep == nil || ep.done {
		return Step{}, ErrNoEpisode
	}
	tg, err := check(ep.round, action)
	if err != nil {
		return Step{}, err
	}
	ep.targets = tg
	return ep.advance(true)
}

// Round returns the scheduler.Round behind the current observation, for
// Go agents (a scheduler.Policy's Allocate can act on it); nil when no
// episode is in progress. It is valid until the next Step or Reset.
func (e *Env) Round() *scheduler.Round {
	if e.ep == nil || e.ep.done {
		return nil
	}
	return e.ep.round
}

// Steps returns how many decisions the current episode has made.
func (e *Env) Steps() int {
	if e.ep == nil {
		return 0
	}
	return e.ep.steps
}

// Result returns the simulator's result of the episode once it is done
// (ErrNoEpisode before).
func (e *Env) Result() (sim.Result, error) {
	if e.ep == nil || !e.ep.done || e.ep.err != nil {
		return sim.Result{}, ErrNoEpisode
	}
	return e.ep.res, nil
}

// Close ends the episode in progress, if any, and releases its suspended
// simulation. It always returns nil.
func (e *Env) Close() error {
	if e.ep != nil {
		e.ep.stop()
		e.ep = nil
	}
	return nil
}

// progress accounts each simulated round (sim.Config.Progress).
func (ep *episode) progress(s sim.Status) {
	ep.jobSec += float64(ep.inSys) * (s.Now - ep.lastNow).Seconds()
	ep.inSys = s.Submitted - s.Completed
	ep.lastNow = s.Now
}

// advance resumes the simulation until its next decision or its end and
// returns the step; decided reports that a decision was just made (Step;
// not the Reset that starts the episode).
func (ep *episode) advance(decided bool) (Step, error) {
	r, ok := ep.next()
	if decided {
		ep.steps++
	}
	if !ok {
		ep.done, ep.round = true, nil
		if ep.err != nil {
			return Step{}, fmt.Errorf("%w: %w", ErrEpisode, ep.err)
		}
		st := Step{Observation: Observation{Schema: Schema, Step: ep.steps, TimeSeconds: ep.endTime().Seconds(),
			Types: []TypeView{}, Devices: []DeviceView{}, Jobs: []JobView{}}, Done: true}
		st.Reward = ep.finalReward()
		ep.paid += st.Reward
		return st, nil
	}
	ep.round = r
	now := r.Input().Now.Sub(ep.start)
	obs, err := observe(r, ep.start, ep.steps, &ep.devPos)
	if err != nil {
		// An unusable speedup: the simulation cannot be observed.
		ep.stop()
		ep.done, ep.round = true, nil
		return Step{}, fmt.Errorf("%w: %w", ErrEpisode, err)
	}
	var st Step
	st.Observation = obs
	if decided {
		st.Reward = ep.stepReward(r, now)
	}
	ep.decided, ep.jobSec = now, 0
	ep.paid += st.Reward
	return st, nil
}

// stepReward is the reward for the stretch from the last decision to
// round r at now.
func (ep *episode) stepReward(r *scheduler.Round, now time.Duration) float64 {
	dt := (now - ep.decided).Hours()
	switch ep.reward {
	case RewardMakespan:
		return -dt
	case RewardGoodput:
		g := 0.0
		for _, j := range r.Jobs() {
			if len(j.Current) == 0 {
				continue
			}
			v, err := r.Speedup(j.Job.ID, j.CurrentType, j.CurrentNodes, len(j.Current))
			if err == nil {
				g += v
			}
		}
		return g * dt
	default:
		return -ep.jobSec / 3600
	}
}

// endTime is the virtual time the finished simulation ended at.
func (ep *episode) endTime() time.Duration {
	if u := ep.res.Utilization; len(u) > 0 {
		return u[len(u)-1].Time
	}
	return ep.lastNow
}

// finalReward is the last step's reward: the rest of the stretch, with
// the JCT and makespan returns corrected to the simulator's exact sums.
func (ep *episode) finalReward() float64 {
	switch ep.reward {
	case RewardMakespan:
		return -ep.res.Makespan.Hours() - ep.paid
	case RewardGoodput:
		return 0
	default:
		end := ep.endTime()
		total := 0.0
		for _, j := range ep.res.Jobs {
			switch {
			case j.Completed:
				total += j.JCT.Hours()
			case j.Submit <= end:
				total += (end - j.Submit).Hours()
			}
		}
		return -total - ep.paid
	}
}
