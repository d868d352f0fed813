package main

import (
	"fmt"
	"time"
)

// sideThawModule names the peers scenario's activator-module side
// (bench/report judges it against the peers).
const sideThawModule = "thaw module"

// peersModule is the activator module's part of the peers scenario: a
// second `thaw local` whose Envoy loads the module (startModuleSides, the
// paths scenario's), the fleet default. Its container concurrency 0
// revision at one backend with target-burst-capacity -1 takes every
// request through the module (pinned in Envoy, no RPC), and serve, the
// scenario's serve revision, runs in it too: thaw's serve mode is measured
// on the Envoy configuration a fleet runs by default, and the module's
// Envoy carries two sides, as the static Envoy carries three.
type peersModule struct {
	ms            *moduleSides
	module, serve *peerSide
}

// startPeersModule starts it. When the module thaw cannot start or its
// serve revision is not in serve mode within 60 s, the module side comes
// back failed with the reason, serve is nil and so is ms.
func startPeersModule(e *env, maxConns int, serveRev rev) *peersModule {
	pm := &peersModule{module: &peerSide{name: sideThawModule,
		description: "thaw activator module (thaw local --activator=module, target-burst-capacity -1, container concurrency 0): Envoy → module pins the request → backend of its own revision"}}
	ms, err := startModuleSides(e, maxConns, serveRev)
	if err == nil {
		err = ms.th.waitStatus(e.ctx, 60*time.Second, "serve mode, 1 ready", func(r revStatus) bool {
			return r.Mode == "serve" && r.Ready == 1
		}, serveRev.name)
		if err != nil {
			e.stopLogged(ms.th.process)
		}
	}
	if err != nil {
		pm.module.failed = fmt.Sprintf("thaw local --activator=module did not start: %v", err)
		return pm
	}
	procs := []namedPid{{"Envoy", ms.envoy}, {"thaw", ms.th.Pid()}}
	pm.ms = ms
	pm.module.t, pm.module.procs = ms.cc0, procs
	pm.serve = &peerSide{name: "thaw serve", description: "thaw serve mode (the module thaw's Envoy, the fleet default): Envoy → backend",
		t: newTarget("serve", ms.th.httpURL, serveRev.host(), maxConns), procs: procs}
	return pm
}
