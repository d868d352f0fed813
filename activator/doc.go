// Package activator holds requests for revisions in proxy mode until a
// backend has capacity, then picks the backend. Per revision a throttler
// keeps pod trackers with in-flight counts bounded by container concurrency
// and a queue bounded by queue depth; the first held request of a revision at
// zero pokes the autoscaler, and held and in-flight counts are reported as
// samples every second. It knows nothing of Envoy: package extproc speaks the
// protocol.
package activator
