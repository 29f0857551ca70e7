// Command learned holds the learned unrelated-machines policy of package
// unrelated against the exact solver and the paper's dispatching rule, and
// trains it; it also measures the simulator's step-wise environment for
// learned policies (package scheduler/sim/env).
//
//	go run ./examples/learned -json
//	go run ./examples/learned -train -out unrelated/weights.json
//
// Evaluation draws -small random instances of 8 jobs × 4 machines (seeds
// 1, 2, …; training uses seeds ≥ unrelated.TrainSeedOffset, so none of
// them is in the training set), solves each exactly and schedules it with
// the learned policy and the rule; then -large instances of 100 jobs × 10
// machines (too large for the exact solver), where only the learned policy
// and the rule are compared.
//
// Flags:
//
//	-json          print one JSON object: gap_learned_8x4 and gap_rule_8x4
//	               (mean of cost/optimum − 1 over the small instances),
//	               gap_learned_optimal_end_8x4 (the same for the network
//	               with the paper's optimal end: exact below 3 pending jobs),
//	               win_rate_100x10 (share of large instances where the
//	               learned policy's cost is strictly lower than the rule's),
//	               mean_gap_rule_over_learned_100x10 (mean of rule/learned
//	               − 1 there), instance counts and the exact solver's mean
//	               time per small instance; and the step-wise simulator
//	               environment's figures (package scheduler/sim/env, FIFO
//	               as the agent on Pollux's default workload: 16 × 4 T4,
//	               its eight workloads): env_steps_per_s (steps over the
//	               wall time inside Reset and Step, best pass; CPU
//	               time with -clock cpu), env_cpu_steps_per_s (always
//	               over CPU time), env_clock_cpu (1 with -clock cpu),
//	               env_fifo_matches_sim (every episode's sim.Result equals
//	               sim.Run's with FIFO), env_steps, env_episodes
//	-env-workloads N  default workloads the environment plays (default 8; 0 = skip)
//	-env-passes N  passes over them (default 3)
//	-clock C       what env_steps_per_s times: wall (default) or cpu
//	               (the process's CPU time, which other processes on a
//	               busy machine do not skew)
//	-small N       small instances (default 1000)
//	-large N       large instances (default 100)
//	-weights FILE  a network written by -train (default: the shipped one)
//	-paper FILE    also evaluate the paper's own test states (JSON lines
//	               written by paperdata.py from its Data/DataSet_99): the
//	               exact solver's Qmin/Q against the paper's brute-force
//	               targets, and the policies' cost to go from each state
//	               (paper_* keys)
//	-train         train with unrelated.DefaultTrainConfig instead (-seed,
//	               -instances, -rounds, -temperature, -hidden, -epochs,
//	               -context override it) and write the network
//	               to -out (default stdout); then evaluate it
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"time"

	"github.com/goodsched/goodsched/unrelated"
)

