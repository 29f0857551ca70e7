package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// WattTime is a client of the WattTime API v3 (api.watttime.org). It logs
// in with basic auth at /login for a bearer token, keeps the token for
// TokenTTL and logs in again on expiry or a 401, then asks /v3/forecast,
// /v3/historical, /v3/forecast/historical and /v3/signal-index with region
// and signal_type. CO2_MOER values arrive in lbs/MWh; this client returns
// them converted to g/kWh (× 0.45359237), Signal Marginal, Basis Direct
// (operating emissions). Set fields before first use; it is then safe for
// concurrent use.
type WattTime struct {
	// Username and Password are the account's credentials.
	Username, Password string
	// BaseURL defaults to https://api.watttime.org.
	BaseURL string
	// SignalType defaults to co2_moer.
	SignalType string
	// Regions maps the caller's zone names to WattTime regions, for
	// example "US-CAL-CISO" → "CAISO_NORTH"; a zone without an entry is
	// sent as is.
	Regions map[string]string
	// TokenTTL is how long a token is reused; zero means 25 minutes
	// (WattTime's tokens expire after 30).
	TokenTTL time.Duration
	// HTTP is the client; nil means one with a 30 s timeout.
	HTTP *http.Client

	mu      sync.Mutex
	token   string
	tokenAt time.Time
}

const wtName = "watttime"

func (w *WattTime) base() string {
	if w.BaseURL == "" {
		return "https://api.watttime.org"
	}
	return strings.TrimRight(w.BaseURL, "/")
}

func (w *WattTime) signal() string {
	if w.SignalType == "" {
		return "co2_moer"
	}
	return w.SignalType
}

// login returns a cached token or fetches a new one.
func (w *WattTime) login(ctx context.Context, fresh bool) (string, error) {
	ttl := w.TokenTTL
	if ttl <= 0 {
		ttl = 25 * time.Minute
	}
	w.mu.Lock()
	if !fresh && w.token != "" && time.Since(w.tokenAt) < ttl {
		t := w.token
		w.mu.Unlock()
		return t, nil
	}
	w.mu.Unlock()
	if w.Username == "" || w.Password == "" {
		return "", unavailable(wtName, fmt.Errorf("%w: WattTime.Username or Password is empty", ErrAuth))
	}
	req, err := newRequest(ctx, http.MethodGet, w.base()+"/login", nil)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(w.Username, w.Password)
	b, err := do(w.HTTP, wtName, req)
	if err != nil {
		return "", err
	}
	var doc struct {
		Token string `json:"token"`
	}
	if err := decode(wtName, "login", b, &doc); err != nil {
		return "", err
	}
	if doc.Token == "" {
		return "", unavailable(wtName, fmt.Errorf("%w: login returned no token", ErrAuth))
	}
	w.mu.Lock()
	w.token, w.tokenAt = doc.Token, time.Now()
	w.mu.Unlock()
	return doc.Token, nil
}

// get sends an authorised GET, logging in again once on a 401.
func (w *WattTime) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		tok, err := w.login(ctx, attempt > 0)
		if err != nil {
			return nil, err
		}
		req, err := newRequest(ctx, http.MethodGet, w.base()+path+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		b, err := do(w.HTTP, wtName, req)
		var se *StatusError
		if attempt == 0 && asStatus(err, &se) && se.Code == http.StatusUnauthorized {
			continue
		}
		return b, err
	}
}

func (w *WattTime) query(zone string) url.Values {
	return url.Values{"region": {mapped(w.Regions, zone)}, "signal_type": {w.signal()}}
}

// signalSeries decodes a v3 data response and converts it to g/kWh.
func (w *WattTime) signalSeries(zone, what string, b []byte) (carbon.Series, error) {
	s, err := carbon.ReadWattTimeJSON(bytes.NewReader(b), carbon.ReadOptions{})
	if err != nil {
		return carbon.Series{}, unavailable(wtName, fmt.Errorf("%s: %w", what, err))
	}
	return w.finish(zone, s)
}

func (w *WattTime) finish(zone string, s carbon.Series) (carbon.Series, error) {
	g, err := s.Convert(carbon.GPerKWh)
	if err != nil {
		return carbon.Series{}, unavailable(wtName, err)
	}
	if g.Signal == carbon.Marginal {
		g.Basis = carbon.Direct
	}
	g.Zone, g.Source = zone, wtName
	return g, nil
}

