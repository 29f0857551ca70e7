package live

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve answers each path with a fixture (or a handler) on loopback.
func serve(t *testing.T, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.HandleFunc(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func file(t *testing.T, name string) http.HandlerFunc {
	b := fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) { w.Write(b) }
}

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func TestElectricityMaps(t *testing.T) {
	ctx := context.Background()
	check := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("auth-token") != "tok" || r.URL.Query().Get("zone") != "DE" || r.URL.Query().Get("emissionFactorType") != "lifecycle" {
				http.Error(w, "bad request "+r.URL.String(), http.StatusBadRequest)
				return
			}
			next(w, r)
		}
	}
	srv := serve(t, map[string]http.HandlerFunc{
		"/v3/carbon-intensity/latest":   check(file(t, "electricitymaps_v3_latest_SYNTHETIC.json")),
		"/v3/carbon-intensity/history":  check(file(t, "electricitymaps_v3_history_SYNTHETIC.json")),
		"/v3/carbon-intensity/forecast": check(file(t, "electricitymaps_v3_forecast_SYNTHETIC.json")),
	})
	em := &ElectricityMaps{Token: "tok", BaseURL: srv.URL, Zones: map[string]string{"germany": "DE"}}
	s, err := em.Forecast(ctx, "germany", t0.Add(6*time.Hour+30*time.Minute), 3*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{330, 340, 280, 250}; !equal(s.Values, want) || !s.Start.Equal(t0.Add(6*time.Hour)) {
		t.Fatalf("forecast %v from %v, want %v from 06:00", s.Values, s.Start, want)
	}
	if s.Unit != carbon.GPerKWh || s.Signal != carbon.Average || s.Basis != carbon.LifeCycle || s.Zone != "germany" || s.Source != "electricitymaps" {
		t.Fatalf("metadata %+v", s)
	}
	// from before the forecast: the history fills the hours before it
	s, err = em.Forecast(ctx, "germany", t0.Add(4*time.Hour), 4*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{301, 320, 330, 340}; !equal(s.Values, want) || !s.Estimated[1] || s.Estimated[0] {
		t.Fatalf("history+forecast %v %v, want %v with 05:00 estimated", s.Values, s.Estimated, want)
	}
	l, err := em.Latest(ctx, "germany")
	if err != nil || l.Len() != 1 || l.Values[0] != 320 {
		t.Fatalf("latest %v %v", l.Values, err)
	}
	h, err := em.History(ctx, "germany")
	if err != nil || h.Len() != 6 {
		t.Fatalf("history %v %v", h.Values, err)
	}
	if _, err := (&ElectricityMaps{BaseURL: srv.URL}).Latest(ctx, "DE"); !errors.Is(err, ErrAuth) || !errors.Is(err, carbon.ErrUnavailable) {
		t.Fatalf("no token: %v", err)
	}
	bad := &ElectricityMaps{Token: "wrong", BaseURL: srv.URL}
	_, err = bad.Latest(ctx, "DE")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || !errors.Is(err, ErrStatus) {
		t.Fatalf("bad token: %v", err)
	}
}

func TestWattTime(t *testing.T) {
	ctx := context.Background()
	var logins, rejectNext atomic.Int32
	auth := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if r.Header.Get("Authorization") != "Bearer SYNTHETIC-TOKEN" || rejectNext.Swap(0) == 1 {
				http.Error(w, `{"error":"invalid token"}`, http.StatusUnauthorized)
				return
			}
			if q.Get("region") != "CAISO_NORTH" || q.Get("signal_type") != "co2_moer" {
				http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
				return
			}
			next(w, r)
		}
	}
	login := fixture(t, "watttime_v3_login_SYNTHETIC.json")
	srv := serve(t, map[string]http.HandlerFunc{
		"/login": func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "me" || p != "pw" {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			logins.Add(1)
			w.Write(login)
		},
		"/v3/forecast":            auth(file(t, "watttime_v3_forecast_SYNTHETIC.json")),
		"/v3/historical":          auth(file(t, "watttime_v3_historical_SYNTHETIC.json")),
		"/v3/forecast/historical": auth(file(t, "watttime_v3_forecast_historical_SYNTHETIC.json")),
		"/v3/signal-index":        auth(file(t, "watttime_v3_signal_index_SYNTHETIC.json")),
	})
	wt := &WattTime{Username: "me", Password: "pw", BaseURL: srv.URL, Regions: map[string]string{"US-CAL-CISO": "CAISO_NORTH"}}
	s, err := wt.Forecast(ctx, "US-CAL-CISO", t0.Add(6*time.Hour), 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, lbs := range []float64{900, 910, 905} {
		if math.Abs(s.Values[i]-lbs*0.45359237) > 1e-9 {
			t.Fatalf("value %d = %v g/kWh, want %v lbs/MWh × 0.45359237", i, s.Values[i], lbs)
		}
	}
	if s.Unit != carbon.GPerKWh || s.Signal != carbon.Marginal || s.Basis != carbon.Direct || s.Step != 5*time.Minute || s.Zone != "US-CAL-CISO" {
		t.Fatalf("metadata %+v", s)
	}
	// before the forecast: /v3/historical fills in; a 401 makes it log in again
	rejectNext.Store(1)
	s, err = wt.Forecast(ctx, "US-CAL-CISO", t0.Add(5*time.Hour+50*time.Minute), 20*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.Values[0]-910*0.45359237) > 1e-9 || math.Abs(s.Values[2]-900*0.45359237) > 1e-9 {
		t.Fatalf("historical+forecast %v", s.Values)
	}
	if n := logins.Load(); n != 2 {
		t.Fatalf("%d logins, want 2 (one cached token, one after the 401)", n)
	}
	p, at, err := wt.Index(ctx, "US-CAL-CISO")
	if err != nil || p != 37 || !at.Equal(t0.Add(6*time.Hour)) {
		t.Fatalf("index %v at %v: %v", p, at, err)
	}
	issued, err := wt.HistoricalForecasts(ctx, "US-CAL-CISO", t0.Add(5*time.Hour), t0.Add(6*time.Hour))
	if err != nil || len(issued) != 2 || !issued[1].At.Equal(t0.Add(6*time.Hour)) {
		t.Fatalf("historical forecasts %v: %v", issued, err)
	}
	if _, err := (&WattTime{Username: "me", Password: "bad", BaseURL: srv.URL}).Forecast(ctx, "CAISO_NORTH", t0, time.Hour); !errors.Is(err, ErrAuth) {
		t.Fatalf("bad password: %v", err)
	}
}

