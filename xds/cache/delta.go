package cache

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/thaw-dev/thaw/xds/encoded"
)

// ChangeLogSize bounds the change log; a subscription older than the log
// falls back to a full comparison.
const ChangeLogSize = 1 << 16

// Delta serves one resource type: thaw uses it for
// ClusterLoadAssignments, clusters and virtual hosts (VHDS). It keeps
// each resource as its deterministic encoding and version, computed once
// by the server; go-control-plane's LinearCache kept, besides the
// resource, its own encoding, version and two closures (~0.3 KiB more per
// resource). And LinearCache compares every subscribed resource on every
// response and on every re-armed watch (after each ACK), which at 10,000
// revisions cost ~9 ms of CPU per flip per Envoy, and as much per
// revision added or removed for the wildcard cluster and virtual host
// subscriptions. This cache keeps a log of changed names
// and, per delta stream, its own record of the versions the stream was
// sent and how far that record has seen (subState): a flip costs
// O(changed). It never writes into go-control-plane's maps (see subState
// for how the subscription's returned-resources map is used), and it
// sends on watch channels after its lock is released.
// New subscriptions, subscription changes and reconnects (Envoy's
// initial_resource_versions) take the full comparison. State-of-the-world
// watches are served by an inner LinearCache holding the same resources,
// created at the first such watch: thaw's own Envoys use delta xDS only,
// and the inner cache costs ~0.3 KiB per resource (30 MiB at 100,000
// revisions) for nothing then.
type Delta struct {
	typeURL string

	mu sync.Mutex
	// sotw is nil until the first state-of-the-world watch; then every
	// update goes to it too, under mu.
	sotw *cachev3.LinearCache
	res  map[string]*Entry
	seq  uint64
	// log is a ring buffer of at most logSize entries, grown as changes
	// come (a preallocated log cost 1.5 MB per cache and type).
	log     []logEntry
	logSize int
	logLen  int // entries in use
	logHead int // index of the oldest entry
	// oldest is the lowest sequence number whose changes are all still
	// in the log.
	oldest  uint64
	watchID uint64
	watches map[uint64]*deltaWatch
	// subs is the state of each delta stream, by its response channel
	// (go-control-plane makes one per stream; this cache serves one type,
	// so one subscription per channel). idle holds, with the sequence
	// number and time of the cancel, the streams whose last watch was
	// cancelled and not re-created since: go-control-plane cancels before
	// it re-creates a watch on a request (microseconds later, on the same
	// goroutine) and when a stream ends. An update forgets the streams idle
	// for idleUpdates updates and idleFor (closed ones, which never come
	// back).
	subs map[chan cachev3.DeltaResponse]*subState
	idle map[chan cachev3.DeltaResponse]idleSince
	// now is the clock of idle and of on-demand fetches (time.Now; tests
	// set another).
	now func() time.Time
	// demand, when set, serves wildcard streams on demand (ondemand.go);
	// demandMax bounds each stream's fetched resources.
	demand    Demand
	demandMax int
}

type idleSince struct {
	seq uint64
	at  time.Time
}

// idleUpdates and idleFor bound how long a stream stays known after its
// last watch was cancelled: both must have passed. A live stream
// re-creates its watch as soon as it takes the cache's lock; one forgotten
// anyway is reset (CreateDeltaWatch) and its Envoy reconnects with the
// versions it holds. A closed stream's state (its record, up to one entry
// per resource) is kept that long.
const (
	idleUpdates = 8
	idleFor     = 30 * time.Second
)

type Entry struct {
	name string
	// msg is the resource itself, for the state-of-the-world cache; nil
	// for a resource the server keeps as encoding only (encoded.Resource),
	// decoded from bytes when a state-of-the-world watch needs it.
	msg     types.Resource
	bytes   []byte // deterministic encoding
	version string // HashResource(bytes), as go-control-plane's delta versions
	// lazy, when set, is the resource encoded only when first needed
	// (encoded.NewLazy: on-demand virtual hosts): bytes and version are
	// empty until materialise fills them in, under the cache's lock,
	// when a stream is to be sent the entry (an alias resolving to it,
	// residency, a stream holding its name) or its version is asked for.
	lazy *encoded.Resource
}

type logEntry struct {
	seq  uint64
	name string
}

var _ cachev3.Cache = (*Delta)(nil)

// NewDelta returns an empty cache of typeURL resources whose change
// log holds logSize entries (ChangeLogSize in production).
func NewDelta(typeURL string, logSize int) *Delta {
	return &Delta{
		typeURL: typeURL,
		res:     map[string]*Entry{},
		logSize: logSize,
		oldest:  1,
		watches: map[uint64]*deltaWatch{},
		subs:    map[chan cachev3.DeltaResponse]*subState{},
		idle:    map[chan cachev3.DeltaResponse]idleSince{},
		now:     time.Now,
	}
}

