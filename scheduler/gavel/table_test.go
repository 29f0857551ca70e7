package gavel

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/goodsched/goodsched/accel"
	"github.com/goodsched/goodsched/scheduler"
)

func TestPublished(t *testing.T) {
	tab, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Types(); len(got) != 3 || got[0] != "k80" || got[1] != "p100" || got[2] != "v100-16gb" {
		t.Errorf("types %v", got)
	}
	if n := len(tab.Classes()); n != 26 {
		t.Errorf("%d classes, want 26", n)
	}
	if tab.Len() != 83*3 {
		t.Errorf("%d entries, want 249", tab.Len())
	}
	// Values quoted in the reference notes (§1.5): ResNet-50 b64, 1 GPU.
	for typ, want := range map[accel.TypeKey]float64{"v100-16gb": 4.39, "p100": 2.62, "k80": 0.62} {
		v, ok := tab.Lookup("ResNet-50 (batch size 64)", 1, typ)
		if !ok || math.Abs(v-want) > 0.01 {
			t.Errorf("ResNet-50 b64 on %s = %v, %v; want %v", typ, v, ok, want)
		}
	}
	f := tab.Throughput(func(j *scheduler.Job) string { return "A3C" })
	if v := f(&scheduler.Job{ID: "x"}, "k80", 1, 1); math.Abs(v-3.44) > 0.01 {
		t.Errorf("A3C on k80 via ThroughputFunc = %v", v)
	}
	if v := f(&scheduler.Job{ID: "x"}, "t4", 1, 1); v != 0 {
		t.Errorf("missing type = %v, want 0", v)
	}
}

func TestReadCSV(t *testing.T) {
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"good", "class,scale,v100,k80\nA,1,2.5,1\nB,2,,0\n", true},
		{"comment", "# measured\nclass,scale,t4\nA,1,3\n", true},
		{"bad header", "job,scale,v100\nA,1,2\n", false},
		{"too few columns", "class,scale\nA,1\n", false},
		{"bad type", "class,scale,V 100\nA,1,2\n", false},
		{"bad scale", "class,scale,v100\nA,x,2\n", false},
		{"zero scale", "class,scale,v100\nA,0,2\n", false},
		{"bad number", "class,scale,v100\nA,1,fast\n", false},
		{"NaN", "class,scale,v100\nA,1,NaN\n", false},
		{"negative", "class,scale,v100\nA,1,-1\n", false},
		{"field count", "class,scale,v100\nA,1,2,3\n", false},
		{"duplicate", "class,scale,v100\nA,1,2\nA,1,3\n", false},
		{"empty class", "class,scale,v100\n ,1,2\n", false},
		{"empty", "", false},
	}
	for _, c := range cases {
		tab, err := ReadCSV(strings.NewReader(c.in))
		if c.ok != (err == nil) {
			t.Errorf("%s: err %v", c.name, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not wrap ErrInvalid", c.name, err)
		}
		if c.name == "good" && err == nil {
			if v, ok := tab.Lookup("A", 1, "v100-16gb"); !ok || v != 2.5 {
				t.Errorf("alias not canonicalised: %v %v", v, ok)
			}
			if _, ok := tab.Lookup("B", 2, "v100-16gb"); ok {
				t.Errorf("empty cell stored")
			}
		}
	}
}

const gavelJSON = `{
 "v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 4.39, "('A3C', 1)": [2.0, 3.0]},
          "('A3C', 2)": {"null": 12.5}},
 "v100_unconsolidated": {"('A3C', 2)": {"null": 7.0}},
 "k80": {"(\"A3C\", 1)": {"null": 3.44}}
}`

func TestReadGavelJSON(t *testing.T) {
	tab, err := ReadGavelJSON(strings.NewReader(gavelJSON), false)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 3 {
		t.Errorf("%d entries, want 3", tab.Len())
	}
	if v, ok := tab.Lookup("A3C", 2, "v100-16gb"); !ok || v != 12.5 {
		t.Errorf("A3C×2 on v100 = %v %v", v, ok)
	}
	tab, err = ReadGavelJSON(strings.NewReader(gavelJSON), true)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := tab.Lookup("A3C", 2, "v100-unconsolidated"); !ok || v != 7 {
		t.Errorf("variant = %v %v", v, ok)
	}
	for _, bad := range []string{`[]`, `{"v100": {"A3C": {"null": 1}}}`, `{"v100": {"('A3C', x)": {"null": 1}}}`,
		`{"v100": {"('A3C', 1)": {"null": "fast"}}}`, `{"v100": {"('A3C', 1)": {"null": -1}}}`, `{"V 100": {}}`} {
		if _, err := ReadGavelJSON(strings.NewReader(bad), false); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add(string(publishedCSV[:400]))
	f.Add("class,scale,v100,k80\nA,1,2.5,1\nB,2,,0\n")
	f.Add("class,scale,v100\nA,1,NaN\n")
	f.Fuzz(func(t *testing.T, s string) {
		tab, err := ReadCSV(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, typ := range tab.Types() {
			if !accel.ValidTypeKey(string(typ)) {
				t.Fatalf("type %q not canonical", typ)
			}
		}
	})
}

func FuzzReadGavelJSON(f *testing.F) {
	f.Add(gavelJSON, false)
	f.Add(`{"v100": {"('A3C', 1)": {"null": 1}}}`, true)
	f.Fuzz(func(t *testing.T, s string, keep bool) {
		if _, err := ReadGavelJSON(strings.NewReader(s), keep); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v does not wrap ErrInvalid", err)
		}
	})
}

// FuzzSolve decodes bytes into a small problem (throughputs may be NaN,
// negative or zero) and checks that every objective either rejects it with
// a package error or returns a feasible allocation whose gap is small.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{3, 2, 255, 255, 255, 255, 255, 255, 255, 127, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		n, k := 1+int(data[0])%6, 1+int(data[1])%3
		data = data[2:]
		next := func() float64 {
			if len(data) >= 8 {
				v := math.Float64frombits(binary.LittleEndian.Uint64(data))
				data = data[8:]
				return v
			}
			if len(data) > 0 {
				v := float64(data[0]) / 16
				data = data[1:]
				return v
			}
			return 1
		}
		p := Problem{Devices: make([]int, k), StepsLeft: make([]float64, n)}
		for j := range k {
			p.Devices[j] = int(next()) % 5
		}
		for m := range n {
			row := make([]float64, k)
			for j := range row {
				row[j] = next()
			}
			p.Throughput = append(p.Throughput, row)
			p.StepsLeft[m] = 100
		}
		for _, obj := range []Objective{MaxMinFairness{}, MaxMinFairness{WaterFilling: true}, MinMakespan{}} {
			sol, err := Solve(context.Background(), p, obj, nil)
			if err != nil {
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrZeroRow) && !errors.Is(err, ErrNoDevices) {
					t.Fatalf("%s: unexpected error %v", obj.Name(), err)
				}
				continue
			}
			if err := p.CheckAllocation(sol.X, 1e-9); err != nil {
				t.Fatalf("%s: %v", obj.Name(), err)
			}
			if math.IsNaN(sol.Objective) || sol.Gap > 1e-6 {
				t.Fatalf("%s: objective %v gap %v", obj.Name(), sol.Objective, sol.Gap)
			}
		}
	})
}
