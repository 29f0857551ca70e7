// Package client is the trainer side of goodsched's measurement loop, for Go
// training programs: it posts a job's measured step times and gradient
// statistics to the scheduler's report endpoint and returns the batch plan
// the scheduler chose (per-GPU batch, accumulation steps, total batch) and
// its target replica count.
//
// A pod proves who it is with its projected ServiceAccount token (audience
// "goodsched"), read from TokenFile before every report so that rotated
// tokens are picked up. The endpoint is HTTPS; CAFile names the certificate
// authority that signed its serving certificate.
//
// Host contract, in steps:
//  1. Build a Client with New (or FromEnv inside a pod).
//  2. Time the training steps with a Meter: Begin before each pass, Accum
//     after a pass that does not synchronise, Optim after the optimizer step.
//  3. Every reporting period (AdaptDL reports every 30 s), call Report with
//     the Meter's Steps, the current gradient statistics and the job's batch
//     limits (required in the job's first report).
//  4. Train with the returned Plan. When Replicas differs from the number of
//     replicas the job runs on, the scheduler is about to resize it: keep
//     training until the pods change.
//
// The JSON types here are the wire format; the server in
// internal/report uses them too.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/goodsched/goodsched/goodput"
)

// Path is the report endpoint's URL path.
const Path = "/v1/report"

// Default file and environment names, as deploy/ and the README set them in
// a pod template.
const (
	// DefaultTokenFile is where the pod template mounts the projected
	// ServiceAccount token with audience "goodsched".
	DefaultTokenFile = "/var/run/secrets/goodsched/token"
	// DefaultCAFile is where the pod template mounts the CA certificate of
	// the report endpoint.
	DefaultCAFile = "/var/run/secrets/goodsched/ca.crt"
	// EnvURL, EnvJob, EnvTokenFile and EnvCAFile configure FromEnv.
	EnvURL       = "GOODSCHED_URL"
	EnvJob       = "GOODSCHED_JOB"
	EnvTokenFile = "GOODSCHED_TOKEN_FILE"
	EnvCAFile    = "GOODSCHED_CA_FILE"
)

// MaxRequestBytes is the largest report body the endpoint accepts.
const MaxRequestBytes = 64 << 10

// MaxSteps is the most Steps entries one report may carry.
const MaxSteps = 256

// Steps are the measured times of one configuration since the last report.
type Steps struct {
	// Nodes and Replicas: the shape the job ran on.
	Nodes    int `json:"nodes"`
	Replicas int `json:"replicas"`
	// Local is the per-GPU batch of one forward/backward pass; Accum the
	// accumulation passes per optimizer step (0 = none).
	Local int `json:"local"`
	Accum int `json:"accum"`
	// Count is the number of optimizer steps measured (≥ 1), and
	// OptimSeconds their mean time: the last (synchronising) pass plus the
	// optimizer step.
	Count        int     `json:"count"`
	OptimSeconds float64 `json:"optim_seconds"`
	// AccumCount is the number of accumulation passes measured and
	// AccumSeconds their mean time (0 when Accum is 0).
	AccumCount   int     `json:"accum_count,omitempty"`
	AccumSeconds float64 `json:"accum_seconds,omitempty"`
	// SyncSeconds, if known, is the mean part of OptimSeconds spent in
	// gradient synchronisation; without accumulation passes it gives the
	// pass time OptimSeconds − SyncSeconds.
	SyncSeconds float64 `json:"sync_seconds,omitempty"`
	// SyncCount is how many steps SyncSeconds averages; the Meter keeps it
	// for Restore, and it is not sent.
	SyncCount int `json:"-"`
}

