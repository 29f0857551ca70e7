package nvml

import "time"

// Option configures Open.
type Option func(*options)

type options struct {
	lib      library // nil: the real NVML library
	nodeName string
	poll     time.Duration
	now      func() time.Time
}

// DefaultPollInterval is how long the Health goroutine waits on the NVML
// event set before it checks its context again.
const DefaultPollInterval = 500 * time.Millisecond

// WithNodeName sets the node name of the snapshot; the default is the
// host name (os.Hostname), or "localhost" if that fails.
func WithNodeName(name string) Option { return func(o *options) { o.nodeName = name } }

// WithPollInterval sets how long one wait on the NVML event set lasts; the
// Health channel closes at most this long after its context ends. Zero or
// less means DefaultPollInterval.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.poll = d } }

// WithClock sets the clock that stamps health events; nil means time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }
