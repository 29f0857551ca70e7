package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// Sentinel errors. Every error a client returns wraps carbon.ErrUnavailable
// as well, so a carbon.Fallback treats it as "ask the next provider".
var (
	// ErrTransport reports a request that got no response: a refused
	// connection, a timeout, a cancelled context.
	ErrTransport = errors.New("live: request failed")
	// ErrStatus reports a response with a status other than 200; the
	// error is a *StatusError.
	ErrStatus = errors.New("live: unexpected HTTP status")
	// ErrAuth reports missing credentials or a rejected login (401/403).
	ErrAuth = errors.New("live: not authorised")
)

// StatusError is a response with a status other than 200. It wraps
// ErrStatus, and ErrAuth for 401 and 403.
type StatusError struct {
	// Provider names the service, for example "watttime".
	Provider string
	// URL is the request's URL without its query.
	URL string
	// Code is the HTTP status code.
	Code int
	// Body is the start of the response body, for the log.
	Body string
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("live: %s: %s: HTTP %d: %s", e.Provider, e.URL, e.Code, e.Body)
}

// Unwrap returns ErrStatus, and ErrAuth for 401 and 403.
func (e *StatusError) Unwrap() []error {
	if e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden {
		return []error{ErrStatus, ErrAuth}
	}
	return []error{ErrStatus}
}

// maxBody bounds a response body: a year of 5-minute points is ~10 MB.
const maxBody = 64 << 20

// defaultClient is used when a client's HTTP field is nil.
var defaultClient = &http.Client{Timeout: 30 * time.Second}

func httpClient(c *http.Client) *http.Client {
	if c == nil {
		return defaultClient
	}
	return c
}

// unavailable wraps err with carbon.ErrUnavailable and the provider.
func unavailable(provider string, err error) error {
	return fmt.Errorf("%w: %s: %w", carbon.ErrUnavailable, provider, err)
}

// do sends req and returns the body of a 200 response, bounded by maxBody.
func do(c *http.Client, provider string, req *http.Request) ([]byte, error) {
	resp, err := httpClient(c).Do(req)
	if err != nil {
		return nil, unavailable(provider, fmt.Errorf("%w: %v", ErrTransport, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, unavailable(provider, fmt.Errorf("%w: reading body: %v", ErrTransport, err))
	}
	if resp.StatusCode != http.StatusOK {
		snippet := strings.TrimSpace(string(b[:min(len(b), 200)]))
		u := *req.URL
		u.RawQuery = ""
		return nil, unavailable(provider, &StatusError{Provider: provider, URL: u.String(), Code: resp.StatusCode, Body: snippet})
	}
	if len(b) > maxBody {
		return nil, unavailable(provider, fmt.Errorf("%w: body larger than %d bytes", carbon.ErrFormat, maxBody))
	}
	return b, nil
}

// decode unmarshals a JSON body, wrapping failures with carbon.ErrFormat.
func decode(provider, what string, b []byte, out any) error {
	if err := json.Unmarshal(b, out); err != nil {
		return unavailable(provider, fmt.Errorf("%w: %s: %v", carbon.ErrFormat, what, err))
	}
	return nil
}

// newRequest builds a GET (or POST with a JSON body) request.
func newRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", carbon.ErrInvalid, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// checkSpan rejects a non-positive horizon and a cancelled ctx.
func checkSpan(ctx context.Context, horizon time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if horizon <= 0 {
		return fmt.Errorf("%w: horizon %v must be positive", carbon.ErrInvalid, horizon)
	}
	return nil
}

// cover slices s to [from, from+horizon), or reports that it does not
// cover the span.
func cover(provider string, s carbon.Series, from time.Time, horizon time.Duration) (carbon.Series, error) {
	out, err := s.Slice(from, from.Add(horizon))
	if err != nil {
		return carbon.Series{}, unavailable(provider, err)
	}
	return out, nil
}

// mapped returns m[zone], or zone when m has no entry.
func mapped(m map[string]string, zone string) string {
	if z, ok := m[zone]; ok {
		return z
	}
	return zone
}
