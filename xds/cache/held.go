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
		out[name] = e.version
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