// Forecast implements carbon.Forecaster with /v3/forecast; when from lies
// before the forecast's first point, /v3/historical fills the span from
// from up to it.
func (w *WattTime) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (carbon.Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return carbon.Series{}, err
	}
	q := w.query(zone)
	q.Set("horizon_hours", strconv.Itoa(int(math.Ceil(min(horizon.Hours(), 72)))))
	b, err := w.get(ctx, "/v3/forecast", q)
	if err != nil {
		return carbon.Series{}, err
	}
	s, err := w.signalSeries(zone, "forecast", b)
	if err != nil {
		return carbon.Series{}, err
	}
	if from.Before(s.Start) {
		h, err := w.Historical(ctx, zone, from, s.Start)
		if err != nil {
			return carbon.Series{}, err
		}
		if s, err = join(h, s); err != nil {
			return carbon.Series{}, unavailable(wtName, err)
		}
	}
	return cover(wtName, s, from, horizon)
}

// Historical returns the signal over [start, end) from /v3/historical.
func (w *WattTime) Historical(ctx context.Context, zone string, start, end time.Time) (carbon.Series, error) {
	q := w.query(zone)
	q.Set("start", start.UTC().Format(time.RFC3339))
	q.Set("end", end.UTC().Format(time.RFC3339))
	b, err := w.get(ctx, "/v3/historical", q)
	if err != nil {
		return carbon.Series{}, err
	}
	return w.signalSeries(zone, "historical", b)
}

// HistoricalForecasts returns the forecasts WattTime issued between start
// and end (/v3/forecast/historical), each with the time it was generated,
// for Replay.
func (w *WattTime) HistoricalForecasts(ctx context.Context, zone string, start, end time.Time) ([]Issued, error) {
	q := w.query(zone)
	q.Set("start", start.UTC().Format(time.RFC3339))
	q.Set("end", end.UTC().Format(time.RFC3339))
	b, err := w.get(ctx, "/v3/forecast/historical", q)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Data []struct {
			GeneratedAt string          `json:"generated_at"`
			Forecast    json.RawMessage `json:"forecast"`
		} `json:"data"`
		Meta json.RawMessage `json:"meta"`
	}
	if err := decode(wtName, "forecast/historical", b, &doc); err != nil {
		return nil, err
	}
	out := make([]Issued, 0, len(doc.Data))
	for i, d := range doc.Data {
		at, err := time.Parse(time.RFC3339Nano, d.GeneratedAt)
		if err != nil {
			return nil, unavailable(wtName, fmt.Errorf("%w: data[%d].generated_at %q", carbon.ErrFormat, i, d.GeneratedAt))
		}
		one := []byte(`{"data":` + string(d.Forecast) + `,"meta":` + string(orNull(doc.Meta)) + `}`)
		s, err := w.signalSeries(zone, fmt.Sprintf("forecast/historical data[%d]", i), one)
		if err != nil {
			return nil, err
		}
		out = append(out, Issued{At: at, Series: s})
	}
	return out, nil
}

// Index returns the signal index, a percentile from 0 (cleanest) to 100,
// of the latest point, and the time it holds from (/v3/signal-index).
func (w *WattTime) Index(ctx context.Context, zone string) (percent float64, at time.Time, err error) {
	b, err := w.get(ctx, "/v3/signal-index", w.query(zone))
	if err != nil {
		return 0, time.Time{}, err
	}
	var doc struct {
		Data []struct {
			PointTime string   `json:"point_time"`
			Value     *float64 `json:"value"`
		} `json:"data"`
	}
	if err := decode(wtName, "signal-index", b, &doc); err != nil {
		return 0, time.Time{}, err
	}
	if len(doc.Data) == 0 || doc.Data[0].Value == nil {
		return 0, time.Time{}, unavailable(wtName, fmt.Errorf("%w: signal-index has no value", carbon.ErrEmpty))
	}
	v := *doc.Data[0].Value
	if math.IsNaN(v) || v < 0 || v > 100 {
		return 0, time.Time{}, unavailable(wtName, fmt.Errorf("%w: signal-index value %v outside [0, 100]", carbon.ErrValue, v))
	}
	at, err = time.Parse(time.RFC3339Nano, doc.Data[0].PointTime)
	if err != nil {
		return 0, time.Time{}, unavailable(wtName, fmt.Errorf("%w: signal-index point_time %q", carbon.ErrFormat, doc.Data[0].PointTime))
	}
	return v, at, nil
}

func orNull(b []byte) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("null")
	}
	return b
}
