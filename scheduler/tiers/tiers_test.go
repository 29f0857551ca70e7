package tiers

import (
	"errors"
	"math"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tier := range []Tier{None, Premium, Standard, Basic} {
		b, err := tier.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Tier
		if err := back.UnmarshalText(b); err != nil || back != tier {
			t.Errorf("%v: round trip %v, %v", tier, back, err)
		}
	}
	if tr, err := Parse(" Premium "); err != nil || tr != Premium {
		t.Errorf("Parse(Premium) = %v, %v", tr, err)
	}
	for _, bad := range []string{"gold", "prem", "standard,"} {
		if _, err := Parse(bad); !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) = %v, want ErrUnknown", bad, err)
		}
	}
	if _, err := Tier(9).MarshalText(); !errors.Is(err, ErrUnknown) || Tier(-1).Valid() || Tier(4).Valid() {
		t.Errorf("Tier(9).MarshalText: %v", err)
	}
}

// TestGuarantee checks ⌈0.7·requested⌉ exactly against floating point
// for every count up to 1,000, and the other tiers.
func TestGuarantee(t *testing.T) {
	for req := 1; req <= 1000; req++ {
		want := int(math.Ceil(StandardShare*float64(req) - 1e-9))
		if got := Guarantee(Standard, 1, req, req); got != max(want, 1) {
			t.Fatalf("standard, %d requested: %d, want %d", req, got, want)
		}
	}
	cases := []struct {
		t                     Tier
		least, req, cur, want int
	}{
		{Standard, 1, 10, 4, 4},  // at most what it holds
		{Standard, 9, 10, 10, 9}, // at least its minimum
		{Standard, 1, 10, 0, 0},  // not running
		{Premium, 1, 10, 6, 6},
		{Basic, 1, 10, 10, 0},
		{None, 1, 10, 10, 0},
	}
	for _, c := range cases {
		if got := Guarantee(c.t, c.least, c.req, c.cur); got != c.want {
			t.Errorf("%v(%d, %d, %d) = %d, want %d", c.t, c.least, c.req, c.cur, got, c.want)
		}
	}
	if !Pins(Premium, 1, 1, true) || Pins(Premium, 0, 0, true) || !Pins(Standard, 8, 7, false) || Pins(Standard, 10, 7, true) || !Pins(Standard, 7, 7, true) || Pins(Basic, 4, 0, false) {
		t.Error("Pins")
	}
}

func TestAdd(t *testing.T) {
	var r []Report
	r = Add(r, Basic, 4, 0, 0)     // preempted
	r = Add(r, Premium, 4, 4, 4)   // kept
	r = Add(r, Standard, 10, 7, 7) // shrunk to its guarantee
	r = Add(r, Standard, 10, 5, 7) // below it
	r = Add(r, None, 4, 0, 0)      // not counted
	r = Add(r, Standard, 0, 0, 0)  // waiting
	want := []Report{
		{Tier: Premium, Jobs: 1, Running: 1},
		{Tier: Standard, Jobs: 3, Running: 2, Shrunk: 2, BelowGuarantee: 1},
		{Tier: Basic, Jobs: 1, Preempted: 1},
	}
	if len(r) != len(want) {
		t.Fatalf("%+v", r)
	}
	for i := range want {
		if r[i] != want[i] {
			t.Errorf("[%d] = %+v, want %+v", i, r[i], want[i])
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"premium", "", "Basic ", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrUnknown) {
				t.Fatalf("error %v is not ErrUnknown", err)
			}
			return
		}
		if back, _ := Parse(tr.String()); back != tr {
			t.Fatalf("%q → %v → %v", s, tr, back)
		}
	})
}
