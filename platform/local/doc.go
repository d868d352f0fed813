// Package local is the embedded default platform: revisions from a YAML file,
// each backend a local process started on a free loopback port, probed for
// readiness and stopped with SIGTERM after leaving the backend set.
package local
