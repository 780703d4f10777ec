package sqlstore

import (
	"encoding/json"
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	"github.com/anvil-metal/anvil/internal/model"
)

// DefaultNodeCacheSize is how many decoded nodes a Store keeps by default.
const DefaultNodeCacheSize = 2048

// WithNodeCache sets how many decoded nodes the store keeps (0 disables the
// cache).
func WithNodeCache(size int) Option {
	return func(s *Store) { s.cache = newNodeCache(size) }
}

// nodeCache keeps decoded node JSON by row id, so listing nodes that did not
// change costs a deep copy instead of a JSON decode (several times cheaper).
// An entry is used only if the hash of the row's data column equals the one
// it was decoded from, so the cache cannot serve stale data whoever wrote the
// row; it needs no invalidation, only a bound on its size. Entries are never
// handed out: callers get deep copies.
type nodeCache struct {
	seed maphash.Seed
	max  int
	mu   sync.RWMutex
	m    map[int64]cachedNode
}

type cachedNode struct {
	sum  uint64
	size int
	n    *model.Node
}

func newNodeCache(size int) *nodeCache {
	if size <= 0 {
		return nil
	}
	return &nodeCache{seed: maphash.MakeSeed(), max: size, m: make(map[int64]cachedNode)}
}

// decode returns the node that data encodes, from the cache when it can.
func (c *nodeCache) decode(id int64, data []byte) (*model.Node, error) {
	if c == nil {
		return unmarshalNode(data)
	}
	sum := maphash.Bytes(c.seed, data)
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	if ok && e.sum == sum && e.size == len(data) {
		return cloneNode(e.n), nil
	}
	n, err := unmarshalNode(data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, ok := c.m[id]; !ok && len(c.m) >= c.max {
		for k := range c.m { // evicts an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	c.m[id] = cachedNode{sum: sum, size: len(data), n: cloneNode(n)}
	c.mu.Unlock()
	return n, nil
}

func unmarshalNode(data []byte) (*model.Node, error) {
	n := new(model.Node)
	if err := json.Unmarshal(data, n); err != nil {
		return nil, err
	}
	return n, nil
}

// cloneNode deep-copies n (sqlstore's tests check that no memory is shared).
func cloneNode(n *model.Node) *model.Node {
	c := *n
	for _, m := range []*model.JSON{&c.DriverInfo, &c.DriverInternalInfo, &c.Properties,
		&c.InstanceInfo, &c.Extra, &c.CleanStep, &c.DeployStep, &c.ServiceStep,
		&c.RaidConfig, &c.TargetRaidConfig, &c.NetworkData} {
		*m = cloneJSON(*m)
	}
	c.Traits = slices.Clone(n.Traits)
	c.AutomatedClean = clonePtr(n.AutomatedClean)
	c.SecureBoot = clonePtr(n.SecureBoot)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneJSON deep-copies a decoded JSON object.
func cloneJSON(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := maps.Clone(m) // copies the table wholesale; then replace nested values
	for k, v := range m {
		switch v.(type) {
		case map[string]any, []any:
			c[k] = cloneValue(v)
		}
	}
	return c
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneJSON(x)
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v // string, float64, bool, nil: immutable
}