// Update sets and deletes resources; versions are the caller's hashes of
// the deterministic encodings in encoded. A nil resource in upd is kept as
// its encoding only.
// Responses to parked watches are sent after the lock is released.
func (c *Delta) Update(upd map[string]types.Resource, encoded map[string][]byte, versions map[string]string, del []string) error {
	return c.UpdateLazy(upd, encoded, versions, nil, del)
}

// UpdateLazy is Update where the names in lazy (a subset of upd's, with
// no encoding or version) are encoded only when first needed (see
// Entry.lazy).
func (c *Delta) UpdateLazy(upd map[string]types.Resource, encoded map[string][]byte, versions map[string]string,
	lazy map[string]*encoded.Resource, del []string) error {
	fired, err := c.apply(upd, encoded, versions, lazy, del)
	for _, f := range fired {
		f.w.send(f.resp)
	}
	return err
}

// firedWatch is a parked watch answered by an update, to send once the
// cache's lock is released.
type firedWatch struct {
	w    *deltaWatch
	resp *deltaResponse
}

// apply is update under c.mu: it changes the resources and returns the
// parked watches answered.
func (c *Delta) apply(upd map[string]types.Resource, enc map[string][]byte, versions map[string]string,
	lazy map[string]*encoded.Resource, del []string) ([]firedWatch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sotw != nil {
		if len(lazy) > 0 { // the state-of-the-world cache needs every encoding
			enc = maps.Clone(enc)
			for name, l := range lazy {
				b, _, err := l.Get()
				if err != nil {
					return nil, err
				}
				enc[name] = b
			}
		}
		msgs, err := c.messages(upd, enc)
		if err != nil {
			return nil, err
		}
		if err := c.sotw.UpdateResources(msgs, del); err != nil {
			return nil, err
		}
	}
	c.seq++
	if len(c.idle) > 0 {
		c.forgetIdle()
	}
	changed := make(map[string]bool, len(upd)+len(del))
	for name := range upd {
		old := c.res[name]
		e := &Entry{name: name, msg: upd[name], bytes: enc[name], version: versions[name], lazy: lazy[name]}
		if old != nil && old.version != "" {
			// old may be held: the stream holding it is sent e, and the
			// server waits for its ACK (EncodedVersionsOf).
			c.materialise(e)
		}
		c.res[name] = e
		c.record(name)
		changed[name] = true
		if c.demand != nil {
			c.demand.Set(name, old.encoding(), e.encoding())
		}
	}
	for _, name := range del {
		old := c.res[name]
		delete(c.res, name)
		c.record(name)
		changed[name] = true
		if c.demand != nil && old != nil {
			c.demand.Delete(name, old.encoding())
		}
	}
	if c.demand != nil {
		c.reresolve() // pending pushes are answered by respond
	}
	return c.fire(changed), nil
}

// record appends a change to the ring buffer, dropping the oldest entry
// (and raising oldest) when full. Call under c.mu.
func (c *Delta) record(name string) {
	if len(c.log) < c.logSize { // still growing: nothing dropped, logHead 0
		c.log = append(c.log, logEntry{seq: c.seq, name: name})
		c.logLen++
		return
	}
	if c.logLen == len(c.log) {
		dropped := c.log[c.logHead]
		c.logHead = (c.logHead + 1) % len(c.log)
		c.logLen--
		c.oldest = dropped.seq + 1
	}
	c.log[(c.logHead+c.logLen)%len(c.log)] = logEntry{seq: c.seq, name: name}
	c.logLen++
}

// changedSince returns the names changed after seq, or ok false when the
// log no longer reaches back that far. Call under c.mu.
func (c *Delta) changedSince(seq uint64) (map[string]bool, bool) {
	if seq+1 < c.oldest {
		return nil, false
	}
	out := map[string]bool{}
	for i := c.logLen - 1; i >= 0; i-- {
		e := c.log[(c.logHead+i)%len(c.log)]
		if e.seq <= seq {
			break
		}
		out[e.name] = true
	}
	return out, true
}

