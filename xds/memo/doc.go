// Package memo is the incremental form of translate.Translate that the
// Server keeps across snapshots (Translator). It remembers each
// revision's inputs (hosts, port, mode, backends, timeouts, protocol) and
// resources, and rebuilds only what changed: a mode flip at 10,000
// revisions rebuilds one ClusterLoadAssignment, and unchanged resources
// keep their pointers, so the server's diff skips them without
// proto.Equal. EndpointChanges (and EndpointsWhileStaged during a
// make-before-break stage) is the fast path for changes that reach only
// endpoints, and, with translate.Config.IdleHoldPath, for a revision
// waking or going idle whose virtual host is its own (Transition,
// ConfirmRef: hold.go). With encode (New), clusters and virtual hosts are kept as
// encodings only (xds/encoded), shared with the delta caches.
//
// TestMemoisedTranslationMatchesTranslate replays random registry
// histories and checks after every step that what the Translator gives
// equals translate.Translate of the same snapshot.
//
// It is not safe for concurrent use: one goroutine (Server.Run) owns it.
// It does no I/O and does not serve or diff against caches. Called by the
// Server (package xds) only.
package memo
