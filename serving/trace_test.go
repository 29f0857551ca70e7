package serving_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goodsched/goodsched/serving"
)

func readHead(t *testing.T) serving.Trace {
	t.Helper()
	f, err := os.Open("testdata/azure_conv_head300.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := serving.ReadAzureTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestReadAzureTraceRealRows(t *testing.T) {
	tr := readHead(t)
	if len(tr.Requests) != 300 {
		t.Fatalf("%d requests, want 300", len(tr.Requests))
	}
	// First rows of the file: 18:15:46.6805900,374,44 and 18:15:50.9951690,396,109.
	if got := tr.Requests[0]; got.Arrival != 0 || got.PromptTokens != 374 || got.OutputTokens != 44 {
		t.Errorf("first request %+v", got)
	}
	if got := tr.Requests[1]; got.Arrival != 4314579*time.Microsecond || got.PromptTokens != 396 || got.OutputTokens != 109 {
		t.Errorf("second request %+v (arrival want 4.314579s)", got)
	}
	if tr.Start.Format("2006-01-02 15:04:05.0000000") != "2023-11-16 18:15:46.6805900" {
		t.Errorf("start %v", tr.Start)
	}
	if err := tr.Validate(); err != nil {
		t.Error(err)
	}
}

func TestReadAzureTraceBadRows(t *testing.T) {
	const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	const ok = "2023-11-16 18:15:46.6805900,374,44\n"
	cases := []struct {
		name, body string
		line       int
		field      string
	}{
		{"negative prompt", ok + "2023-11-16 18:15:47.0000000,-3,44\n", 3, "ContextTokens"},
		{"negative output", ok + "2023-11-16 18:15:47.0000000,3,-44\n", 3, "GeneratedTokens"},
		{"zero output", ok + "2023-11-16 18:15:47.0000000,3,0\n", 3, "GeneratedTokens"},
		{"missing output", ok + "2023-11-16 18:15:47.0000000,3\n", 3, "GeneratedTokens"},
		{"empty prompt", ok + ok + "2023-11-16 18:15:47.0000000,,5\n", 4, "ContextTokens"},
		{"not a number", ok + "2023-11-16 18:15:47.0000000,3x,5\n", 3, "ContextTokens"},
		{"time backwards", ok + "2023-11-16 18:15:45.0000000,3,5\n", 3, "TIMESTAMP"},
		{"bad time", ok + "yesterday,3,5\n", 3, "TIMESTAMP"},
		{"no column", "", 1, "TIMESTAMP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := header + c.body
			if c.name == "no column" {
				in = "ContextTokens,GeneratedTokens\n3,4\n"
			}
			_, err := serving.ReadAzureTrace(strings.NewReader(in))
			if !errors.Is(err, serving.ErrInvalidTrace) {
				t.Fatalf("err %v, want ErrInvalidTrace", err)
			}
			var re *serving.RowError
			if !errors.As(err, &re) || re.Line != c.line || re.Field != c.field {
				t.Fatalf("err %v, want line %d field %s", err, c.line, c.field)
			}
			if !strings.Contains(err.Error(), "line") {
				t.Errorf("message %q does not name the line", err)
			}
		})
	}
	if _, err := serving.ReadAzureTrace(strings.NewReader("")); !errors.Is(err, serving.ErrInvalidTrace) {
		t.Errorf("empty input: %v", err)
	}
	if _, err := serving.ReadAzureTrace(strings.NewReader(header)); !errors.Is(err, serving.ErrInvalidTrace) {
		t.Errorf("header only: %v", err)
	}
}

func TestTraceValidateNamesRequest(t *testing.T) {
	tr := serving.Trace{Requests: []serving.Request{
		{Arrival: 0, PromptTokens: 1, OutputTokens: 1},
		{Arrival: 2 * time.Second, PromptTokens: 1, OutputTokens: 1},
		{Arrival: time.Second, PromptTokens: 1, OutputTokens: 1},
	}}
	var re *serving.RowError
	if err := tr.Validate(); !errors.As(err, &re) || re.Line != 3 || re.Field != "arrival" {
		t.Fatalf("backwards arrival: %v", err)
	}
	tr.Requests[2] = serving.Request{Arrival: 3 * time.Second, PromptTokens: -1, OutputTokens: 1}
	if err := tr.Validate(); !errors.As(err, &re) || re.Line != 3 || re.Field != "prompt_tokens" {
		t.Fatalf("negative prompt: %v", err)
	}
}

// TestScaleKeepsShape: ×k multiplies every minute's arrivals by about k
// and keeps the token mix; arrivals stay sorted; k ≤ 0 is an error.
func TestScaleKeepsShape(t *testing.T) {
	tr := readHead(t)
	for _, k := range []float64{0.5, 1, 2, 2.9, 4} {
		s, err := tr.Scale(k, 7)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("×%v: %v", k, err)
		}
		want := k * float64(len(tr.Requests))
		if got := float64(len(s.Requests)); math.Abs(got-want) > 3*math.Sqrt(want)+1 {
			t.Errorf("×%v: %v requests, want about %v", k, got, want)
		}
		if s.Duration() > tr.Duration() {
			t.Errorf("×%v: duration %v beyond %v", k, s.Duration(), tr.Duration())
		}
		if k == math.Trunc(k) {
			var p0, p1 int
			for _, r := range tr.Requests {
				p0 += r.PromptTokens
			}
			for _, r := range s.Requests {
				p1 += r.PromptTokens
			}
			if p1 != int(k)*p0 {
				t.Errorf("×%v: prompt tokens %d, want %d", k, p1, int(k)*p0)
			}
		}
	}
	for _, k := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := tr.Scale(k, 1); !errors.Is(err, serving.ErrInvalidTrace) {
			t.Errorf("×%v: err %v", k, err)
		}
	}
}

func FuzzReadAzureTrace(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n2023-11-16 18:15:45,1,1\n")
	f.Add("GeneratedTokens,TIMESTAMP,ContextTokens\n5,2023-11-16 18:15:46.1,-1\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := serving.ReadAzureTrace(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, serving.ErrInvalidTrace) {
				t.Fatalf("error %v is not ErrInvalidTrace", err)
			}
			return
		}
		if err := tr.Validate(); err != nil {
			t.Fatalf("accepted trace fails Validate: %v", err)
		}
	})
}

func TestTraceRepeat(t *testing.T) {
	tr := readHead(t)
	period := tr.Duration() + time.Minute
	rep, err := tr.Repeat(3, period)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Requests) != 3*len(tr.Requests) {
		t.Fatalf("%d requests, want %d", len(rep.Requests), 3*len(tr.Requests))
	}
	if err := rep.Validate(); err != nil {
		t.Fatal(err)
	}
	n := len(tr.Requests)
	for c := range 3 {
		for i, r := range tr.Requests {
			got := rep.Requests[c*n+i]
			want := r
			want.Arrival += time.Duration(c) * period
			if got != want {
				t.Fatalf("copy %d request %d: %+v, want %+v", c, i, got, want)
			}
		}
	}
	for _, c := range []struct {
		n      int
		period time.Duration
	}{{0, period}, {2, tr.Duration()}, {2, 0}} {
		if _, err := tr.Repeat(c.n, c.period); !errors.Is(err, serving.ErrInvalidTrace) {
			t.Errorf("Repeat(%d, %v): %v, want ErrInvalidTrace", c.n, c.period, err)
		}
	}
}
