package accel

import (
	"context"
	"fmt"
	"sync"
)

// Static is an Inventory over a fixed cluster, for tests and simulators.
// Its devices' health can be changed with Apply, MarkUnhealthy and
// MarkHealthy, and each change is delivered to every Health stream.
//
// Static is safe for concurrent use.
type Static struct {
	mu   sync.Mutex
	c    Cluster
	subs map[*subscriber]struct{}
}

// subscriber buffers events for one Health stream without bound, so that
// Apply never blocks on a slow reader.
type subscriber struct {
	queue  []HealthEvent
	notify chan struct{} // capacity 1: "queue is not empty"
}

var (
	_ Inventory    = (*Static)(nil)
	_ HealthSource = (*Static)(nil)
)

// NewStatic returns an inventory over a copy of c. It fails with ErrInvalid
// if c does not validate.
func NewStatic(c Cluster) (*Static, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Static{c: c.Clone(), subs: make(map[*subscriber]struct{})}, nil
}

// NewStaticSpec parses a description with ParseSpec and returns an
// inventory over it.
func NewStaticSpec(spec string) (*Static, error) {
	c, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return NewStatic(c)
}

// Snapshot returns a deep copy of the current cluster, or ctx's error if
// it is already done.
func (s *Static) Snapshot(ctx context.Context) (Cluster, error) {
	if err := ctx.Err(); err != nil {
		return Cluster{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Clone(), nil
}

// Apply records a health event and sends it to every Health stream. A lost
// device, or a critical Xid (the event's Critical flag), marks the device
// (and its MIG instances) unhealthy with the event's message (or kind and
// Xid) as Fault; HealthRecovered marks it healthy again; a non-critical
// Xid changes nothing but is still delivered. It fails with ErrNotFound for
// an unknown device and ErrInvalid for an unknown kind.
func (s *Static) Apply(ev HealthEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.c.Device(ev.Device); !ok {
		return fmt.Errorf("%w: health event for device %q", ErrNotFound, ev.Device)
	}
	fault := ev.Message
	switch {
	case ev.Kind == HealthXid && fault == "":
		fault = "xid " + fmt.Sprint(ev.Xid)
	case ev.Kind == HealthLost && fault == "":
		fault = "device lost"
	}
	switch ev.Kind {
	case HealthXid:
		if ev.Critical {
			s.c.setHealth(ev.Device, false, fault)
		}
	case HealthLost:
		s.c.setHealth(ev.Device, false, fault)
	case HealthRecovered:
		s.c.setHealth(ev.Device, true, "")
	default:
		return fmt.Errorf("%w: health event kind %d", ErrInvalid, int(ev.Kind))
	}
	for sub := range s.subs {
		sub.queue = append(sub.queue, ev)
		select {
		case sub.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

// MarkUnhealthy is Apply of a critical HealthLost event with the given
// message and a zero time.
func (s *Static) MarkUnhealthy(id, message string) error {
	return s.Apply(HealthEvent{Device: id, Kind: HealthLost, Critical: true, Message: message})
}

// MarkHealthy is Apply of a HealthRecovered event with a zero time.
func (s *Static) MarkHealthy(id string) error {
	return s.Apply(HealthEvent{Device: id, Kind: HealthRecovered})
}

// Health returns a stream of the events applied from now on, in order. No
// event is dropped: a slow reader only delays delivery. One goroutine per
// stream forwards events; it lives only while ctx lives, and the channel is
// closed when ctx is done (events not yet received are then discarded).
func (s *Static) Health(ctx context.Context) (<-chan HealthEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &subscriber{notify: make(chan struct{}, 1)}
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	out := make(chan HealthEvent)
	go s.forward(ctx, sub, out)
	return out, nil
}

func (s *Static) forward(ctx context.Context, sub *subscriber, out chan<- HealthEvent) {
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
		close(out)
	}()
	for {
		s.mu.Lock()
		batch := sub.queue
		sub.queue = nil
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-sub.notify:
		case <-ctx.Done():
			return
		}
	}
}