// respond builds a response for w covering the names in candidates (nil:
// every subscribed or known name), or returns nil when the client is up to
// date (then w's subState is up to date with c.seq). It compares with the
// stream's own record (subState.known), which the response updates once
// sent (deltaWatch.send). Call under c.mu.
func (c *Delta) respond(w *deltaWatch, candidates map[string]bool) *deltaResponse {
	wildcard := w.sub.IsWildcard()
	subscribed := w.sub.SubscribedResources()
	known := w.state.known
	onDemand := c.demand != nil && wildcard
	var forced map[string][]string
	var unresolved []string
	if onDemand {
		forced, unresolved = w.state.pending()
	}
	wants := func(name string) bool {
		if onDemand {
			return c.demandWants(w.state, name)
		}
		if wildcard {
			return true
		}
		_, ok := subscribed[name]
		return ok
	}
	var upd []*Entry
	var removed []string
	check := func(name string) {
		if forced[name] != nil {
			return // sent below whatever the stream holds
		}
		e, exists := c.res[name]
		have, isKnown := known[name]
		switch {
		case exists && wants(name) && c.materialise(e) && (!isKnown || have != e.version):
			upd = append(upd, e)
		case !exists && isKnown:
			removed = append(removed, name)
		case onDemand && exists && isKnown && !wants(name):
			removed = append(removed, name) // no longer resident (ondemand.go)
		}
	}
	if candidates == nil {
		if wildcard {
			for name := range c.res {
				check(name)
			}
		} else {
			for name := range subscribed {
				check(name)
			}
		}
		for name := range known {
			if _, exists := c.res[name]; !exists {
				check(name)
			}
		}
	} else {
		for name := range candidates {
			check(name)
		}
	}
	for name := range forced {
		if e := c.res[name]; e != nil && c.materialise(e) {
			upd = append(upd, e)
		} else {
			delete(forced, name) // deleted since: in removed if held
		}
	}
	// The first wildcard request must be answered even when empty: Envoy
	// waits for it to finish initialising.
	firstWildcard := wildcard && w.req.GetResponseNonce() == ""
	if onDemand && firstWildcard && len(upd) == 0 && len(unresolved) == 0 {
		unresolved = []string{c.demand.Anchor()} // see Demand.Anchor
	}
	if len(upd) == 0 && len(removed) == 0 && len(unresolved) == 0 && !firstWildcard {
		w.state.seq = c.seq
		return nil
	}
	return &deltaResponse{typeURL: c.typeURL, req: w.req, resources: upd, removed: removed,
		seq: c.seq, version: strconv.FormatUint(c.seq, 10), returned: map[string]string{},
		aliases: forced, unresolved: unresolved}
}

// CreateDeltaWatch answers at once when the client lacks something, else
// parks the watch until update changes a name it follows. The answer is
// sent on ch after the cache's lock is released; the cancel function
// returned is never nil (it also marks the stream idle, see subs).
func (c *Delta) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() != c.typeURL {
		return nil, errors.New("delta cache " + c.typeURL + ": wrong type " + req.GetTypeUrl())
	}
	if sub.ReturnedResources() == nil {
		return nil, errors.New("delta cache: subscription without returned-resources map")
	}
	w, resp, err := c.watch(req, sub, ch)
	if err != nil {
		return nil, err
	}
	if resp != nil {
		w.send(resp)
	}
	return w.cancel, nil
}

// watch creates w and its immediate response, or parks w. It takes c.mu.
// It fails, ending the stream, when the stream's state was lost: the
// Envoy reconnects and says which versions it holds.
func (c *Delta) watch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (*deltaWatch, *deltaResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stream(req, sub, ch)
	if err != nil {
		return nil, nil, err
	}
	w := &deltaWatch{c: c, req: req, sub: sub, ch: ch, state: st}
	var candidates map[string]bool
	subChanged := len(req.GetResourceNamesSubscribe()) > 0 || len(req.GetResourceNamesUnsubscribe()) > 0 ||
		req.GetResponseNonce() == ""
	if c.demand != nil && sub.IsWildcard() {
		// On demand (ondemand.go): a subscription to names fetches them;
		// the rest of the stream's state is compared as after an ACK.
		c.requested(req, st)
		subChanged = len(req.GetResourceNamesUnsubscribe()) > 0 || req.GetResponseNonce() == ""
	}
	if !subChanged && st.seq > 0 {
		candidates, _ = c.changedSince(st.seq) // nil (full comparison) when too old
	}
	if resp := c.respond(w, candidates); resp != nil {
		return w, resp, nil
	}
	c.watchID++
	w.id = c.watchID
	c.watches[w.id] = w
	return w, nil, nil
}

// Fetch is not supported (REST).
func (c *Delta) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("delta cache: fetch is not supported")
}

// Version returns the entry's version: cachev3.HashResource of its
// deterministic encoding, as go-control-plane's delta versions; "" for a
// lazy entry not materialised yet (no stream was sent it).
func (e *Entry) Version() string { return e.version }

// encoding returns e's encoding, never nil for an entry (an empty
// resource encodes to no bytes), nil for no entry: what Demand.Set and
// Delete are told a name had.
func (e *Entry) encoding() []byte {
	if e == nil {
		return nil
	}
	if e.lazy != nil { // its domains only: all a Demand reads
		return e.lazy.DomainsEncoding()
	}
	if e.bytes == nil {
		return []byte{}
	}
	return e.bytes
}
