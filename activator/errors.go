package activator

import "errors"

// Sentinel errors returned by Acquire; test them with errors.Is. The extproc
// package maps them to HTTP answers (503 with Retry-After for the first
// four, 404 for ErrUnknownRevision).
var (
	// ErrQueueFull: the revision already holds QueueDepth requests.
	ErrQueueFull = errors.New("activator: queue full")
	// ErrHeldLimit: the activator already holds Options.MaxHeld requests
	// over all revisions: the bound that keeps held requests within
	// Envoy's open-file limit (each held HTTP/1.1 request keeps one
	// downstream connection, one file descriptor, open in Envoy).
	ErrHeldLimit = errors.New("activator: held-request limit reached (Envoy's open-file budget)")
	// ErrHoldTimeout: no backend had capacity within the revision's
	// HoldTimeout (or the caller's deadline).
	ErrHoldTimeout = errors.New("activator: hold timeout")
	// ErrShuttingDown: the activator stopped admitting requests, or its
	// shutdown deadline passed while the request was held.
	ErrShuttingDown = errors.New("activator: shutting down")
	// ErrUnknownRevision: the registry has no valid revision with that key,
	// or it was deleted while the request was held.
	ErrUnknownRevision = errors.New("activator: unknown revision")
)
