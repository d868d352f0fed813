// Package xdstest builds the revisions and snapshots that the tests and
// benchmarks of xds and its subpackages share. It is imported by tests
// only; it depends on nothing but the revision package, so every xds
// package's own tests may use it.
// It does not build Envoy resources (translate does) or start servers
// (the xds tests' fixtures do).
package xdstest
