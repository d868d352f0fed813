package xdstest

import (
	"fmt"

	"github.com/thaw-dev/thaw/revision"
)

// Rev returns a valid revision for tests: port 8000, Generation 1.
func Rev(ns, name string, mode revision.Mode, hosts []string, backends ...revision.Backend) *revision.Revision {
	spec := revision.DefaultSpec()
	spec.Hosts = hosts
	spec.Port = 8000
	return &revision.Revision{Key: revision.Key{Namespace: ns, Name: name}, Spec: spec, Mode: mode,
		Backends: backends, DesiredScale: -1, Generation: 1}
}

// SnapshotOf returns a synced snapshot (Version 1) of revs.
func SnapshotOf(revs ...*revision.Revision) *revision.Snapshot {
	return &revision.Snapshot{Version: 1, Synced: true, Revisions: revision.NewRevisionMap(revs...), Invalid: map[revision.Key]error{}}
}

// Ready returns a ready backend addr:port.
func Ready(addr string, port int32) revision.Backend {
	return revision.Backend{Address: addr, Port: port, Ready: true}
}

// BenchSnapshot returns n revisions, half in serve mode with two ready
// backends, half in proxy mode.
func BenchSnapshot(n int) *revision.Snapshot {
	revs := make([]*revision.Revision, 0, n)
	for i := range n {
		mode := revision.ModeProxy
		var bs []revision.Backend
		if i%2 == 0 {
			mode = revision.ModeServe
			bs = []revision.Backend{Ready(fmt.Sprintf("10.%d.%d.1", i/256%256, i%256), 8080), Ready(fmt.Sprintf("10.%d.%d.2", i/256%256, i%256), 8080)}
		}
		revs = append(revs, Rev(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("app-%d", i), mode,
			[]string{fmt.Sprintf("app-%d.ns-%d.example.com", i, i%50)}, bs...))
	}
	return SnapshotOf(revs...)
}

// LoadRegistry puts snap's revisions (spec, backends, mode) into reg and
// marks it synced.
func LoadRegistry(reg *revision.Registry, snap *revision.Snapshot) {
	for _, r := range snap.Sorted() {
		reg.Upsert(r.Key, r.Spec)
		reg.SetBackends(r.Key, r.Backends)
		reg.SetMode(r.Key, r.Mode)
	}
	reg.SetSynced()
}

// BenchRegistry returns a synced registry (holdoff 0) holding the
// revisions of BenchSnapshot(n), so that benchmarks get the snapshots
// production gets (shared maps, the log behind Snapshot.Changes).
func BenchRegistry(n int) *revision.Registry {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	LoadRegistry(reg, BenchSnapshot(n))
	return reg
}
