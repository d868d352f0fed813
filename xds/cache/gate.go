package cache

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// Gate holds every watch until open is called, so no Envoy is ever
// answered from an empty or partial cache (before the platforms' initial
// sync). Watches created before open are parked and handed to the inner
// cache, in arrival order, when open runs; cancelling a parked watch
// forgets it. After open it passes calls straight through.
type Gate struct {
	inner cachev3.Cache

	mu     sync.Mutex
	opened bool
	seq    uint64
	parked map[uint64]*parkedWatch
}

type parkedWatch struct {
	seq   uint64
	open  func() (func(), error)
	inner func() // inner cancel, once opened
}

var _ cachev3.Cache = (*Gate)(nil)

// NewGate returns a closed Gate in front of inner.
func NewGate(inner cachev3.Cache) *Gate {
	return &Gate{inner: inner, parked: map[uint64]*parkedWatch{}}
}

// CreateWatch implements cachev3.ConfigWatcher (state of the world).
func (g *Gate) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	return g.park(func() (func(), error) { return g.inner.CreateWatch(req, sub, ch) })
}

// CreateDeltaWatch implements cachev3.ConfigWatcher (incremental).
func (g *Gate) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	return g.park(func() (func(), error) { return g.inner.CreateDeltaWatch(req, sub, ch) })
}

// Fetch implements cachev3.ConfigFetcher; REST fetches are not served.
func (g *Gate) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("xds: fetch is not supported")
}

func (g *Gate) park(open func() (func(), error)) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened {
		return open()
	}
	g.seq++
	w := &parkedWatch{seq: g.seq, open: open}
	g.parked[w.seq] = w
	// The server calls cancel before closing the response channel, so
	// after cancel returns no send may happen: take the lock.
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.parked, w.seq)
		if w.inner != nil {
			w.inner()
			w.inner = nil
		}
	}, nil
}

// open releases parked watches to the inner cache. Errors from the inner
// cache (a type no cache serves) are returned joined; those watches stay
// unanswered, as they would without the gate.
func (g *Gate) Open() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened {
		return nil
	}
	g.opened = true
	ws := make([]*parkedWatch, 0, len(g.parked))
	for _, w := range g.parked {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *parkedWatch) int { return cmp.Compare(a.seq, b.seq) })
	var errs []error
	for _, w := range ws {
		cancel, err := w.open()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cancel != nil {
			w.inner = cancel
		}
	}
	return errors.Join(errs...)
}

// Parked returns how many watches wait for Open.
func (g *Gate) Parked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.parked)
}
