package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/goodsched/goodsched/examples/kubernetes/client"
	"github.com/goodsched/goodsched/goodput"
)

// Names of the ConfigMap that holds a job's measurements.
const (
	// StateLabel marks the ConfigMaps that hold report state (value
	// StateLabelValue); the scheduler watches only those.
	StateLabel      = "goodsched.io/report"
	StateLabelValue = "state"
	// JobAnnotation on the ConfigMap names the job key it belongs to.
	JobAnnotation = "goodsched.io/job"
	// JobUIDAnnotation on the ConfigMap is the UID of the batch/v1 Job it
	// belongs to (absent for a pod group).
	JobUIDAnnotation = "goodsched.io/job-uid"
	// DefaultStateNamespace is Config.StateNamespace's default: the
	// scheduler's own namespace.
	DefaultStateNamespace = "goodsched-system"
	// StateKey is the ConfigMap data key holding the JSON state.
	StateKey = "state.json"
	// statePrefix starts every state ConfigMap's name.
	statePrefix = "goodsched-report-"
)

// MaxConfigs bounds the configurations stored per job, so that a state
// ConfigMap stays far below the API server's 1 MiB object limit.
const MaxConfigs = 2048

// ErrBadReport is wrapped by errors about a report's content (HTTP 400).
var ErrBadReport = errors.New("report: bad report")

// State is what the scheduler keeps of one job's measurements: the sums it
// needs to recompute every mean exactly, so merging reports never loses
// information and a model refitted from a stored State is the model fitted
// before.
type State struct {
	// Job is the job key.
	Job string `json:"job"`
	// Limits are the job's batch-size limits from its latest report.
	Limits goodput.Limits `json:"limits"`
	// Grad are the latest gradient statistics (zero = none yet).
	Grad goodput.GradStats `json:"grad"`
	// Configs are the aggregated measurements, sorted by key.
	Configs []Measured `json:"configs"`
	// Reports counts the acknowledged reports.
	Reports int64 `json:"reports"`
	// UID is the UID of the Job the state belongs to ("" for a pod
	// group); it is kept in the ConfigMap's JobUIDAnnotation.
	UID string `json:"-"`
}

// Measured aggregates the measured steps of one configuration.
type Measured struct {
	// Type is the accelerator type the steps ran on (goodput.AnyType when
	// unknown).
	Type     string `json:"type"`
	Nodes    int    `json:"nodes"`
	Replicas int    `json:"replicas"`
	Local    int    `json:"local"`
	Accum    int    `json:"accum"`
	// OptimCount optimizer steps took OptimSum seconds in all (SyncSum of
	// it synchronising, over SyncCount of them); AccumCount accumulation
	// passes took AccumSum seconds.
	OptimCount int64   `json:"optim_count"`
	OptimSum   float64 `json:"optim_sum"`
	AccumCount int64   `json:"accum_count,omitempty"`
	AccumSum   float64 `json:"accum_sum,omitempty"`
	SyncCount  int64   `json:"sync_count,omitempty"`
	SyncSum    float64 `json:"sync_sum,omitempty"`
}

func cmpConfig(a, b Measured) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Replicas, b.Replicas),
		cmp.Compare(a.Local, b.Local), cmp.Compare(a.Accum, b.Accum))
}

// StateName returns the name of a job's state ConfigMap (in
// Config.StateNamespace): goodsched-report-job-<uid> for a batch/v1 Job, so
// that a Job re-created under the same name starts clean, and
// goodsched-report-group-<hash of the job key> for a pod group, valid
// whatever label value names the group.
func StateName(job string, jobUID types.UID) string {
	if jobUID != "" && validName(string(jobUID)) {
		return statePrefix + "job-" + string(jobUID)
	}
	h := sha256.Sum256([]byte(job))
	return statePrefix + "group-" + hex.EncodeToString(h[:20])
}

// validName reports whether s is a valid DNS-1123 subdomain name part
// (lower-case alphanumerics and '-'), as a Job's UID is.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return false
		}
	}
	return true
}

// validateReport checks a report's content; errors wrap ErrBadReport.
func validateReport(r *client.Report, first bool) error {
	if r.Limits == nil && first {
		return fmt.Errorf("%w: limits are required in a job's first report", ErrBadReport)
	}
	if r.Limits != nil {
		if err := r.Limits.Validate(); err != nil {
			return fmt.Errorf("%w: limits: %w", ErrBadReport, err)
		}
	}
	if len(r.Steps) > client.MaxSteps {
		return fmt.Errorf("%w: %d steps entries (at most %d)", ErrBadReport, len(r.Steps), client.MaxSteps)
	}
	for i, s := range r.Steps {
		if s.Nodes < 1 || s.Replicas < s.Nodes || s.Local < 1 || s.Accum < 0 || s.Count < 1 || s.AccumCount < 0 ||
			(s.Accum == 0 && s.AccumCount > 0) {
			return fmt.Errorf("%w: steps[%d]: impossible shape or counts", ErrBadReport, i)
		}
		if !finite(s.OptimSeconds, s.AccumSeconds, s.SyncSeconds) || !(s.OptimSeconds > 0) ||
			(s.AccumCount > 0 && !(s.AccumSeconds > 0)) || s.SyncSeconds >= s.OptimSeconds {
			return fmt.Errorf("%w: steps[%d]: times must be finite, optim > 0, sync < optim", ErrBadReport, i)
		}
	}
	if r.Grad != nil {
		if err := r.Grad.Validate(); err != nil {
			return fmt.Errorf("%w: grad: %w", ErrBadReport, err)
		}
	}
	return nil
}

