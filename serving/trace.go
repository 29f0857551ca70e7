package serving

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Request is one inference request of a trace.
type Request struct {
	// Arrival is the time since the trace's Start.
	Arrival time.Duration `json:"arrival"`
	// PromptTokens is the number of input (context) tokens, at least 1.
	PromptTokens int `json:"prompt_tokens"`
	// OutputTokens is the number of generated tokens, at least 1.
	OutputTokens int `json:"output_tokens"`
}

// Trace is a replayable sequence of requests in arrival order.
type Trace struct {
	// Start is the wall-clock time of Arrival 0.
	Start time.Time
	// Requests are in non-decreasing Arrival order.
	Requests []Request
}

// RowError is a trace row that cannot be used. It wraps ErrInvalidTrace.
type RowError struct {
	// Line is the 1-based line of the file (the header is line 1), or for a
	// Trace built in memory the 1-based index of the request.
	Line int
	// Field names the column at fault.
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error names the trace line, the field and why it was refused.
func (e *RowError) Error() string {
	return fmt.Sprintf("%v: line %d: %s: %s", ErrInvalidTrace, e.Line, e.Field, e.Reason)
}

// Unwrap returns ErrInvalidTrace.
func (e *RowError) Unwrap() error { return ErrInvalidTrace }

// azureTimeLayout is the Azure LLM inference trace's TIMESTAMP format
// ("2023-11-16 18:15:46.6805900", 100 ns resolution).
const azureTimeLayout = "2006-01-02 15:04:05.9999999"

// ReadAzureTrace reads the Azure LLM inference trace format (Splitwise,
// ISCA'24): a header naming TIMESTAMP, ContextTokens and GeneratedTokens
// (in any order; other columns are ignored), then one request per line. A
// missing or negative token count, a zero one, an unparsable time or a time
// going backwards is a *RowError naming the line; nothing is dropped.
func ReadAzureTrace(r io.Reader) (Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return Trace{}, fmt.Errorf("%w: %v", ErrInvalidTrace, err)
		}
		return Trace{}, fmt.Errorf("%w: empty input", ErrInvalidTrace)
	}
	header := strings.Split(strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff")), ",")
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, name := range []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"} {
		if _, ok := col[name]; !ok {
			return Trace{}, &RowError{Line: 1, Field: name, Reason: "column missing from the header"}
		}
	}
	var t Trace
	var prev time.Time
	line := 1
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		get := func(name string) (string, error) {
			i := col[name]
			if i >= len(f) || strings.TrimSpace(f[i]) == "" {
				return "", &RowError{Line: line, Field: name, Reason: "missing"}
			}
			return strings.TrimSpace(f[i]), nil
		}
		ts, err := get("TIMESTAMP")
		if err != nil {
			return Trace{}, err
		}
		at, perr := time.Parse(azureTimeLayout, ts)
		if perr != nil {
			return Trace{}, &RowError{Line: line, Field: "TIMESTAMP", Reason: fmt.Sprintf("cannot parse %q", ts)}
		}
		var tokens [2]int
		for k, name := range []string{"ContextTokens", "GeneratedTokens"} {
			s, err := get(name)
			if err != nil {
				return Trace{}, err
			}
			v, perr := strconv.Atoi(s)
			if perr != nil {
				return Trace{}, &RowError{Line: line, Field: name, Reason: fmt.Sprintf("%q is not an integer", s)}
			}
			if v < 1 {
				return Trace{}, &RowError{Line: line, Field: name, Reason: fmt.Sprintf("%d tokens (need at least 1)", v)}
			}
			tokens[k] = v
		}
		if len(t.Requests) == 0 {
			t.Start = at
		} else if at.Before(prev) {
			return Trace{}, &RowError{Line: line, Field: "TIMESTAMP", Reason: fmt.Sprintf("%s goes back before %s", ts, prev.Format(azureTimeLayout))}
		}
		prev = at
		t.Requests = append(t.Requests, Request{Arrival: at.Sub(t.Start), PromptTokens: tokens[0], OutputTokens: tokens[1]})
	}
	if err := sc.Err(); err != nil {
		return Trace{}, fmt.Errorf("%w: line %d: %v", ErrInvalidTrace, line+1, err)
	}
	if len(t.Requests) == 0 {
		return Trace{}, fmt.Errorf("%w: no requests", ErrInvalidTrace)
	}
	return t, nil
}