// Result is what -json prints.
type Result struct {
	GapLearned8x4      float64 `json:"gap_learned_8x4"`
	GapRule8x4         float64 `json:"gap_rule_8x4"`
	GapOptimalEnd8x4   float64 `json:"gap_learned_optimal_end_8x4"`
	WinRate100x10      float64 `json:"win_rate_100x10"`
	RuleOverLearned    float64 `json:"mean_gap_rule_over_learned_100x10"`
	Small              int     `json:"instances_8x4"`
	Large              int     `json:"instances_100x10"`
	ExactMsPerInstance float64 `json:"exact_ms_per_8x4_instance"`
	EnvResult
	*PaperResult
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "learned:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("learned", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	small := fs.Int("small", 1000, "random 8×4 instances held against the exact optimum")
	large := fs.Int("large", 100, "random 100×10 instances where learned meets the rule")
	weights := fs.String("weights", "", "network file (default: the shipped weights)")
	train := fs.Bool("train", false, "train a network first (unrelated.DefaultTrainConfig)")
	out := fs.String("out", "", "with -train: write the network here (default stdout)")
	seed := fs.Int64("seed", 0, "with -train: override the config's seed")
	instances := fs.Int("instances", 0, "with -train: override instances per round")
	rounds := fs.Int("rounds", 0, "with -train: override DAgger rounds")
	temperature := fs.Float64("temperature", 0, "with -train: override the cost-sensitive targets' temperature (negative = hard labels)")
	hidden := fs.Int("hidden", 0, "with -train: override the hidden layer's width")
	epochs := fs.Int("epochs", 0, "with -train: override the epochs per round")
	paper := fs.String("paper", "", "JSON lines of the paper's test states (from paperdata.py) to evaluate too")
	context := fs.Int("context", 0, "with -train: override the context width (negative = none)")
	envWorkloads := fs.Int("env-workloads", 8, "Pollux default workloads the environment plays FIFO on (env_* keys; 0 = skip)")
	envPasses := fs.Int("env-passes", 3, "passes over them; env_steps_per_s is the fastest")
	clockName := fs.String("clock", "wall", "what env_steps_per_s times: wall (elapsed) or cpu (this process's user+system CPU time, which a busy machine does not skew; Unix)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *small < 1 || *large < 1 {
		return fmt.Errorf("-small and -large must be ≥ 1")
	}
	if *envWorkloads < 0 || *envPasses < 1 {
		return fmt.Errorf("-env-workloads must be ≥ 0 and -env-passes ≥ 1")
	}
	if *clockName != "wall" && *clockName != "cpu" {
		return fmt.Errorf("-clock %q: want wall or cpu", *clockName)
	}
	if *clockName == "cpu" && cpuTime() == 0 {
		return fmt.Errorf("-clock cpu: not measured on this platform")
	}
	var net *unrelated.Network
	var err error
	switch {
	case *train:
		cfg := unrelated.DefaultTrainConfig
		if *seed != 0 {
			cfg.Seed = *seed
		}
		if *instances != 0 {
			cfg.Instances = *instances
		}
		if *rounds != 0 {
			cfg.Rounds = *rounds
		}
		if *temperature != 0 {
			cfg.Temperature = *temperature
		}
		if *hidden != 0 {
			cfg.Hidden = *hidden
		}
		if *epochs != 0 {
			cfg.Epochs = *epochs
		}
		if *context != 0 {
			cfg.Context = *context
		}
		start := time.Now()
		var rep unrelated.TrainReport
		net, rep, err = unrelated.Train(cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "trained on %d states in %v, imitation accuracy %.3f\n", rep.States, time.Since(start).Round(time.Millisecond), rep.Accuracy)
		w := stdout
		if *out != "" {
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		}
		if err := net.Write(w); err != nil {
			return err
		}
		if *out == "" {
			return nil
		}
	case *weights != "":
		f, err := os.Open(*weights)
		if err != nil {
			return err
		}
		defer f.Close()
		if net, err = unrelated.ReadNetwork(f); err != nil {
			return err
		}
	default:
		if net, err = unrelated.Shipped(); err != nil {
			return err
		}
	}
	res, err := evaluate(unrelated.Learned{Network: net}, *small, *large)
	if err != nil {
		return err
	}
	if *envWorkloads > 0 {
		fmt.Fprintf(stderr, "environment: FIFO through it on %d Pollux workload(s), %d pass(es)\n", *envWorkloads, *envPasses)
		if res.EnvResult, err = measureEnv(*envWorkloads, *envPasses, *clockName == "cpu"); err != nil {
			return fmt.Errorf("environment: %w", err)
		}
	}
	if *paper != "" {
		f, err := os.Open(*paper)
		if err != nil {
			return err
		}
		defer f.Close()
		pr, err := evaluatePaper(f, unrelated.Learned{Network: net})
		if err != nil {
			return err
		}
		res.PaperResult = &pr
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "8 jobs × 4 machines, %d instances: learned %.2f%% above optimal (%.2f%% with the optimal end), rule %.2f%% (exact solver %.2f ms each)\n",
		res.Small, 100*res.GapLearned8x4, 100*res.GapOptimalEnd8x4, 100*res.GapRule8x4, res.ExactMsPerInstance)
	fmt.Fprintf(stdout, "100 jobs × 10 machines, %d instances: learned beats the rule on %.1f%%; the rule costs %.2f%% more on average\n",
		res.Large, 100*res.WinRate100x10, 100*res.RuleOverLearned)
	if res.Episodes > 0 {
		fmt.Fprintf(stdout, "environment, Pollux's default workload (%d episodes, %d steps): %.0f steps/s (%.0f per CPU-second); FIFO through it matches the simulator's: %v\n",
			res.Episodes, res.Steps, res.StepsPerSecond, res.CPUStepsPerSecond, res.FIFOMatchesSim)
	}
	if p := res.PaperResult; p != nil {
		fmt.Fprintf(stdout, "paper's test states, %d: exact solver matches its brute-force targets on %.1f%% (largest Qmin/Q error %.2g); cost to go above optimal: learned %.2f%%, rule %.2f%%\n",
			p.States, 100*p.SolverAgreement, p.MaxRatioError, 100*p.GapLearned, 100*p.GapRule)
	}
	return nil
}

func evaluate(learned unrelated.Learned, small, large int) (Result, error) {
	res := Result{Small: small, Large: large}
	var exactTime time.Duration
	for k := 1; k <= small; k++ {
		in := unrelated.Random(rand.New(rand.NewSource(int64(k))), 8, 4)
		start := time.Now()
		_, opt, err := unrelated.Optimal(in)
		exactTime += time.Since(start)
		if err != nil {
			return res, err
		}
		_, l, err := unrelated.Run(in, learned)
		if err != nil {
			return res, err
		}
		_, r, err := unrelated.Run(in, unrelated.Rule{})
		if err != nil {
			return res, err
		}
		res.GapLearned8x4 += l.Total()/opt.Total() - 1
		_, e, err := unrelated.Run(in, unrelated.Learned{Network: learned.Network, OptimalEnd: 2})
		if err != nil {
			return res, err
		}
		res.GapOptimalEnd8x4 += e.Total()/opt.Total() - 1
		res.GapRule8x4 += r.Total()/opt.Total() - 1
	}
	res.GapLearned8x4 /= float64(small)
	res.GapRule8x4 /= float64(small)
	res.GapOptimalEnd8x4 /= float64(small)
	res.ExactMsPerInstance = float64(exactTime.Microseconds()) / 1000 / float64(small)
	wins := 0
	for k := 1; k <= large; k++ {
		in := unrelated.Random(rand.New(rand.NewSource(int64(k))), 100, 10)
		_, l, err := unrelated.Run(in, learned)
		if err != nil {
			return res, err
		}
		_, r, err := unrelated.Run(in, unrelated.Rule{})
		if err != nil {
			return res, err
		}
		if l.Total() < r.Total() {
			wins++
		}
		res.RuleOverLearned += r.Total()/l.Total() - 1
	}
	res.WinRate100x10 = float64(wins) / float64(large)
	res.RuleOverLearned /= float64(large)
	return res, nil
}
