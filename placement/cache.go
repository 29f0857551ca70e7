package placement

import (
	"sync"

	"github.com/goodsched/goodsched/accel"
)

// IndexCache remembers the index of the last cluster it indexed, so that
// a host that passes the same cluster every round (the common case) pays
// for one comparison (Index.Indexes) instead of validation and indexing.
// The zero value is ready; a nil *IndexCache caches nothing. It is safe
// for concurrent use.
type IndexCache struct {
	mu  sync.Mutex
	idx *Index
}

// Index returns the index of c: the cached one when it indexes c, else
// a new one (c is validated first, accel.Cluster.Validate), which is
// cached.
func (cc *IndexCache) Index(c *accel.Cluster) (*Index, error) {
	if cc == nil {
		return validIndex(c)
	}
	cc.mu.Lock()
	idx := cc.idx
	cc.mu.Unlock()
	if idx.Indexes(c) {
		return idx, nil
	}
	idx, err := validIndex(c)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	cc.idx = idx
	cc.mu.Unlock()
	return idx, nil
}

// validIndex validates c and indexes it.
func validIndex(c *accel.Cluster) (*Index, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return NewIndex(*c)
}
