//go:build cgo

package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/module/state"
)

// newRouteCfg is the per-route configuration hook's work on a copied
// buffer: decode, find or add the revision in t, and return the handle
// Envoy keeps (routeslab.go). BenchmarkRouteConfig10k and 100k drive it
// as Envoy's start does, once per revision route.
func newRouteCfg(t *state.Table, b []byte) (uintptr, error) {
	rc, err := state.DecodeRouteConfig(b)
	if err != nil {
		return 0, err
	}
	r := t.Revision(rc.Revision)
	if r == nil {
		return 0, fmt.Errorf("route config for %s refused: the module tracks at most %d revisions", rc.Revision, state.MaxRevisions)
	}
	h := putRouteCfg(routeCfg{rev: r, cluster: rc.Cluster})
	if h == 0 {
		return 0, fmt.Errorf("route config for %s refused: the module holds at most %d route configurations", rc.Revision, routeMaxCfgs)
	}
	return h, nil
}