func TestCarbonAwareSDK(t *testing.T) {
	ctx := context.Background()
	var batchBody atomic.Bool
	srv := serve(t, map[string]http.HandlerFunc{
		"/emissions/forecasts/current": file(t, "carbon-aware-sdk_forecasts-current_SYNTHETIC.json"),
		"/emissions/bylocations":       file(t, "carbon-aware-sdk_bylocations_SYNTHETIC.json"),
		"/emissions/forecasts/batch": func(w http.ResponseWriter, r *http.Request) {
			batchBody.Store(r.Method == http.MethodPost && r.Header.Get("Content-Type") == "application/json")
			w.Write(fixture(t, "carbon-aware-sdk_forecasts-batch_SYNTHETIC.json"))
		},
	})
	c := &CarbonAwareSDK{BaseURL: srv.URL, Signal: carbon.Marginal, Locations: map[string]string{"US-CAL-CISO": "westus"}}
	s, err := c.Forecast(ctx, "US-CAL-CISO", t0.Add(7*time.Hour), 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(s.Values, []float64{180.5, 210.25}) || s.Unit != carbon.GPerKWh || s.Signal != carbon.Marginal {
		t.Fatalf("forecast %+v", s)
	}
	s, err = c.Forecast(ctx, "US-CAL-CISO", t0.Add(4*time.Hour), 3*time.Hour)
	if err != nil || !equal(s.Values, []float64{315.5, 305, 250}) {
		t.Fatalf("bylocations+forecast %v: %v", s.Values, err)
	}
	issued, err := c.HistoricalForecasts(ctx, "US-CAL-CISO", []time.Time{t0.Add(4 * time.Hour), t0.Add(6 * time.Hour)}, 4*time.Hour)
	if err != nil || len(issued) != 2 || !batchBody.Load() {
		t.Fatalf("batch %v: %v", issued, err)
	}
	r, err := NewReplay(issued...)
	if err != nil {
		t.Fatal(err)
	}
	// at 05:00 only the 04:00 forecast was known, though the 06:00 one covers 06:00 too
	got, err := r.Forecast(ctx, "US-CAL-CISO", t0.Add(5*time.Hour), 2*time.Hour)
	if err != nil || !equal(got.Values, []float64{290, 280}) {
		t.Fatalf("replay at 05:00 %v: %v", got.Values, err)
	}
	got, err = r.Forecast(ctx, "US-CAL-CISO", t0.Add(6*time.Hour), time.Hour)
	if err != nil || !equal(got.Values, []float64{250}) {
		t.Fatalf("replay at 06:00 %v: %v", got.Values, err)
	}
	if _, err := r.Forecast(ctx, "US-CAL-CISO", t0.Add(3*time.Hour), time.Hour); !errors.Is(err, carbon.ErrUnavailable) {
		t.Fatalf("replay before any forecast: %v", err)
	}
}

// TestFallbackChain: whatever a live provider does wrong, the chain ends in
// the embedded history, answers, and counts the failure.
func TestFallbackChain(t *testing.T) {
	hist, err := Embedded(carbon.LifeCycle)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		h    http.HandlerFunc
		want error
	}{
		"timeout": {func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, ErrTransport},
		"http error": {func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }, ErrStatus},
		"malformed json": {func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"zone":"US-CAL-CISO","forecast":[{"carbonIn`))
		}, carbon.ErrFormat},
		"gaps":        {file(t, "electricitymaps_v3_forecast_gap_SYNTHETIC.json"), carbon.ErrGap},
		"wrong shape": {func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`[1,2,3]`)) }, carbon.ErrFormat},
		"empty":       {func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"forecast":[]}`)) }, carbon.ErrEmpty},
		"negative": {func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"forecast":[{"carbonIntensity":-5,"datetime":"2024-03-01T06:00:00Z"}]}`))
		}, carbon.ErrValue},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, map[string]http.HandlerFunc{"/v3/carbon-intensity/forecast": tc.h})
			em := &Counted{Name: "em", Base: &ElectricityMaps{Token: "tok", BaseURL: srv.URL}, Timeout: 100 * time.Millisecond}
			last := &Counted{Name: "history", Base: hist}
			chain := carbon.Fallback{em, last}
			s, err := chain.Forecast(context.Background(), "US-CAL-CISO", t0.Add(6*time.Hour), 3*time.Hour)
			if err != nil {
				t.Fatalf("chain failed: %v", err)
			}
			if s.Len() != 3 || s.Source != "history(electricitymaps)" || !s.Estimated[0] {
				t.Fatalf("answer %+v", s)
			}
			st := em.Stats()
			if st.Failed != 1 || st.OK != 0 || !errors.Is(st.LastError, tc.want) || !errors.Is(st.LastError, carbon.ErrUnavailable) {
				t.Fatalf("em stats %+v, want one failure wrapping %v", st, tc.want)
			}
			if last.Stats().OK != 1 {
				t.Fatalf("history stats %+v", last.Stats())
			}
		})
	}
	// a provider that panics or answers the wrong span is a counted failure too
	for name, f := range map[string]carbon.ForecasterFunc{
		"panic": func(context.Context, string, time.Time, time.Duration) (carbon.Series, error) { panic("bug") },
		"short": func(_ context.Context, z string, from time.Time, _ time.Duration) (carbon.Series, error) {
			return carbon.Series{Start: from, Step: time.Hour, Values: []float64{1}, Unit: carbon.GPerKWh}, nil
		},
	} {
		c := &Counted{Name: name, Base: f}
		if _, err := (carbon.Fallback{c, hist}).Forecast(context.Background(), "ES", t0, 3*time.Hour); err != nil || c.Stats().Failed != 1 {
			t.Fatalf("%s: %v %+v", name, err, c.Stats())
		}
	}
}

