package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// CarbonAwareSDK is a client of the Green Software Foundation's Carbon
// Aware SDK Web API: GET /emissions/forecasts/current, GET
// /emissions/bylocations and POST /emissions/forecasts/batch. Values are
// the SDK's rating/value in g/kWh. The SDK does not say whether its
// backend's data are average or marginal, so Signal and Basis label them
// (for a WattTime backend: Marginal, Direct; for Electricity Maps:
// Average, LifeCycle). Set fields before first use; it is then safe for
// concurrent use.
type CarbonAwareSDK struct {
	// BaseURL is the deployment's root, for example
	// http://carbon-aware-api.default.svc; required.
	BaseURL string
	// Signal and Basis label the values.
	Signal carbon.Signal
	Basis  carbon.Basis
	// Locations maps the caller's zone names to SDK locations, for
	// example "US-CAL-CISO" → "westus"; a zone without an entry is sent
	// as is.
	Locations map[string]string
	// HTTP is the client; nil means one with a 30 s timeout.
	HTTP *http.Client
}

const sdkName = "carbon-aware-sdk"

func (c *CarbonAwareSDK) url(path string, q url.Values) (string, error) {
	if c.BaseURL == "" {
		return "", fmt.Errorf("%w: CarbonAwareSDK.BaseURL is empty", carbon.ErrInvalid)
	}
	u := strings.TrimRight(c.BaseURL, "/") + path
	if q != nil {
		u += "?" + q.Encode()
	}
	return u, nil
}

// read decodes an SDK array (emissions or forecasts) for one location.
func (c *CarbonAwareSDK) read(zone, what string, b []byte) (carbon.Series, error) {
	s, err := carbon.ReadCarbonAwareSDK(bytes.NewReader(b), carbon.ReadOptions{
		Zone: mapped(c.Locations, zone), Signal: c.Signal, Basis: c.Basis, Unit: carbon.GPerKWh,
	})
	if err != nil {
		return carbon.Series{}, unavailable(sdkName, fmt.Errorf("%s: %w", what, err))
	}
	s.Zone, s.Source = zone, sdkName
	return s, nil
}

func (c *CarbonAwareSDK) send(ctx context.Context, method, path string, q url.Values, body []byte) ([]byte, error) {
	u, err := c.url(path, q)
	if err != nil {
		return nil, err
	}
	var r *bytes.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	var req *http.Request
	if r != nil {
		req, err = newRequest(ctx, method, u, r)
	} else {
		req, err = newRequest(ctx, method, u, nil)
	}
	if err != nil {
		return nil, err
	}
	return do(c.HTTP, sdkName, req)
}

// Forecast implements carbon.Forecaster with /emissions/forecasts/current
// (dataStartAt from, dataEndAt from+horizon); when from lies before the
// forecast's first point, /emissions/bylocations fills the span up to it.
func (c *CarbonAwareSDK) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (carbon.Series, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return carbon.Series{}, err
	}
	q := url.Values{
		"location":    {mapped(c.Locations, zone)},
		"dataStartAt": {from.UTC().Format(time.RFC3339)},
		"dataEndAt":   {from.Add(horizon).UTC().Format(time.RFC3339)},
	}
	b, err := c.send(ctx, http.MethodGet, "/emissions/forecasts/current", q, nil)
	if err != nil {
		return carbon.Series{}, err
	}
	s, err := c.read(zone, "forecasts/current", b)
	if err != nil {
		return carbon.Series{}, err
	}
	if from.Before(s.Start) {
		h, err := c.Observed(ctx, zone, from, s.Start)
		if err != nil {
			return carbon.Series{}, err
		}
		if s, err = join(h, s); err != nil {
			return carbon.Series{}, unavailable(sdkName, err)
		}
	}
	return cover(sdkName, s, from, horizon)
}

// Observed returns measured intensity over [start, end) from
// /emissions/bylocations.
func (c *CarbonAwareSDK) Observed(ctx context.Context, zone string, start, end time.Time) (carbon.Series, error) {
	q := url.Values{
		"location": {mapped(c.Locations, zone)},
		"time":     {start.UTC().Format(time.RFC3339)},
		"toTime":   {end.UTC().Format(time.RFC3339)},
	}
	b, err := c.send(ctx, http.MethodGet, "/emissions/bylocations", q, nil)
	if err != nil {
		return carbon.Series{}, err
	}
	return c.read(zone, "bylocations", b)
}

// HistoricalForecasts asks /emissions/forecasts/batch for the forecasts
// that were current at each of requestedAt, covering horizon from then,
// for Replay. Each is dated by its generatedAt, or by its requestedAt
// when the SDK omits it.
func (c *CarbonAwareSDK) HistoricalForecasts(ctx context.Context, zone string, requestedAt []time.Time, horizon time.Duration) ([]Issued, error) {
	if err := checkSpan(ctx, horizon); err != nil {
		return nil, err
	}
	type batchReq struct {
		RequestedAt string `json:"requestedAt"`
		Location    string `json:"location"`
		DataStartAt string `json:"dataStartAt"`
		DataEndAt   string `json:"dataEndAt"`
	}
	reqs := make([]batchReq, len(requestedAt))
	for i, t := range requestedAt {
		reqs[i] = batchReq{t.UTC().Format(time.RFC3339), mapped(c.Locations, zone), t.UTC().Format(time.RFC3339), t.Add(horizon).UTC().Format(time.RFC3339)}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", carbon.ErrInvalid, err)
	}
	b, err := c.send(ctx, http.MethodPost, "/emissions/forecasts/batch", nil, body)
	if err != nil {
		return nil, err
	}
	var docs []json.RawMessage
	if err := decode(sdkName, "forecasts/batch", b, &docs); err != nil {
		return nil, err
	}
	out := make([]Issued, 0, len(docs))
	for i, d := range docs {
		var head struct {
			GeneratedAt string `json:"generatedAt"`
			RequestedAt string `json:"requestedAt"`
		}
		if err := decode(sdkName, fmt.Sprintf("forecasts/batch[%d]", i), d, &head); err != nil {
			return nil, err
		}
		stamp := head.GeneratedAt
		if stamp == "" {
			stamp = head.RequestedAt
		}
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return nil, unavailable(sdkName, fmt.Errorf("%w: forecasts/batch[%d] generatedAt/requestedAt %q", carbon.ErrFormat, i, stamp))
		}
		s, err := c.read(zone, fmt.Sprintf("forecasts/batch[%d]", i), append(append([]byte("["), d...), ']'))
		if err != nil {
			return nil, err
		}
		out = append(out, Issued{At: at, Series: s})
	}
	return out, nil
}
