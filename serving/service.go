package serving

import (
	"errors"
	"fmt"
	"time"

	"github.com/goodsched/goodsched/accel"
)

// Errors returned by this package; they are wrapped with the field, row or
// key at fault, so test with errors.Is.
var (
	// ErrInvalidService reports a Service or SLO that cannot be served.
	ErrInvalidService = errors.New("serving: invalid service")
	// ErrInvalidTrace reports a request trace that cannot be replayed.
	ErrInvalidTrace = errors.New("serving: invalid trace")
	// ErrNoProfile reports a Profile with no point for the phase asked, or
	// no Profile for a (model, type).
	ErrNoProfile = errors.New("serving: no profile point")
	// ErrInvalidReport reports a replica Report or Metrics that makes no sense.
	ErrInvalidReport = errors.New("serving: invalid report")
)

// SLO is a service's latency objective, met in a window when both
// percentiles of the requests that arrived in it are at most the targets.
type SLO struct {
	// TTFTP90 is the target 90th percentile of the time to first token.
	TTFTP90 time.Duration `json:"ttft_p90"`
	// TPOTP90 is the target 90th percentile of the time per output token
	// after the first: (last token − first token) / (output tokens − 1).
	TPOTP90 time.Duration `json:"tpot_p90"`
}

// Validate returns an ErrInvalidService error naming the first target that
// is not positive.
func (s SLO) Validate() error {
	if s.TTFTP90 <= 0 {
		return fmt.Errorf("%w: slo ttft_p90 %v must be positive", ErrInvalidService, s.TTFTP90)
	}
	if s.TPOTP90 <= 0 {
		return fmt.Errorf("%w: slo tpot_p90 %v must be positive", ErrInvalidService, s.TPOTP90)
	}
	return nil
}

// Service is one inference service: replicas of one model on one
// accelerator type, each of GPUsPerReplica devices.
type Service struct {
	// Name identifies the service.
	Name string `json:"name"`
	// Model names the model served, for example "llama2-70b".
	Model string `json:"model"`
	// GPUType is the accelerator type of every replica.
	GPUType accel.TypeKey `json:"gpu_type"`
	// GPUsPerReplica is the devices one replica holds (tensor parallelism);
	// 0 means 1.
	GPUsPerReplica int `json:"gpus_per_replica,omitempty"`
	// SLO is the latency objective.
	SLO SLO `json:"slo"`
	// Startup is the time from asking for a replica to its first request
	// (scheduling, image pull, weight loading); GPUs are held meanwhile.
	Startup time.Duration `json:"startup"`
	// MinReplicas is the floor of every decision; 0 means 1 (no scale to zero).
	MinReplicas int `json:"min_replicas,omitempty"`
	// MaxReplicas is the ceiling of every decision; 0 means no ceiling.
	MaxReplicas int `json:"max_replicas,omitempty"`
}

// Validate returns an ErrInvalidService error naming the first bad field.
func (s Service) Validate() error {
	if s.Model == "" {
		return fmt.Errorf("%w: model is empty", ErrInvalidService)
	}
	if s.GPUType != "" && !accel.ValidTypeKey(string(s.GPUType)) {
		return fmt.Errorf("%w: gpu_type %q is not a type key", ErrInvalidService, s.GPUType)
	}
	if s.GPUsPerReplica < 0 {
		return fmt.Errorf("%w: gpus_per_replica %d is negative", ErrInvalidService, s.GPUsPerReplica)
	}
	if s.Startup < 0 {
		return fmt.Errorf("%w: startup %v is negative", ErrInvalidService, s.Startup)
	}
	if s.MinReplicas < 0 || s.MaxReplicas < 0 {
		return fmt.Errorf("%w: min_replicas %d / max_replicas %d negative", ErrInvalidService, s.MinReplicas, s.MaxReplicas)
	}
	if s.MaxReplicas > 0 && s.MaxReplicas < s.minReplicas() {
		return fmt.Errorf("%w: max_replicas %d below min_replicas %d", ErrInvalidService, s.MaxReplicas, s.minReplicas())
	}
	return s.SLO.Validate()
}

// GPUs is the devices one replica holds.
func (s Service) GPUs() int { return max(1, s.GPUsPerReplica) }

func (s Service) minReplicas() int { return max(1, s.MinReplicas) }

// Clamp bounds a replica count by MinReplicas and MaxReplicas.
func (s Service) Clamp(n int) int {
	n = max(n, s.minReplicas())
	if s.MaxReplicas > 0 {
		n = min(n, s.MaxReplicas)
	}
	return n
}
