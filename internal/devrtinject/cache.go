package devrtinject

import (
	"container/list"
	"sync"
)

// Key is what a patched module depends on: the PTX's content, the device
// it is JITed for, and the probe set.
type Key struct {
	Hash    [32]byte
	SMArch  uint32
	Version uint64
}

// Cache keeps answers by Key, least recently used first out, bounded in
// entries and in bytes of PTX. Safe for concurrent use.
type Cache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	lru        *list.List // of *cacheEntry, most recent first
	byKey      map[Key]*list.Element
}

type cacheEntry struct {
	key Key
	res Result
}

// NewCache returns a cache of at most maxEntries answers and maxBytes of
// patched PTX (an answer larger than maxBytes is not kept).
func NewCache(maxEntries int, maxBytes int64) *Cache {
	return &Cache{maxEntries: max(maxEntries, 1), maxBytes: maxBytes,
		lru: list.New(), byKey: map[Key]*list.Element{}}
}

func size(r *Result) int64 {
	n := int64(len(r.PTX) + len(r.Reason))
	for _, k := range r.Kernels {
		n += int64(len(k)) + 1
	}
	for _, v := range r.Vars {
		n += int64(len(v)) + 1
	}
	return n
}

// Get returns the answer for k, if kept.
func (c *Cache) Get(k Key) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return Result{}, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).res, true
}

// Put keeps r for k, dropping the least recently used answers over the
// bounds.
func (c *Cache) Put(k Key, r Result) {
	n := size(&r)
	if n > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.bytes -= size(&e.Value.(*cacheEntry).res)
		e.Value.(*cacheEntry).res = r
		c.bytes += n
		c.lru.MoveToFront(e)
	} else {
		c.byKey[k] = c.lru.PushFront(&cacheEntry{key: k, res: r})
		c.bytes += n
	}
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		e := c.lru.Back()
		ce := e.Value.(*cacheEntry)
		c.lru.Remove(e)
		delete(c.byKey, ce.key)
		c.bytes -= size(&ce.res)
	}
}

// Len is the number of answers kept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
