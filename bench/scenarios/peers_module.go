package main

import (
	"fmt"
)

// sideThawModule names the peers scenario's activator-module side
// (bench/report judges it against the peers).
const sideThawModule = "thaw module"

// peersModuleSide starts the activator module's part of the peers
// scenario: a second `thaw local` whose Envoy loads the module
// (startModuleSides, the paths scenario's), whose container concurrency 0
// revision at one backend with target-burst-capacity -1 takes every
// request through the module (pinned in Envoy, no RPC). The side is
// charged that Envoy's and that thaw's CPU. When the module thaw cannot
// start, the side comes back failed with the reason and ms is nil.
func peersModuleSide(e *env, maxConns int) (*peerSide, *moduleSides) {
	sd := &peerSide{name: sideThawModule,
		description: "thaw activator module (thaw local --activator=module, target-burst-capacity -1, container concurrency 0): Envoy → module pins the request → backend of its own revision"}
	ms, err := startModuleSides(e, maxConns)
	if err != nil {
		sd.failed = fmt.Sprintf("thaw local --activator=module did not start: %v", err)
		return sd, nil
	}
	sd.t = ms.cc0
	sd.procs = []namedPid{{"Envoy", ms.envoy}, {"thaw", ms.th.Pid()}}
	return sd, ms
}
