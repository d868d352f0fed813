package cache

import (
	"maps"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/thaw-dev/thaw/xds/encoded"
)

// allMessages returns every current resource as a message (a new map;
// resources kept as encodings decoded). c.mu must be held.
func (c *Delta) allMessages() (map[string]types.Resource, error) {
	all := make(map[string]types.Resource, len(c.res))
	enc := map[string][]byte{}
	for name, e := range c.res {
		all[name] = e.msg
		if e.msg == nil {
			c.materialise(e)
			enc[name] = e.bytes
		}
	}
	return c.messages(all, enc)
}

// CreateWatch serves state-of-the-world xDS from the inner LinearCache,
// which it creates, holding every current resource, on the first call.
func (c *Delta) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	c.mu.Lock()
	if c.sotw == nil {
		all, err := c.allMessages()
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.sotw = cachev3.NewLinearCache(c.typeURL, cachev3.WithInitialResources(all))
	}
	sotw := c.sotw
	c.mu.Unlock()
	return sotw.CreateWatch(req, sub, ch)
}

// messages returns upd with its nil resources decoded from enc: the
// state-of-the-world cache needs messages.
func (c *Delta) messages(upd map[string]types.Resource, enc map[string][]byte) (map[string]types.Resource, error) {
	var out map[string]types.Resource
	for name, r := range upd {
		if r != nil {
			continue
		}
		if out == nil {
			out = maps.Clone(upd)
		}
		m, err := encoded.Decode(c.typeURL, enc[name])
		if err != nil {
			return nil, err
		}
		out[name] = m
	}
	if out == nil {
		return upd, nil
	}
	return out, nil
}

// Messages returns every resource held by name as a message (a new map,
// the messages shared; those held as encodings only decoded), as
// LinearCache's GetResources does. The error is a decoding error.
func (c *Delta) Messages() (map[string]types.Resource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.allMessages()
}
