package live

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/goodsched/goodsched/carbon"
)

// Counted wraps one provider of a carbon.Fallback chain: it bounds each
// call by Timeout, checks that the answer is a valid series covering the
// span asked for (first interval holds from, last reaches from+horizon),
// turns a panic into an error, and counts successes and failures, so a
// host can see which provider is answering. Set fields before first use;
// it is then safe for concurrent use when Base is.
type Counted struct {
	// Name labels the provider in Stats and errors.
	Name string
	// Base is the provider.
	Base carbon.Forecaster
	// Timeout, when positive, bounds each call, so that a slow provider
	// leaves the round's context time for the next one.
	Timeout time.Duration

	mu    sync.Mutex
	stats Stats
}

// Stats counts a provider's calls.
type Stats struct {
	// OK counts valid answers.
	OK int
	// Failed counts errors, timeouts, panics and invalid answers.
	Failed int
	// LastError is the latest failure, or nil.
	LastError error
}

// Stats returns the counts so far.
func (c *Counted) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Forecast implements carbon.Forecaster.
func (c *Counted) Forecast(ctx context.Context, zone string, from time.Time, horizon time.Duration) (s carbon.Series, err error) {
	if c.Base == nil {
		return carbon.Series{}, fmt.Errorf("%w: Counted %q has no Base", carbon.ErrInvalid, c.Name)
	}
	if err := ctx.Err(); err != nil {
		return carbon.Series{}, err
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = carbon.Series{}, fmt.Errorf("%w: %s panicked: %v", carbon.ErrUnavailable, c.Name, r)
		}
		c.mu.Lock()
		if err == nil {
			c.stats.OK++
		} else {
			c.stats.Failed++
			c.stats.LastError = err
		}
		c.mu.Unlock()
	}()
	call := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		call, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	s, err = c.Base.Forecast(call, zone, from, horizon)
	if err != nil {
		if ctx.Err() == nil && call.Err() != nil {
			// our own timeout, not the caller's: let the chain go on
			return carbon.Series{}, fmt.Errorf("%w: %s: %w: timed out after %v", carbon.ErrUnavailable, c.Name, ErrTransport, c.Timeout)
		}
		return carbon.Series{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	if err := s.Validate(); err != nil {
		return carbon.Series{}, fmt.Errorf("%w: %s returned an invalid series: %w", carbon.ErrUnavailable, c.Name, err)
	}
	if i, ok := s.Index(from); !ok || i != 0 || s.End().Before(from.Add(horizon)) {
		return carbon.Series{}, fmt.Errorf("%w: %s returned [%v, %v), not a cover of [%v, %v) starting with from's interval", carbon.ErrUnavailable, c.Name, s.Start, s.End(), from, from.Add(horizon))
	}
	return s, nil
}
