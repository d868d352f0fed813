// Package wake is a revision's wake policy: what a request for a revision at
// zero gets instead of waking it, and how the cold start looks to clients.
//
// A Policy is compiled once from a Config (the same shape in the local YAML
// file, the Revision CRD and the wake.thaw.dev/policy annotation) and is
// immutable afterwards, so request paths read it without locks. It holds:
//
//   - Rules: requests matched by path, method, header and User-Agent
//     regular expressions that must never wake a revision at zero (load
//     balancer probes, uptime monitors, crawlers). Each gets a static
//     response or 503 + Retry-After.
//   - A waiting page: a browser navigation (GET or HEAD accepting
//     text/html, no upgrade, not gRPC) to a revision at zero gets an HTML
//     page at once that refreshes itself, while the revision wakes.
//   - The cold-start header: a held request's response says how long it
//     was held, in milliseconds.
//   - Warm windows: cron schedules with a duration and a time zone inside
//     which the revision keeps a minimum scale.
//
// The package is pure: no I/O, time passed in. Both request holders (the
// ext_proc activator and the in-Envoy module) call Evaluate only for
// revisions at zero, after the request was found to need holding: nothing
// here runs on the warm path.
package wake
