package autoscaler

import (
	"context"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// Sample is one load observation of a revision from one source (an Envoy
// node id, or "activator"). Samples from one source in one second are
// averaged; sources are summed.
type Sample struct {
	Revision revision.Key
	// Source names who observed it: the Envoy node id, or "activator".
	Source string
	// Time is when it was observed.
	Time time.Time
	// Concurrency is the number of requests in flight at Time.
	Concurrency float64
	// Requests is the number of requests that arrived since the source's
	// previous sample (a delta, not a cumulative counter).
	Requests float64
}

// Recorder takes samples. Implementations must be safe for concurrent use and
// must not block for long: the stats sink and the activator call it on their
// hot paths.
type Recorder interface {
	Record(s Sample)
}

// Poker asks for an immediate decision for a revision, for example when a
// request arrives for a revision at zero. Poke never blocks.
type Poker interface {
	Poke(key revision.Key)
}

// ScaleTarget is what the autoscaler scales: a Kubernetes object with a
// /scale subresource, or a local process group. Platform packages implement
// it. Methods return an error wrapping ErrNotFound when the revision's target
// no longer exists.
type ScaleTarget interface {
	// GetScale returns the desired replica count the target currently has
	// (spec) and how many replicas are ready.
	GetScale(ctx context.Context, key revision.Key) (current, ready int32, err error)
	// SetScale sets the target's desired replica count.
	SetScale(ctx context.Context, key revision.Key, replicas int32) error
}

// ScaleReader reads one revision's replicas, as ScaleTarget.GetScale does
// for its key, without finding the revision again.
type ScaleReader interface {
	Scale() (current, ready int32, err error)
}

// ScaleHandles is implemented by a ScaleTarget that can resolve a revision
// once and hand out a ScaleReader for it; the Multiscaler then reads each
// revision's replicas every tick without a lookup by key (at 100,000
// revisions that lookup was a large share of a tick). ok is false when the
// target has no handle for key: GetScale is used. A handle must stay valid
// for as long as the revision exists in the target.
type ScaleHandles interface {
	ScaleHandle(key revision.Key) (r ScaleReader, ok bool)
}

// ModeConfirmer tells when proxy mode for a revision became confirmed by
// every connected Envoy (the xds layer's ACK tracking, through mode control).
// ok is false when proxy mode is not (yet) confirmed everywhere.
//
// Once it answers (since, true) for a revision, the answer must stay the
// same until the revision's registry entry changes (control.Controller
// keeps a confirmation while the revision stays in proxy mode): the
// Multiscaler keeps a positive answer and asks again only after its sync
// saw the revision change (at 100,000 revisions the question, two lookups
// by key, was ~40% of a tick).
type ModeConfirmer interface {
	ProxyConfirmedSince(key revision.Key) (since time.Time, ok bool)
}