// Report is one report from a job's pod.
type Report struct {
	// Job names the job: "namespace/name" of its batch/v1 Job, or
	// "namespace/group" of a goodsched.io/group pod group.
	Job string `json:"job"`
	// Limits are the job's batch-size limits; required in the first report.
	Limits *goodput.Limits `json:"limits,omitempty"`
	// Steps are the configurations measured since the last report.
	Steps []Steps `json:"steps,omitempty"`
	// Grad, if set, are the latest gradient statistics at Limits.InitBatch.
	Grad *goodput.GradStats `json:"grad,omitempty"`
	// Current, if set, is the batch plan the job trains with now; the
	// response then keeps it unless the scheduler's plan is more than 5%
	// better (goodput.Switch).
	Current *goodput.BatchPlan `json:"current,omitempty"`
	// Reconfigure asks, at one of the job's synchronisation points,
	// whether it should change its size (DMR: expand, shrink or none);
	// the response's Reconfigure answers. A report may carry nothing else
	// (Client.Reconfigure), even before the job's first measurements.
	Reconfigure bool `json:"reconfigure,omitempty"`
	// Error, if set, is the trainer's problem with the last plan it got
	// (a global batch its data loader cannot reach, a malformed plan): it
	// kept its current plan. The endpoint logs it; at most MaxErrorBytes.
	Error string `json:"error,omitempty"`
}

// MaxErrorBytes is the longest Report.Error the endpoint logs in full.
const MaxErrorBytes = 1024

// Response is the endpoint's answer to an acknowledged report.
type Response struct {
	// Plan is the batch plan to train with (zero before the scheduler
	// decided anything for the job).
	Plan goodput.BatchPlan `json:"plan"`
	// Replicas and Nodes are the scheduler's target for the job; Type the
	// accelerator type.
	Replicas int    `json:"replicas"`
	Nodes    int    `json:"nodes"`
	Type     string `json:"type,omitempty"`
	// Adaptive is true once the scheduler has a model of the job.
	Adaptive bool `json:"adaptive"`
	// Observations is the number of configurations stored for the job.
	Observations int `json:"observations"`
	// Reconfigure answers Report.Reconfigure (nil when not asked).
	Reconfigure *Reconfiguration `json:"reconfigure,omitempty"`
}

// Reconfiguration is the scheduler's answer to a job that asks whether to
// change its size (DMR, Iserte et al. 2018), consistent with the last
// round's plan and queue: Verdict "expand" (devices are free and no job
// waits for them: grow to To), "shrink" (a queued job could start if this
// one gave devices back: shrink to To) or "none" (keep To devices; To is 0
// when the job does not run). Reason says why, with the figures. The job
// applies it by resizing itself (a malleable job), or ignores it.
type Reconfiguration struct {
	Verdict string `json:"verdict"`
	To      int    `json:"to"`
	Reason  string `json:"reason"`
}

// ErrStatus is wrapped by Report's errors for a non-200 answer; test with
// errors.As on *StatusError for the code.
var ErrStatus = errors.New("goodsched client: report refused")

// StatusError is a non-200 answer of the endpoint.
type StatusError struct {
	Code int
	Body string
}

// Error returns the status code and the endpoint's message.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: HTTP %d: %s", ErrStatus, e.Code, strings.TrimSpace(e.Body))
}

// Unwrap makes errors.Is(err, ErrStatus) hold.
func (e *StatusError) Unwrap() error { return ErrStatus }

// Config configures New.
type Config struct {
	// URL is the endpoint's base URL, for example
	// https://goodsched-report.goodsched-system.svc:8443.
	URL string
	// Job is the job key ("namespace/name").
	Job string
	// TokenFile is the projected token's path; "" = DefaultTokenFile.
	TokenFile string
	// CAFile is the CA certificate (PEM) that signed the endpoint's
	// certificate; "" = DefaultCAFile. Ignored when HTTP is set.
	CAFile string
	// HTTP, if set, is used as is (its transport must trust the endpoint).
	HTTP *http.Client
	// Timeout bounds each report; 0 = 10 s. Ignored when HTTP is set.
	Timeout time.Duration
}

