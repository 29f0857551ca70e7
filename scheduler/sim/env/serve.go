package env

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/goodsched/goodsched/scheduler/sim"
)

// Request is one line an agent sends to Serve.
type Request struct {
	// Version is the schema version the agent speaks; it must be Version.
	Version int `json:"version"`
	// Op is "reset" (with Seed), "step" (with Action) or "close".
	Op     string  `json:"op"`
	Seed   uint64  `json:"seed,omitempty"`
	Action *Action `json:"action,omitempty"`
}

// Response is one line Serve answers with: a step (Observation, Reward,
// Done, and Result when Done) or an Error.
type Response struct {
	Version     int          `json:"version"`
	Observation *Observation `json:"observation,omitempty"`
	Reward      float64      `json:"reward"`
	Done        bool         `json:"done"`
	// Result summarises the simulator's result when Done.
	Result *Summary `json:"result,omitempty"`
	// Error, when set, says why the request failed; the episode is as it
	// was before it (except for ErrEpisode, which ends it).
	Error *ErrorView `json:"error,omitempty"`
}

// ErrorView is a failed request: Code is "version", "malformed",
// "bad_action", "no_episode", "invalid" or "episode"; Message says what
// and where.
type ErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Summary is the part of a sim.Result a remote agent compares policies
// by.
type Summary struct {
	Jobs            int     `json:"jobs"`
	Completed       int     `json:"completed"`
	AvgJCTSeconds   float64 `json:"avg_jct_s"`
	P99JCTSeconds   float64 `json:"p99_jct_s"`
	MakespanSeconds float64 `json:"makespan_s"`
	GPUHours        float64 `json:"gpu_hours"`
	Restarts        int     `json:"restarts"`
	Rounds          int     `json:"rounds"`
	Steps           int     `json:"steps"`
}

// Summarize returns the summary of a simulator result reached in steps
// decisions.
func Summarize(res sim.Result, steps int) Summary {
	return Summary{
		Jobs: len(res.Jobs), Completed: res.Completed,
		AvgJCTSeconds: res.AvgJCT.Seconds(), P99JCTSeconds: res.P99JCT.Seconds(),
		MakespanSeconds: res.Makespan.Seconds(), GPUHours: res.GPUHours,
		Restarts: res.Restarts, Rounds: res.Rounds, Steps: steps,
	}
}

// maxLine bounds one request line.
const maxLine = 64 << 20

// Serve speaks the environment as JSON lines: it reads one Request per
// line from r and writes one Response per line to w, until r ends, a
// "close" request, ctx is done or w fails. A malformed line, a version
// other than Version or a bad action is answered with an error response
// and changes nothing; Serve goes on. It returns nil at the end of r or
// on "close", and closes the episode in progress.
func Serve(ctx context.Context, e *Env, r io.Reader, w io.Writer) error {
	defer e.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		resp, stop := e.handle(line)
		if stop {
			return bw.Flush()
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// handle answers one request line; stop reports a "close".
func (e *Env) handle(line []byte) (resp Response, stop bool) {
	resp.Version = Version
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return errorResponse(fmt.Errorf("%w: %w", ErrMalformed, err)), false
	}
	if dec.More() {
		return errorResponse(fmt.Errorf("%w: more than one JSON value on the line", ErrMalformed)), false
	}
	if req.Version != Version {
		return errorResponse(fmt.Errorf("%w: version %d (this environment speaks %d)", ErrVersion, req.Version, Version)), false
	}
	var st Step
	var err error
	switch req.Op {
	case "close":
		return resp, true
	case "reset":
		if req.Action != nil {
			return errorResponse(fmt.Errorf("%w: reset takes no action", ErrMalformed)), false
		}
		var obs Observation
		obs, err = e.Reset(req.Seed)
		st.Observation = obs
	case "step":
		if req.Action == nil {
			return errorResponse(fmt.Errorf("%w: step without an action", ErrMalformed)), false
		}
		st, err = e.Step(*req.Action)
	default:
		return errorResponse(fmt.Errorf("%w: op %q (want reset, step or close)", ErrMalformed, req.Op)), false
	}
	if err != nil {
		return errorResponse(err), false
	}
	resp.Observation, resp.Reward, resp.Done = &st.Observation, st.Reward, st.Done
	if st.Done {
		if res, err := e.Result(); err == nil {
			sum := Summarize(res, e.Steps())
			resp.Result = &sum
		}
	}
	return resp, false
}

// errorResponse turns err into an error response.
func errorResponse(err error) Response {
	code := "invalid"
	for _, c := range []struct {
		err  error
		code string
	}{{ErrVersion, "version"}, {ErrMalformed, "malformed"}, {ErrBadAction, "bad_action"},
		{ErrNoEpisode, "no_episode"}, {ErrEpisode, "episode"}} {
		if errors.Is(err, c.err) {
			code = c.code
			break
		}
	}
	return Response{Version: Version, Error: &ErrorView{Code: code, Message: err.Error()}}
}
