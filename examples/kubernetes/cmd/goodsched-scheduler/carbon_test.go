package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodsched/goodsched/scheduler"
	"github.com/goodsched/goodsched/scheduler/carbonaware"
)

// TestCarbonFlagsRefused: a carbon flag that cannot work is one line and
// exit status 2 before anything connects.
func TestCarbonFlagsRefused(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-carbon-providers", "electricitymaps"},             // no zone
		{"-carbon-zone", "DE"},                               // not in the history, no service
		{"-carbon-zone", "ES", "-carbon-providers", "bogus"}, // unknown service
		{"-carbon-zone", "ES", "-carbon-providers", "electricitymaps"},
		{"-carbon-zone", "ES", "-carbon-providers", "electricitymaps", "-electricitymaps-token-file", empty},
		{"-carbon-zone", "ES", "-carbon-providers", "watttime"},
		{"-carbon-zone", "ES", "-carbon-providers", "carbon-aware-sdk"},
		{"-carbon-zone", "ES", "-carbon-providers", "carbon-aware-sdk,carbon-aware-sdk", "-carbon-aware-sdk-url", "http://127.0.0.1:1"},
		{"-carbon-zone", "ES", "-carbon-ttl", "-1s"},
	} {
		var stderr bytes.Buffer
		err := run(args, &stderr)
		if exitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v, exit %d", args, err, exitCode(err))
		}
	}
}

// TestCarbonChainFallsBack: a failing service is asked first and the
// embedded history answers; a fetched forecast is cached for -carbon-ttl.
func TestCarbonChainFallsBack(t *testing.T) {
	var calls atomic.Int32
	em := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer em.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cf := carbonFlags{zone: "US-CAL-CISO", providers: "electricitymaps", emTokenFile: tok, emURL: em.URL,
		ttl: time.Minute, providerWait: time.Second}
	f, err := cf.forecaster()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	s, err := f.Forecast(context.Background(), "US-CAL-CISO", from, 48*time.Hour)
	if err != nil {
		t.Fatalf("the history did not answer: %v", err)
	}
	if s.Start.After(from) || s.End().Before(from.Add(48*time.Hour)) || s.Zone != "US-CAL-CISO" {
		t.Errorf("forecast %s from %v to %v, want US-CAL-CISO covering %v + 48h", s.Zone, s.Start, s.End(), from)
	}
	if calls.Load() == 0 {
		t.Error("the service was not asked first")
	}
	before := calls.Load()
	if _, err := f.Forecast(context.Background(), "US-CAL-CISO", from, 48*time.Hour); err != nil || calls.Load() != before {
		t.Errorf("a second fetch within the TTL: err %v, service asked %d more times", err, calls.Load()-before)
	}
	if none, err := (&carbonFlags{}).forecaster(); none != nil || err != nil {
		t.Errorf("no -carbon-zone: %v, %v; want no forecaster", none, err)
	}
}

// TestPolicyForGoodputCarbon: -parallel reaches the carbon policy's inner
// goodput policy.
func TestPolicyForGoodputCarbon(t *testing.T) {
	pol, err := policyFor("goodput-carbon", true)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := pol.(carbonaware.Policy)
	if !ok || c.CarbonWeight != 1 || c.Inner != (scheduler.Pollux{Parallel: true}) {
		t.Errorf("goodput-carbon: %#v", pol)
	}
}