// Validate returns a *RowError (indexed from 1) for the first request with a
// token count below 1, a negative arrival or an arrival before the previous.
func (t Trace) Validate() error {
	var prev time.Duration
	for i, r := range t.Requests {
		switch {
		case r.PromptTokens < 1:
			return &RowError{Line: i + 1, Field: "prompt_tokens", Reason: fmt.Sprintf("%d tokens (need at least 1)", r.PromptTokens)}
		case r.OutputTokens < 1:
			return &RowError{Line: i + 1, Field: "output_tokens", Reason: fmt.Sprintf("%d tokens (need at least 1)", r.OutputTokens)}
		case r.Arrival < 0:
			return &RowError{Line: i + 1, Field: "arrival", Reason: fmt.Sprintf("%v is negative", r.Arrival)}
		case r.Arrival < prev:
			return &RowError{Line: i + 1, Field: "arrival", Reason: fmt.Sprintf("%v goes back before %v", r.Arrival, prev)}
		}
		prev = r.Arrival
	}
	return nil
}

// Duration is the time from Start to the last arrival.
func (t Trace) Duration() time.Duration {
	if len(t.Requests) == 0 {
		return 0
	}
	return t.Requests[len(t.Requests)-1].Arrival
}

// Scale returns the trace with its arrival rate multiplied by k > 0, keeping
// its shape in time and its token mix: ⌈k⌉ copies are superposed, copy c
// delayed by c/⌈k⌉ of each request's gap to the next one (so copies
// interleave instead of arriving together), and each request of the last
// copy kept with probability k − ⌊k⌋ (drawn from seed) when k is not whole;
// for k < 1 that thins the trace. The result is sorted by arrival.
func (t Trace) Scale(k float64, seed uint64) (Trace, error) {
	if !(k > 0) || math.IsInf(k, 0) {
		return Trace{}, fmt.Errorf("%w: rate scale %v must be positive and finite", ErrInvalidTrace, k)
	}
	if err := t.Validate(); err != nil {
		return Trace{}, err
	}
	copies := int(math.Ceil(k))
	frac := k - float64(copies-1)
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	out := make([]Request, 0, int(float64(len(t.Requests))*k)+1)
	for i, r := range t.Requests {
		gap := time.Duration(0)
		if i+1 < len(t.Requests) {
			gap = t.Requests[i+1].Arrival - r.Arrival
		}
		for c := range copies {
			if c == copies-1 && frac < 1 && rng.Float64() >= frac {
				continue
			}
			q := r
			q.Arrival += gap * time.Duration(c) / time.Duration(copies)
			out = append(out, q)
		}
	}
	slices.SortStableFunc(out, func(a, b Request) int { return cmp.Compare(a.Arrival, b.Arrival) })
	return Trace{Start: t.Start, Requests: out}, nil
}

// Repeat returns the trace played n ≥ 1 times back to back, copy c shifted
// by c × period: a day of an hour-long trace's pattern, say, for a run
// that outlasts the trace. The period must be longer than Duration, so
// copies do not overlap.
func (t Trace) Repeat(n int, period time.Duration) (Trace, error) {
	if n < 1 {
		return Trace{}, fmt.Errorf("%w: repeat count %d must be at least 1", ErrInvalidTrace, n)
	}
	if period <= t.Duration() {
		return Trace{}, fmt.Errorf("%w: repeat period %v is not longer than the trace (%v)", ErrInvalidTrace, period, t.Duration())
	}
	if err := t.Validate(); err != nil {
		return Trace{}, err
	}
	out := make([]Request, 0, n*len(t.Requests))
	for c := range n {
		for _, r := range t.Requests {
			r.Arrival += time.Duration(c) * period
			out = append(out, r)
		}
	}
	return Trace{Start: t.Start, Requests: out}, nil
}