// merge folds a validated report measured on typ into s.
func (s *State) merge(r *client.Report, typ string) error {
	if r.Limits != nil {
		s.Limits = *r.Limits
	}
	if r.Grad != nil {
		s.Grad = *r.Grad
	}
	for _, st := range r.Steps {
		c := Measured{Type: typ, Nodes: st.Nodes, Replicas: st.Replicas, Local: st.Local, Accum: st.Accum}
		i, found := slices.BinarySearchFunc(s.Configs, c, cmpConfig)
		if !found {
			if len(s.Configs) >= MaxConfigs {
				return fmt.Errorf("%w: the job already has %d configurations stored", ErrBadReport, MaxConfigs)
			}
			s.Configs = slices.Insert(s.Configs, i, c)
		}
		p := s.Configs[i]
		var ok1 bool
		p.OptimCount, ok1 = addCount(p.OptimCount, st.Count)
		p.OptimSum += st.OptimSeconds * float64(st.Count)
		ok2, ok3 := true, true
		if st.AccumCount > 0 {
			p.AccumCount, ok2 = addCount(p.AccumCount, st.AccumCount)
			p.AccumSum += st.AccumSeconds * float64(st.AccumCount)
		}
		if st.SyncSeconds > 0 {
			p.SyncCount, ok3 = addCount(p.SyncCount, st.Count)
			p.SyncSum += st.SyncSeconds * float64(st.Count)
		}
		if !ok1 || !ok2 || !ok3 || !finite(p.OptimSum, p.AccumSum, p.SyncSum) {
			return fmt.Errorf("%w: the counts or time sums of %+v would overflow", ErrBadReport, c)
		}
		s.Configs[i] = p
	}
	s.Reports++
	return nil
}

// maxCount bounds a stored count so that sums of counts never overflow.
const maxCount = 1 << 53

// addCount adds n to a stored count, false when the sum would pass
// maxCount.
func addCount(sum int64, n int) (int64, bool) {
	if n < 0 || int64(n) > maxCount-sum {
		return sum, false
	}
	return sum + int64(n), true
}

// Observations returns, per accelerator type, the goodput observations the
// state's configurations give: configurations that differ only in
// accumulation steps are pooled (step counts weight the means). A pass that
// does not synchronise takes AccumSum/AccumCount when accumulation passes
// were measured, otherwise the optimizer step less its sync time (the whole
// optimizer step when sync was not measured).
func (s *State) Observations() map[string][]goodput.Observation {
	type pool struct {
		optimN, accumN, syncN       int64
		optimSum, accumSum, syncSum float64
	}
	type key struct {
		typ                    string
		nodes, replicas, local int
	}
	pools := map[key]*pool{}
	var keys []key
	for _, c := range s.Configs {
		k := key{c.Type, c.Nodes, c.Replicas, c.Local}
		p := pools[k]
		if p == nil {
			p = &pool{}
			pools[k] = p
			keys = append(keys, k)
		}
		p.optimN += c.OptimCount
		p.optimSum += c.OptimSum
		p.accumN += c.AccumCount
		p.accumSum += c.AccumSum
		p.syncN += c.SyncCount
		p.syncSum += c.SyncSum
	}
	out := map[string][]goodput.Observation{}
	for _, k := range keys { // Configs are sorted, so keys are too
		p := pools[k]
		if p.optimN == 0 {
			continue
		}
		optim := p.optimSum / float64(p.optimN)
		accum := optim
		switch {
		case p.accumN > 0:
			accum = p.accumSum / float64(p.accumN)
		case p.syncN > 0:
			accum = optim - p.syncSum/float64(p.syncN)
		}
		o := goodput.Observation{Nodes: k.nodes, Replicas: k.replicas, Local: k.local, AccumSeconds: accum, OptimSeconds: optim}
		if o.Validate() != nil {
			continue
		}
		out[k.typ] = append(out[k.typ], o)
	}
	return out
}

func encodeState(s *State) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

func decodeState(data string) (*State, error) {
	var s State
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return nil, err
	}
	slices.SortFunc(s.Configs, cmpConfig)
	return &s, nil
}
