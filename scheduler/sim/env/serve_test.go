package env_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler/sim/env"
)

// TestServe drives the JSON-lines protocol: bad lines get error
// responses of the right code and change nothing; the episode then plays
// to the end as a clean one does.
func TestServe(t *testing.T) {
	_, ws := pollux(t)
	cfg := env.Config{Sim: simConfig(t, "2x4:t4", ws[5].Jobs[:6])}
	// The requests: empty actions only (nothing ever runs, so the episode
	// ends once every job has arrived), with bad lines interleaved.
	bad := []struct{ line, code string }{
		{`{"version":1,"op":"step","action":{"targets":[]}}`, "no_episode"},
		{`{"version":1,"op":"reset","seed":1`, "malformed"},
		{`not json`, "malformed"},
		{`{"version":2,"op":"reset","seed":1}`, "version"},
		{`{"op":"reset","seed":1}`, "version"},
		{`{"version":1,"op":"dance"}`, "malformed"},
		{`{"version":1,"op":"reset","seed":1,"colour":"red"}`, "malformed"},
	}
	var in strings.Builder
	for _, b := range bad {
		in.WriteString(b.line + "\n")
	}
	in.WriteString(`{"version":1,"op":"reset","seed":1}` + "\n")
	midBad := []struct{ line, code string }{
		{`{"version":1,"op":"step"}`, "malformed"},
		{`{"version":1,"op":"step","action":{"targets":[{"job":"ghost","type":"t4","count":1}]}}`, "bad_action"},
		{`{"version":1,"op":"step","action":{"targets":[{"job":"x","count":1},{"job":"x","count":1}]}}`, "bad_action"},
		{`{"version":1,"op":"step","action":{"targets":[]}} {"version":1}`, "malformed"},
	}
	for _, b := range midBad {
		in.WriteString(b.line + "\n")
	}
	for range 200 {
		in.WriteString(`{"version":1,"op":"step","action":{"targets":[]}}` + "\n")
	}
	in.WriteString(`{"version":1,"op":"close"}` + "\n" + `{"version":1,"op":"reset","seed":1}` + "\n")

	pr, pw := io.Pipe()
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- env.Serve(context.Background(), e, strings.NewReader(in.String()), pw); pw.Close() }()
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 1<<24)
	read := func() env.Response {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("no response: %v", sc.Err())
		}
		var r env.Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Version != env.Version {
			t.Fatalf("response version %d", r.Version)
		}
		return r
	}
	for _, b := range bad {
		if r := read(); r.Error == nil || r.Error.Code != b.code {
			t.Fatalf("%s: %+v, want code %s", b.line, r.Error, b.code)
		}
	}
	first := read()
	if first.Error != nil || first.Observation == nil || first.Observation.Schema != env.Schema {
		t.Fatalf("reset: %+v", first)
	}
	for _, b := range midBad {
		if r := read(); r.Error == nil || r.Error.Code != b.code {
			t.Fatalf("%s: %+v, want code %s", b.line, r.Error, b.code)
		}
	}
	// The same episode through the Go API, for comparison.
	clean, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	if _, err := clean.Reset(1); err != nil {
		t.Fatal(err)
	}
	for {
		r := read()
		if r.Error != nil {
			t.Fatalf("step: %+v", r.Error)
		}
		want, err := clean.Step(env.Action{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(env.Step{Observation: *r.Observation, Reward: r.Reward, Done: r.Done})
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Fatalf("step %d differs from the Go API's:\n%s\n%s", want.Observation.Step, got, exp)
		}
		if r.Done {
			if r.Result == nil || r.Result.Jobs != 6 {
				t.Fatalf("done without a result: %+v", r.Result)
			}
			break
		}
	}
	// The remaining steps are answered no_episode, then close ends Serve
	// before the last reset.
	n := 0
	for sc.Scan() {
		var r env.Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Error == nil || r.Error.Code != "no_episode" {
			t.Fatalf("after the end: %s", sc.Bytes())
		}
		n++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the episode used every step: the test checks nothing after it")
	}
}

// FuzzServe: no line makes Serve fail or panic; every line gets exactly
// one response.
func FuzzServe(f *testing.F) {
	f.Add(`{"version":1,"op":"reset","seed":3}`)
	f.Add(`{"version":1,"op":"step","action":{"targets":[{"job":"j","type":"t4","count":-2}]}}`)
	f.Add(`{"version":1,"op":"step","action":{"targets":null}}`)
	f.Add(`[1,2]`)
	_, ws := pollux(f)
	cfg := env.Config{Sim: simConfig(f, "1x4:t4", ws[0].Jobs[:2])}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") || strings.TrimSpace(line) == "" {
			return
		}
		e, err := env.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		in := `{"version":1,"op":"reset","seed":1}` + "\n" + line + "\n"
		var out strings.Builder
		if err := env.Serve(context.Background(), e, strings.NewReader(in), &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(out.String(), "\n")
		if lines != 2 && !(lines == 1 && strings.Contains(line, `"close"`)) {
			t.Fatalf("%d responses to 2 lines:\n%s", lines, out.String())
		}
	})
}
