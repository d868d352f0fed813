package cache

import (
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
)

// This file holds what the server reads back from a Delta: the resources
// and versions held, for its diff and for confirmation.

// View calls f with the resources held, by name, under the cache's lock:
// f must neither keep nor change the map, nor call the cache. (The server
// compares a translation with them without copying 10,000 entries.)
func (c *Delta) View(f func(held map[string]*Entry)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.res)
}

// Versions returns the version of every resource held, by name (a new
// map): the server's record of what it applied to this type.
func (c *Delta) Versions() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.res))
	for name, e := range c.res {
		c.materialise(e)
		out[name] = e.version
	}
	return out
}

// VersionsWhere returns the versions of the resources held whose name
// keep accepts (a new map), encoding only those of them encoded lazily
// (Entry.Lazy). keep runs under the cache's lock: it must not call the
// cache.
func (c *Delta) VersionsWhere(keep func(name string) bool) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for name, e := range c.res {
		if keep(name) {
			c.materialise(e)
			out[name] = e.version
		}
	}
	return out
}

// HeldOf returns those of names held, by name (a new map; nil for those
// held as encodings only).
func (c *Delta) HeldOf(names []string) map[string]types.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]types.Resource, len(names))
	for _, name := range names {
		if e := c.res[name]; e != nil {
			out[name] = e.msg
		}
	}
	return out
}

// VersionsOf returns the versions of those of names held (a new map).
func (c *Delta) VersionsOf(names []string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(names))
	for _, name := range names {
		if e := c.res[name]; e != nil {
			c.materialise(e)
			out[name] = e.version
		}
	}
	return out
}

// Held returns every resource held, by name (a new map; nil for
// those held as encodings only).
func (c *Delta) Held() map[string]types.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]types.Resource, len(c.res))
	for name, e := range c.res {
		out[name] = e.msg
	}
	return out
}

// EncodedVersionsOf returns the versions of those of names held that are
// encoded (a new map): a lazy entry not materialised yet (Entry.Lazy) is
// left out, and stays unencoded.
func (c *Delta) EncodedVersionsOf(names []string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, name := range names {
		if e := c.res[name]; e != nil && e.version != "" {
			out[name] = e.version
		}
	}
	return out
}