// Client posts reports. It is safe for concurrent use.
type Client struct {
	url, job, tokenFile string
	http                *http.Client
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("goodsched client: URL is empty")
	}
	if cfg.Job == "" || strings.Count(cfg.Job, "/") != 1 {
		return nil, fmt.Errorf("goodsched client: Job %q is not namespace/name", cfg.Job)
	}
	c := &Client{url: strings.TrimRight(cfg.URL, "/") + Path, job: cfg.Job, tokenFile: cfg.TokenFile, http: cfg.HTTP}
	if c.tokenFile == "" {
		c.tokenFile = DefaultTokenFile
	}
	if c.http == nil {
		caFile := cfg.CAFile
		if caFile == "" {
			caFile = DefaultCAFile
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("goodsched client: CAFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("goodsched client: CAFile %s holds no certificate", caFile)
		}
		timeout := cfg.Timeout
		if timeout == 0 {
			timeout = 10 * time.Second
		}
		c.http = &http.Client{Timeout: timeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		}}
	}
	return c, nil
}

// FromEnv builds a Client from GOODSCHED_URL, GOODSCHED_JOB and, if set,
// GOODSCHED_TOKEN_FILE and GOODSCHED_CA_FILE.
func FromEnv() (*Client, error) {
	return New(Config{URL: os.Getenv(EnvURL), Job: os.Getenv(EnvJob), TokenFile: os.Getenv(EnvTokenFile), CAFile: os.Getenv(EnvCAFile)})
}

// Job returns the job key the client reports for.
func (c *Client) Job() string { return c.job }

// Report posts r (its Job is set to the client's) and returns the
// endpoint's answer. A refusal is a *StatusError (401: bad token, 403: the
// pod is not the job's, 429: too many reports, 413: too large). A 503 (a
// replica that is not the leader) is retried, up to LeaderTries posts in
// all, each on a new connection.
func (c *Client) Report(ctx context.Context, r Report) (Response, error) {
	tok, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return Response{}, fmt.Errorf("goodsched client: token: %w", err)
	}
	r.Job = c.job
	body, err := json.Marshal(r)
	if err != nil {
		return Response{}, fmt.Errorf("goodsched client: %w", err)
	}
	var data []byte
	for try := 1; ; try++ {
		code, d, err := c.post(ctx, body, strings.TrimSpace(string(tok)))
		if err != nil {
			return Response{}, err
		}
		data = d
		if code == http.StatusOK {
			break
		}
		// 503: this replica is not the leader. The Service picks a
		// replica per connection, so retry on a new one, briefly.
		if code != http.StatusServiceUnavailable || try == LeaderTries {
			return Response{}, &StatusError{Code: code, Body: string(data)}
		}
		c.http.CloseIdleConnections()
		select {
		case <-ctx.Done():
			return Response{}, fmt.Errorf("goodsched client: %w", ctx.Err())
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
	var out Response
	if err := json.Unmarshal(data, &out); err != nil {
		return Response{}, fmt.Errorf("goodsched client: response: %w", err)
	}
	return out, nil
}

// Reconfigure asks the scheduler, at one of the job's synchronisation
// points, whether the job should expand, shrink or keep its size: a
// report that carries only the question (see Reconfiguration). Errors are
// Report's; an endpoint that does not answer (an older scheduler) gives
// ErrNoReconfigure.
func (c *Client) Reconfigure(ctx context.Context) (Reconfiguration, error) {
	resp, err := c.Report(ctx, Report{Reconfigure: true})
	if err != nil {
		return Reconfiguration{}, err
	}
	if resp.Reconfigure == nil {
		return Reconfiguration{}, ErrNoReconfigure
	}
	return *resp.Reconfigure, nil
}

// ErrNoReconfigure is returned by Reconfigure when the endpoint's answer
// carries no reconfiguration (a scheduler that does not speak DMR).
var ErrNoReconfigure = errors.New("goodsched client: the endpoint does not answer reconfiguration requests")

// LeaderTries is how many times Report posts while the scheduler answers
// 503 (a replica that is not the leader), each on a new connection.
const LeaderTries = 8

// post sends one report and returns the status and body.
func (c *Client) post(ctx context.Context, body []byte, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("goodsched client: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("goodsched client: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("goodsched client: %w", err)
	}
	return resp.StatusCode, data, nil
}