func TestHistoryShifts(t *testing.T) {
	hist, err := Embedded(carbon.Direct)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec, _ := hist.Forecast(ctx, "ES", time.Date(2022, 3, 2, 10, 0, 0, 0, time.UTC), 48*time.Hour)
	// 2026-12-02 is 4×52 weeks + ... later: any multiple of 52 weeks maps back
	for _, k := range []int{-3, 1, 4, 7} {
		from := time.Date(2022, 3, 2, 10, 30, 0, 0, time.UTC).Add(time.Duration(k) * period)
		s, err := hist.Forecast(ctx, "ES", from, 47*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(s.Values, rec.Values) || s.Start.Weekday() != rec.Start.Weekday() || !s.Start.Equal(from.Truncate(time.Hour)) {
			t.Fatalf("shift %d: %v from %v differs from the record", k, s.Start, from)
		}
	}
	// a span across the record's end wraps rather than failing
	if s, err := hist.Forecast(ctx, "NO", time.Date(2022, 12, 30, 0, 0, 0, 0, time.UTC), 72*time.Hour); err != nil || s.Len() != 72 {
		t.Fatalf("wrap: %v", err)
	}
	if _, err := hist.Forecast(ctx, "XX", t0, time.Hour); !errors.Is(err, carbon.ErrUnavailable) {
		t.Fatalf("unknown zone: %v", err)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func TestReplayRules(t *testing.T) {
	mk := func(at time.Time, start time.Time, v ...float64) Issued {
		return Issued{At: at, Series: carbon.Series{Start: start, Step: time.Hour, Values: v, Unit: carbon.GPerKWh, Zone: "Z", Source: "test"}}
	}
	if _, err := NewReplay(mk(t0, t0, 1), mk(t0, t0, 2)); !errors.Is(err, carbon.ErrInvalid) {
		t.Fatalf("two forecasts issued at once: %v", err)
	}
	if _, err := NewReplay(mk(time.Time{}, t0, 1)); !errors.Is(err, carbon.ErrInvalid) {
		t.Fatalf("no issue time: %v", err)
	}
	if _, err := NewReplay(mk(t0, t0, -1)); !errors.Is(err, carbon.ErrValue) {
		t.Fatalf("negative value: %v", err)
	}
	// given out of order; the newest issued by from that covers the span wins,
	// and a newer one that does not cover it falls back to an older one
	r, err := NewReplay(mk(t0.Add(2*time.Hour), t0.Add(2*time.Hour), 20), mk(t0, t0, 1, 2, 3, 4), mk(t0.Add(time.Hour), t0.Add(time.Hour), 10, 11, 12))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		from time.Duration
		h    time.Duration
		want []float64
	}{
		{0, 2 * time.Hour, []float64{1, 2}},
		{time.Hour + 30*time.Minute, time.Hour, []float64{10, 11}},
		{2 * time.Hour, time.Hour, []float64{20}},
		{2 * time.Hour, 2 * time.Hour, []float64{11, 12}},
		{3 * time.Hour, time.Hour, []float64{12}},
	} {
		s, err := r.Forecast(ctx, "Z", t0.Add(tc.from), tc.h)
		if err != nil || !equal(s.Values, tc.want) {
			t.Fatalf("from +%v for %v: %v %v, want %v", tc.from, tc.h, s.Values, err, tc.want)
		}
	}
}
