package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/scheduler/sim/env"
)

// TestServeAndReference: requests on the program's stdin are answered in
// the protocol, and -reference prints the simulator's summary (the Python
// agent's test compares the two over whole episodes).
func TestServeAndReference(t *testing.T) {
	in := `{"version":1,"op":"reset","seed":2}` + "\n" + `{"version":7,"op":"step","action":{"targets":[]}}` + "\n"
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-jobs", "5", "-cluster", "2x4:t4"}, strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<24)
	var got []env.Response
	for sc.Scan() {
		var r env.Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 2 || got[0].Observation == nil || got[0].Observation.Schema != env.Schema || got[1].Error == nil || got[1].Error.Code != "version" {
		t.Fatalf("responses: %s", out.String())
	}

	out.Reset()
	if code := run(context.Background(), []string{"-jobs", "5", "-cluster", "2x4:t4", "-reference", "fifo", "-seed", "2"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var sum env.Summary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Jobs != 5 || sum.Completed == 0 || sum.Steps == 0 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-cluster", "nonsense"},
		{"-kind", "floppy"},
		{"-reward", "speed"},
		{"-jobs", "-1"},
		{"-workload", "no-such-workload"},
		{"-reference", "oracle"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
