// Package state is the activator module's shared state, free of cgo so it
// is tested (with -race) and fuzzed like any Go package: the revisions this
// Envoy serves, each with its ready backends, this Envoy's share of every
// backend's container concurrency (slots), and a bounded FIFO of requests
// held for a slot.
//
// The module (package module/activator, built -buildmode=c-shared and
// loaded into Envoy) calls Acquire on a request's headers: with nobody
// waiting it takes the less loaded of two random backends with a free slot
// by compare-and-swap, without a lock or an allocation. Otherwise the
// request is held (Hold) up to the revision's hold timeout and queue depth;
// a slot that frees (Release) or a state update from thaw (Apply) grants
// held requests in FIFO order and calls each one's Notify outside every
// lock, so the module can resume the request through Envoy's filter
// scheduler. Held and in-flight counts per revision are read by Counts and
// reported to thaw; the first request held by a revision without backends
// calls the Table's poke function (SetOnPoke) at once.
//
// The throttling semantics follow Knative Serving's activator (per-pod
// breaker of container concurrency, best of two random choices); see
// docs/activator.md for how thaw splits a backend's capacity among Envoys.
package state
