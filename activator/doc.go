// Package activator holds requests for revisions in proxy mode until a
// backend has capacity, then picks the backend. It knows nothing of Envoy:
// package extproc speaks the protocol.
//
// Per revision a throttler keeps pod trackers with in-flight counts bounded
// by container concurrency (0 = unlimited) and a FIFO queue bounded by queue
// depth. Acquire takes the least-loaded backend with a free slot (round
// robin on ties) without any lock when nobody waits; otherwise the request
// is held under the revision's hold timeout and woken by the close of its
// own channel when a slot is handed to it. The first held request of a
// revision without backends pokes the autoscaler at once; held and
// in-flight counts are reported as autoscaler samples every second. Run
// follows the revision registry's snapshots (spec limits, ready backends,
// optional active probe of new backends) without disturbing requests in
// flight. Shutdown stops admission and drains held requests. A revision
// whose platform reported a failed wake-up (revision.WakeFailure) and that
// has no backend answers its held and new requests at once with
// ErrWakeFailed until the platform's next attempt (wakefailure.go).
//
// The behaviour follows Knative Serving's activator (throttler, breaker,
// pod trackers); see docs/activator.md for the differences and the
// completion signal that ends a request's slot.
package activator
