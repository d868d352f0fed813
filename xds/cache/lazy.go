package cache

import "github.com/thaw-dev/thaw/xds/encoded"

// This file is the cache's part of lazily encoded resources
// (encoded.NewLazy, UpdateLazy): on-demand virtual hosts, encoded when a
// stream is first to be sent one.

// Lazy returns the lazily encoded resource e was set with, nil for one
// set with its encoding.
func (e *Entry) Lazy() *encoded.Resource { return e.lazy }

// materialise fills in a lazy entry's encoding and version if not yet
// done, and reports whether e has them (false only when the encoding
// failed, which a validated message never does). Call under c.mu.
func (c *Delta) materialise(e *Entry) bool {
	if e.lazy == nil || e.version != "" {
		return true
	}
	b, v, err := e.lazy.Get()
	if err != nil {
		return false
	}
	e.bytes, e.version = b, v
	return true
}
